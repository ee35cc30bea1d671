#!/usr/bin/env python3
"""Writes .npy files whose header dictionary is garbage (test/Runtime/npy-header.test).

  make_bad_npy.py OUTDIR

Each file holds the 96 data bytes of a float32 [2, 3, 4] array (all zeros)
after a version-1 header, so that only the header is wrong; numpy.load
refuses every one of them except ok.npy.
"""
import struct
import sys
from pathlib import Path

GOOD = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3, 4), }"
HEADERS = {
    "ok": GOOD + "\n",
    # Text after the closing brace: printable, binary, NUL padding.
    "trailing": GOOD + "GARBAGE\n",
    "binary": GOOD.encode() + b"\x00\xff\x01\n",
    "nulpad": GOOD.encode() + b"\n\x00\x00",
    # A required key missing, or given twice.
    "nofortran": "{'descr': '<f4', 'shape': (2, 3, 4)}\n",
    "twice": "{'descr': '<i4', 'descr': '<f4', 'fortran_order': False, 'shape': (2, 3, 4), }\n",
    # (24) is the integer 24, not a tuple.
    "notuple": "{'descr': '<f4', 'fortran_order': False, 'shape': (24), }\n",
    # A key with a NUL byte is shown escaped.
    "nulkey": "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3, 4), 'sh\x00ape': 1}\n",
}


def main():
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    data = bytes(2 * 3 * 4 * 4)
    for name, h in HEADERS.items():
        h = h.encode("latin-1") if isinstance(h, str) else h
        blob = b"\x93NUMPY\x01\x00" + struct.pack("<H", len(h)) + h + data
        (out / (name + ".npy")).write_bytes(blob)


if __name__ == "__main__":
    main()
