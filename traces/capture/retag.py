#!/usr/bin/python3
"""Replaces the description stored in a .tmt trace's header, keeping every
record, chunk and footer field as they are (chunk offsets in the footer's
index move by the header's change in length; header, footer and trailer CRCs
are recomputed). Layout: trace-format/FORMAT.md.

For correcting what a capture's --description said, without capturing again.
Usage: traces/capture/retag.py TRACE.tmt "new description"
Check the result with `tracemark info TRACE.tmt` (which verifies the file).
"""
import struct
import sys


def _crc32c_table():
    table = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        table.append(c)
    return table


TABLE = _crc32c_table()


def crc32c(data):
    c = 0xFFFFFFFF
    for b in data:
        c = TABLE[(c ^ b) & 0xFF] ^ (c >> 8)
    return c ^ 0xFFFFFFFF


def read_varint(buf, pos):
    b = buf[pos]
    if b < 251:
        return b, pos + 1
    size = {251: 2, 252: 4, 253: 8}.get(b)
    if size is None:
        raise ValueError("unsupported varint tag %d at %d" % (b, pos))
    return int.from_bytes(buf[pos + 1:pos + 1 + size], "little"), pos + 1 + size


def varint(v):
    if v < 251:
        return bytes([v])
    if v < 1 << 16:
        return b"\xfb" + v.to_bytes(2, "little")
    if v < 1 << 32:
        return b"\xfc" + v.to_bytes(4, "little")
    return b"\xfd" + v.to_bytes(8, "little")


def main():
    path, desc = sys.argv[1], sys.argv[2]
    data = open(path, "rb").read()
    assert data[:8] == b"TMTRACE\0", "not a .tmt file"
    hlen = struct.unpack_from("<I", data, 12)[0]
    hstart, hend = 16, 16 + hlen
    if crc32c(data[:hend]) != struct.unpack_from("<I", data, hend)[0]:
        sys.exit("retag.py: header CRC wrong; not touching a damaged file")
    header = data[hstart:hend]
    n, p = read_varint(header, 0)
    name_end = p + n
    d, p2 = read_varint(header, name_end)
    new_header = header[:name_end] + varint(len(desc.encode())) + desc.encode() + header[p2 + d:]
    delta = len(new_header) - len(header)
    block = data[:12] + struct.pack("<I", len(new_header)) + new_header
    block += struct.pack("<I", crc32c(block))
    chunks_start = hend + 4
    # trailer and footer
    foff, flen, tcrc = struct.unpack_from("<QII", data, len(data) - 24)
    assert data[-8:] == b"TMTEND\0\0"
    fblock = data[foff:foff + flen]
    assert fblock[:4] == b"TMFT"
    footer = fblock[8:8 + struct.unpack_from("<I", fblock, 4)[0]]
    count, p = read_varint(footer, 0)
    out = varint(count)
    for _ in range(count):
        off, p = read_varint(footer, p)
        fields = []
        for _ in range(4):  # stored_len, records, first_time, last_time
            v, p = read_varint(footer, p)
            fields.append(v)
        out += varint(off + delta) + b"".join(varint(v) for v in fields)
    new_footer = out + footer[p:]
    fb = b"TMFT" + struct.pack("<I", len(new_footer)) + new_footer
    fb += struct.pack("<I", crc32c(fb))
    chunks = data[chunks_start:foff]
    new_foff = len(block) + len(chunks)
    trailer12 = struct.pack("<QI", new_foff, len(fb))
    trailer = trailer12 + struct.pack("<I", crc32c(trailer12)) + b"TMTEND\0\0"
    with open(path + ".new", "wb") as fh:
        fh.write(block + chunks + fb + trailer)
    import os
    os.replace(path + ".new", path)


if __name__ == "__main__":
    main()
