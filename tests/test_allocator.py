"""The allocator setting the torch engine makes to train and to translate (allocator.keep_freed_memory):
the mallopt calls it makes, when it makes none, and the heap it leaves a process with."""

import json
import os
import platform
import subprocess
import sys

import pytest
from helpers import ROOT

from attnseq import allocator

# glibc's malloc.h: mallopt(M_MMAP_THRESHOLD, bytes), mallopt(M_TRIM_THRESHOLD, bytes)
M_MMAP_THRESHOLD, M_TRIM_THRESHOLD = -3, -1
MB = 1 << 20
THRESHOLDS = ("MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_")


class StandInLibc:
    """The process's C library as ``ctypes.CDLL(None)`` returns it, reduced to ``mallopt``, which
    records its calls and answers ``answer`` (glibc: 1 when the value is taken, 0 when not)."""

    def __init__(self, answer: int = 1):
        self.answer, self.calls = answer, []

    def mallopt(self, param: int, value: int) -> int:
        self.calls.append((param, value))
        return self.answer


def keep_freed_memory(monkeypatch, libc, libc_name: str = "glibc") -> bool:
    """What keep_freed_memory answers (not its cached answer) in a process whose C library is
    ``libc_name`` and whose symbols ``libc`` stands in for: an object, or an exception to raise."""

    def cdll(name):
        assert name is None  # the process's own symbols, no library looked up by name
        if isinstance(libc, Exception):
            raise libc
        return libc

    monkeypatch.setattr(allocator.platform, "libc_ver", lambda *args, **kwargs: (libc_name, "2.36"))
    monkeypatch.setattr(allocator.ctypes, "CDLL", cdll)
    for name in THRESHOLDS:
        monkeypatch.delenv(name, raising=False)
    return allocator.keep_freed_memory.__wrapped__()


def test_it_sets_both_thresholds_as_documented(monkeypatch):
    """Blocks under 64 MB from the heap; up to 128 MB of freed memory kept before any is returned."""
    libc = StandInLibc()
    assert keep_freed_memory(monkeypatch, libc) is True
    assert libc.calls == [(M_MMAP_THRESHOLD, 64 * MB), (M_TRIM_THRESHOLD, 128 * MB)]


def test_a_threshold_glibc_refuses_is_said(monkeypatch):
    """mallopt answering 0 (a value out of range) is not reported as set."""
    assert keep_freed_memory(monkeypatch, StandInLibc(answer=0)) is False


@pytest.mark.parametrize("libc", [object(), OSError("no symbols")], ids=["without mallopt", "no C library"])
def test_without_mallopt_it_does_nothing_and_raises_nothing(monkeypatch, libc):
    assert keep_freed_memory(monkeypatch, libc) is False


def test_another_c_library_is_left_alone(monkeypatch):
    libc = StandInLibc()
    assert keep_freed_memory(monkeypatch, libc, libc_name="") is False  # musl, or not Linux
    assert libc.calls == []


@pytest.mark.parametrize("variable", THRESHOLDS)
def test_thresholds_the_environment_sets_are_left_to_rule(monkeypatch, variable):
    libc = StandInLibc()
    monkeypatch.setattr(allocator.platform, "libc_ver", lambda *args, **kwargs: ("glibc", "2.36"))
    monkeypatch.setattr(allocator.ctypes, "CDLL", lambda name: libc)
    monkeypatch.setenv(variable, str(128 << 10))
    assert allocator.keep_freed_memory.__wrapped__() is False
    assert libc.calls == []


# In a fresh process: allocate with malloc and read glibc's own account (mallinfo2) of the bytes
# in blocks mapped on their own (hblkhd) and of the heap (arena). Prints
# [set?, 63 MB mapped?, 65 MB mapped?, 63 MB kept in the heap once freed?].
HEAP = """
import ctypes, json
from attnseq.allocator import keep_freed_memory

class Mallinfo2(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks",
                                                     "fsmblks", "uordblks", "fordblks", "keepcost")]

libc = ctypes.CDLL(None)
libc.mallinfo2.restype = Mallinfo2
libc.malloc.restype, libc.malloc.argtypes, libc.free.argtypes = ctypes.c_void_p, [ctypes.c_size_t], [ctypes.c_void_p]
done = keep_freed_memory()

def mapped(size):
    before = libc.mallinfo2().hblkhd
    block = libc.malloc(size)
    grown = libc.mallinfo2().hblkhd - before
    libc.free(block)
    return grown >= size

MB = 1 << 20
above, below = mapped(65 * MB), mapped(63 * MB)
print(json.dumps([done, below, above, libc.mallinfo2().arena >= 63 * MB]))
"""


@pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="mallopt is glibc's")
def test_a_process_that_sets_it_serves_blocks_under_64_mb_from_a_heap_it_keeps():
    env = {k: v for k, v in os.environ.items() if k not in THRESHOLDS}
    result = subprocess.run([sys.executable, "-c", HEAP], capture_output=True, text=True, env=env, cwd=ROOT, timeout=60)
    assert result.returncode == 0, result.stderr
    done, below_mapped, above_mapped, kept = json.loads(result.stdout)
    assert done is True
    assert not below_mapped and above_mapped  # the threshold: 64 MB
    assert kept  # freed, the 63 MB stay in the heap for the next step
