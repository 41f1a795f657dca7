"""The CPU kernels a process can be held to: the instruction sets torch (ATen), MKL, oneDNN and
CTranslate2 choose from, set through their environment variables before they load.

    python bench/isa.py second        # the variables of the second pass (.ci/run): VAR=VALUE ...
    python bench/isa.py avx2          # those of one set of kernels

``native`` is what each library picks on this CPU; ``avx2`` holds them to AVX2 (a Zen 3's
arithmetic on any later CPU); ``plainest`` to their generic, SSE4 kernels. A result that holds
under all three holds on any x86 machine the project meets, whatever the CPU's own kernels are.
"""

from __future__ import annotations

import sys
from pathlib import Path

KERNELS: dict[str, dict[str, str]] = {
    "native": {},
    "avx2": {
        "ATEN_CPU_CAPABILITY": "avx2",
        "MKL_ENABLE_INSTRUCTIONS": "AVX2",
        "ONEDNN_MAX_CPU_ISA": "AVX2",
        "CT2_FORCE_CPU_ISA": "AVX2",
    },
    "plainest": {
        "ATEN_CPU_CAPABILITY": "default",
        "MKL_ENABLE_INSTRUCTIONS": "SSE4_2",
        "ONEDNN_MAX_CPU_ISA": "SSE41",
        "CT2_FORCE_CPU_ISA": "GENERIC",
    },
}


def has_avx512() -> bool:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from attnseq.hardware import cpu_flags

    return "avx512f" in cpu_flags()


def second() -> str:
    """The kernels of the second pass: AVX2 where the machine's own are AVX-512 (its next most
    common neighbour), the plainest where they are AVX2 or less."""
    return "avx2" if has_avx512() else "plainest"


def environment(name: str) -> dict[str, str]:
    """The variables that hold the libraries to the kernels ``name`` (a key of KERNELS), with
    ATTNSEQ_KERNELS naming them for the records of tests/learning.py."""
    return {**KERNELS[name], "ATTNSEQ_KERNELS": name}


def main(argv: list[str]) -> int:
    if len(argv) != 1 or argv[0] not in (*KERNELS, "second"):
        print(f"usage: python bench/isa.py {{{','.join(KERNELS)},second}}", file=sys.stderr)
        return 2
    name = second() if argv[0] == "second" else argv[0]
    print(" ".join(f"{k}={v}" for k, v in environment(name).items()))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
