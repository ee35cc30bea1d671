"""Copies of index inputs with every element far out of range.

  make_huge_indices.py IN.npy OUT.npy

Each element of IN becomes +/- (the dtype's largest value, at most 2**40),
alternating, so a read at such an index without a check or a clamp would
be far outside any buffer (a segfault, not a near miss)."""
import sys

import numpy as np

a = np.load(sys.argv[1])
big = min(int(np.iinfo(a.dtype).max), 1 << 40)
signs = np.where(np.arange(a.size) % 2 == 0, 1, -1).reshape(a.shape)
low = int(np.iinfo(a.dtype).min)
np.save(sys.argv[2], np.maximum(signs * big, low).astype(a.dtype))
