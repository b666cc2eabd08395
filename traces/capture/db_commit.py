"""The db-commit task: a ledger written into a new SQLite database in many
small transactions, as an accounting or messaging application does, then
indexed. SQLite's defaults (rollback journal, synchronous=FULL) make each
commit wait for its journal and its pages to reach the disk.

Usage: python3 db_commit.py DATABASE
"""
import random
import sqlite3
import sys

TRANSACTIONS = 400
ROWS_PER_TRANSACTION = 500


def main(path):
    rng = random.Random(451)
    db = sqlite3.connect(path)
    db.execute(
        "CREATE TABLE ledger (id INTEGER PRIMARY KEY, account INTEGER,"
        " day INTEGER, amount REAL, memo TEXT)"
    )
    db.commit()
    for t in range(TRANSACTIONS):
        rows = [
            (rng.randrange(5000), t, rng.uniform(-500, 500), "x" * rng.randrange(20, 200))
            for _ in range(ROWS_PER_TRANSACTION)
        ]
        db.executemany("INSERT INTO ledger (account, day, amount, memo) VALUES (?, ?, ?, ?)", rows)
        db.commit()
    db.execute("CREATE INDEX ledger_account ON ledger (account, day)")
    db.commit()
    (count,) = db.execute("SELECT count(*) FROM ledger").fetchone()
    db.close()
    if count != TRANSACTIONS * ROWS_PER_TRANSACTION:
        sys.exit(f"db_commit: {count} rows, expected {TRANSACTIONS * ROWS_PER_TRANSACTION}")


if __name__ == "__main__":
    main(sys.argv[1])
