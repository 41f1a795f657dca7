"""How many threads attnseq runs, and the OpenMP settings of the environment that would hang or
end the process before any setting of attnseq's is read (checked by the command line before
anything imports torch)."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping

from .errors import UserError
from .hardware import usable_cpus
from .utils import whole_number

# threads a setting may ask for (train.threads, reproduce --threads, OMP_NUM_THREADS): far above any core count
# here, below where creating them fails (16,384 torch threads ended the process, "libgomp: Thread creation
# failed"; train.threads=100000 crashed it, OMP_NUM_THREADS=100000 aborted a CTranslate2 search)
MAX_THREADS = 1024

# GNU OpenMP's GOMP_CPU_AFFINITY: CPU numbers, ranges (4-7) and ranges with a stride (0-15:2), separated by
# spaces or commas
AFFINITY = re.compile(
    r"[\s,]*\d+(?:\s*-\s*\d+(?:\s*:\s*\d+)?)?(?:[\s,]+\d+(?:\s*-\s*\d+(?:\s*:\s*\d+)?)?)*[\s,]*", re.ASCII
)  # (a digit of another script, "０", is one of the values that hang)


def check_openmp_environment(environ: Mapping[str, str] = os.environ) -> None:
    """A UserError naming the variable when the OpenMP runtime torch loads would hang or end the
    process on it as torch is imported or first runs in parallel, where no error can be caught:
    ``GOMP_CPU_AFFINITY`` outside its grammar (some such values, "abc", "1:2", "1.5", make that
    import loop for ever: any program's ``import torch``), or ``OMP_NUM_THREADS`` asking for more
    than MAX_THREADS threads (libgomp ends the process)."""
    value = environ.get("GOMP_CPU_AFFINITY")
    if value is not None and not AFFINITY.fullmatch(value):
        raise UserError(
            f"GOMP_CPU_AFFINITY={value!r}: not a list of CPUs (such as 0 2 4-7 or 0-15:2, spaces or "
            "commas between them), and torch's OpenMP runtime can hang reading it; correct or unset it"
        )
    threads = [whole_number(part) for part in environ.get("OMP_NUM_THREADS", "").split(",")]  # (nested: "4,2")
    if any(n is not None and n > MAX_THREADS for n in threads):
        raise UserError(
            f"OMP_NUM_THREADS={environ['OMP_NUM_THREADS']!r}: more threads than attnseq runs (at most "
            f"{MAX_THREADS:,}; creating many more fails and ends the process); give at most the cores, "
            f"{usable_cpus()} here"
        )
