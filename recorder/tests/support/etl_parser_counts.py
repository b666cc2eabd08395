"""Counts the DiskIo events of an uncompressed ETW log with etl-parser (an
independent pure-Python decoder), for the reader's conformance test.

Usage: python3 etl_parser_counts.py LOG.etl
Prints one line per DiskIo opcode: `OPCODE COUNT BYTES` (BYTES: the sum of
TransferSize for Read/Write, 0 otherwise).
"""
import sys
from collections import Counter

from etl.etl import EtlLogFile, ChunkParser

IO_GROUP = 1


def main(path):
    with open(path, "rb") as f:
        chunks = EtlLogFile.parse(f.read())
    counts = Counter()
    sizes = Counter()
    for chunk in chunks[1:]:
        for record in ChunkParser.parse(chunk.payload):
            # Kernel events come with system headers or perfinfo headers.
            if record.type == "SystemTraceRecord":
                header = record.value.system_header.header
            elif record.type == "PerfInfoTraceRecord":
                header = record.value.header
            else:
                continue
            if int(header.group) != IO_GROUP:
                continue
            counts[header.type] += 1
            if header.type in (10, 11):
                data = record.value.mof_data
                sizes[header.type] += int.from_bytes(data[8:12], "little")
    for opcode in sorted(counts):
        print(opcode, counts[opcode], sizes[opcode])


if __name__ == "__main__":
    main(sys.argv[1])
