"""How the C library's allocator treats the large blocks a decoding or training step frees and
allocates again (glibc's mallopt), set once by the torch engine."""

from __future__ import annotations

import ctypes
import functools
import os
import platform

# glibc's mallopt parameters (malloc.h)
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3
MMAP_BELOW = 64 << 20  # blocks smaller than this come from the heap, not from their own mapping
KEEP_FREE = 128 << 20  # freed memory kept at the top of the heap before any is returned


@functools.lru_cache(maxsize=1)
def keep_freed_memory() -> bool:
    """Has glibc's malloc serve blocks under 64 MB from its heap and keep up to 128 MB of freed
    memory, instead of mapping each large block afresh and returning it when freed. A decoding or
    training step frees and allocates again tensors of megabytes (beam search's (B * k, V)
    log-probabilities, a Transformer's cache): by default each one is faulted in again page by
    page (what this gains: docs/benchmarks.md, ``make bench``). True when set; False
    where the C library is not glibc or the environment already sets either threshold
    (``MALLOC_MMAP_THRESHOLD_``, ``MALLOC_TRIM_THRESHOLD_``), which is then left to rule."""
    if platform.libc_ver()[0] != "glibc" or {"MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_"} & set(os.environ):
        return False
    try:
        libc = ctypes.CDLL(None)  # this process's symbols, glibc's among them (no ldconfig run to find it)
        return bool(libc.mallopt(_M_MMAP_THRESHOLD, MMAP_BELOW)) and bool(libc.mallopt(_M_TRIM_THRESHOLD, KEEP_FREE))
    except (OSError, AttributeError):
        return False
