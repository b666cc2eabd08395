#!/usr/bin/env python3
"""Which columns of a .tmt cost what, following trace-format/FORMAT.md.

    tmt_columns.py TRACE.tmt [LEVEL]

Walks the chunk frames after the header, decompresses each payload with the
zstd command, splits it into its seven columns and compresses each column of
each chunk on its own with `zstd -LEVEL` (default 19). Compressed alone, the
columns add up to about (not exactly) the stored size; the split shows where
the bytes go. Prints one JSON object: per column, raw and compressed bytes
per I/O, and the stored payload bytes per I/O.
"""
import json
import struct
import subprocess
import sys

COLUMNS = ["time", "kind", "offset", "length", "latency", "stream", "device"]


def varint(buf, pos):
    value = shift = 0
    while True:
        b = buf[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        if b < 0x80:
            return value, pos
        shift += 7


def zstd(data, args):
    return subprocess.run(["zstd", "-q", "-c"] + args, input=data, capture_output=True, check=True).stdout


def main():
    if len(sys.argv) not in (2, 3):
        sys.exit(__doc__)
    level = sys.argv[2] if len(sys.argv) == 3 else "19"
    data = open(sys.argv[1], "rb").read()
    if data[:8] != b"TMTRACE\0":
        sys.exit(f"{sys.argv[1]}: not a .tmt file")
    (header_len,) = struct.unpack_from("<I", data, 12)
    pos = 16 + header_len + 4
    records = stored_total = 0
    raw = dict.fromkeys(COLUMNS, 0)
    packed = dict.fromkeys(COLUMNS, 0)
    while data[pos:pos + 4] == b"TMCK":
        n, raw_len, stored_len, _first = struct.unpack_from("<IIIQ", data, pos + 4)
        payload = zstd(data[pos + 24:pos + 24 + stored_len], ["-d"])
        if len(payload) != raw_len:
            sys.exit(f"chunk at byte {pos}: payload is {len(payload)} bytes, header says {raw_len}")
        p = 0
        for _ in range(3):
            _, p = varint(payload, p)
        lens = []
        for _ in COLUMNS:
            v, p = varint(payload, p)
            lens.append(v)
        for name, length in zip(COLUMNS, lens):
            col = payload[p:p + length]
            p += length
            raw[name] += length
            if length:
                packed[name] += len(zstd(col, [f"-{level}"]))
        records += n
        stored_total += stored_len
        pos += 24 + stored_len + 4
    if not records:
        sys.exit(f"{sys.argv[1]}: no chunks found")
    print(json.dumps({
        "ios": records,
        "stored_payload_bytes_per_io": round(stored_total / records, 3),
        "file_bytes_per_io": round(len(data) / records, 3),
        "columns_raw_bytes_per_io": {k: round(v / records, 3) for k, v in raw.items()},
        f"columns_zstd{level}_alone_bytes_per_io": {k: round(v / records, 3) for k, v in packed.items()},
    }))


if __name__ == "__main__":
    main()
