"""The compiled kernels' small constants, apart from `jit` so that naming
them does not import numba (0.12 s a process: the driver and every Python
worker, most of which never run a compiled loop)."""

import numpy as np

LIMIT = np.iinfo(np.int64).max
# op codes of a predecessor sum (`index.Fenwick`): none (every earlier event), =, < <= > >=
NONE, EQ, LT, LE, GT, GE = 0, 1, 2, 3, 4, 5
