"""What this machine's processor can do, read at run time (the CPU model changes from day to
day here): its name, its instruction-set flags, whether bfloat16 runs in hardware."""
from __future__ import annotations

import functools
import platform


@functools.lru_cache(maxsize=1)
def cpu_flags() -> frozenset[str]:
    """The CPU's feature flags from /proc/cpuinfo (empty where there is none)."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            for line in fh:
                if line.startswith("flags"):
                    return frozenset(line.split(":", 1)[1].split())
    except OSError:
        pass
    return frozenset()


@functools.lru_cache(maxsize=1)
def cpu_model() -> str:
    """The CPU's model name (e.g. "AMD EPYC"), or what the platform reports."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            for line in fh:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def bf16_in_hardware(device_type: str = "cpu") -> bool:
    """True when bfloat16 matrix products run in hardware on ``device_type``: a GPU that
    supports it, or a CPU with AVX-512 BF16 or AMX (elsewhere torch emulates them, ~60x slower
    than float32 on an AVX2 CPU)."""
    if device_type == "cuda":
        import torch

        return torch.cuda.is_available() and torch.cuda.is_bf16_supported()
    return bool({"avx512_bf16", "amx_bf16"} & cpu_flags())
