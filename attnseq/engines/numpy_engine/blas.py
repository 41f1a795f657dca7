"""How many threads NumPy's BLAS runs with, inside a block.

The engine runs NumPy's BLAS with ``train.threads`` threads (0 -> 1), through threadpoolctl when
it is installed, else through the OpenBLAS that NumPy ships; when neither works, set
``OPENBLAS_NUM_THREADS=1`` in the environment (several OpenBLAS threads stall on a small shared
machine).
"""

from __future__ import annotations

import contextlib
import ctypes
from collections.abc import Iterator

_OPENBLAS_SETTERS = (
    "scipy_openblas_set_num_threads64_",
    "scipy_openblas_set_num_threads",
    "openblas_set_num_threads64_",
    "openblas_set_num_threads",
)


def _openblas():
    """(get, set) of the OpenBLAS NumPy was built with, or None."""
    try:
        from numpy._core import _multiarray_umath as core
    except ImportError:  # NumPy < 2
        from numpy.core import _multiarray_umath as core
    try:
        lib = ctypes.CDLL(core.__file__)
    except OSError:
        return None
    for name in _OPENBLAS_SETTERS:
        getter = getattr(lib, name.replace("_set_", "_get_"), None)
        setter = getattr(lib, name, None)
        if getter is not None and setter is not None:
            getter.restype = ctypes.c_int
            return getter, setter
    return None


@contextlib.contextmanager
def blas_threads(n: int) -> Iterator[None]:
    """NumPy's BLAS limited to ``n`` threads inside the block."""
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        threadpool_limits = None
    if threadpool_limits is not None:
        with threadpool_limits(n, user_api="blas"):
            yield
        return
    blas = _openblas()
    if blas is None:
        yield
        return
    get, set_ = blas
    before = get()
    set_(n)
    try:
        yield
    finally:
        set_(before)
