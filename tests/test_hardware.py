"""The allocator setting the torch engine makes to train and to translate (hardware.keep_freed_memory)."""
import json
import os
import platform
import subprocess
import sys

import pytest

# A Transformer's self-attention cache during search: every step allocates a block a little larger
# than the last, copies into it, and frees the old one. Prints (set?, pages faulted, pages written).
GROWING_CACHE = """
import json, resource, sys
import torch
from attnseq.hardware import keep_freed_memory
done = keep_freed_memory() if sys.argv[1] == "set" else False
def steps(n):
    cache = torch.zeros(0)
    for t in range(1, n + 1):
        grown = torch.empty(t * (256 << 10))  # t MB of float32
        grown[: cache.numel()] = cache
        grown[cache.numel():] = t
        cache = grown
    return sum(range(1, n + 1)) * (1 << 20) // resource.getpagesize()
steps(24)  # the heap grows to its peak once
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
pages = sum(steps(24) for _ in range(3))
print(json.dumps([done, resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before, pages]))
"""


def run_growing_cache(setting: str, env=None):
    out = subprocess.run([sys.executable, "-c", GROWING_CACHE, setting], capture_output=True, text=True,
                         check=True, env=env)
    return json.loads(out.stdout)


@pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="mallopt is glibc's")
def test_kept_memory_is_reused_instead_of_faulted_in_again():
    done, faults, pages = run_growing_cache("set")
    assert done and faults < 0.05 * pages, (faults, pages)  # measured: 0 of 230,400
    done, faults, pages = run_growing_cache("default")  # the premise: glibc's default faults blocks in again
    assert not done and faults > 0.15 * pages, (faults, pages)  # measured: 48,313


@pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="mallopt is glibc's")
def test_thresholds_the_environment_sets_are_left_to_rule():
    env = dict(os.environ, MALLOC_MMAP_THRESHOLD_=str(128 << 10))
    done, faults, pages = run_growing_cache("set", env)  # every block of 128 KB or more mapped afresh
    assert not done and faults > 0.5 * pages, (faults, pages)
