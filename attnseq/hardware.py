"""What this machine's processor can do, read at run time (the CPU model changes from day to
day here): its name, its instruction-set flags and the kernels' caps on them, the CPUs this
process may use, whether bfloat16 runs in hardware and whether it is faster than float32 here,
whether it has int8 dot-product instructions."""

from __future__ import annotations

import functools
import os
import platform
import time


@functools.cache
def cpuinfo(field: str) -> str | None:
    """The first value of ``field`` ("flags", "model name", "vendor_id") in /proc/cpuinfo, None
    where there is none."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            for line in fh:
                name, _, value = line.partition(":")
                if name.strip() == field:
                    return value.strip()
    except OSError:
        pass
    return None


def cpu_flags() -> frozenset[str]:
    """The CPU's feature flags from /proc/cpuinfo (empty where there is none)."""
    return frozenset((cpuinfo("flags") or "").split())


# The variables that hold torch's libraries (and MKL beneath CTranslate2) to an instruction set
# below the CPU's own, to compute as an older CPU does (bench/isa.py), and the values that hold
# them to AVX2 or less: there none of them runs AVX-512, its VNNI and BF16, AVX-VNNI or AMX.
KERNEL_CAPS = ("MKL_ENABLE_INSTRUCTIONS", "ONEDNN_MAX_CPU_ISA", "ATEN_CPU_CAPABILITY")
AVX2_OR_LESS = {"AVX2", "AVX", "SSE4_2", "SSE41", "DEFAULT"}
PAST_AVX2 = ("avx512", "amx", "avx_vnni")


def kernel_cap() -> str | None:
    """``VARIABLE=value`` of the first of KERNEL_CAPS that holds the kernels to AVX2 or less, or
    None where the kernels may use all the CPU has."""
    for name in KERNEL_CAPS:
        if os.environ.get(name, "").strip().upper() in AVX2_OR_LESS:
            return f"{name}={os.environ[name]}"
    return None


def kernel_flags() -> frozenset[str]:
    """The CPU's flags that its kernels may use: all of cpu_flags(), less the instructions past
    AVX2 where kernel_cap() holds them back."""
    flags = cpu_flags()
    return flags if kernel_cap() is None else frozenset(f for f in flags if not f.startswith(PAST_AVX2))


def where_held() -> str:
    """ " (its kernels held to AVX2 by VARIABLE=value)" where they are, else nothing: the end of
    a reason that names the CPU."""
    return f" (its kernels held to AVX2 by {cap})" if (cap := kernel_cap()) else ""


def usable_cpus() -> int:
    """The CPUs this process may run on (its affinity; the machine's count where the system
    does not say)."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def past_cpus(count: int, name: str) -> str | None:
    """The message when ``name`` asks for ``count`` processes, more than the CPUs this process may
    use (they would gain nothing), else None."""
    cpus = usable_cpus()
    return (
        f"{name}: {count} processes on the {cpus} CPUs this process may use gain nothing; give at most {cpus}"
        if count > cpus
        else None
    )


def cpu_model() -> str:
    """The CPU's model name (e.g. "AMD EPYC"), or what the platform reports."""
    return cpuinfo("model name") or platform.processor() or platform.machine()


def bf16_in_hardware(device_type: str = "cpu") -> bool:
    """True when bfloat16 matrix products run in hardware on ``device_type``: a GPU that
    supports it, or a CPU with AVX-512 BF16 or AMX (elsewhere torch emulates them, far slower
    than float32)."""
    if device_type == "cuda":
        import torch

        if not torch.cuda.is_available():
            return False
        try:  # torch >= 2.3 counts the bfloat16 a GPU before Ampere emulates unless told not to
            return torch.cuda.is_bf16_supported(including_emulation=False)
        except TypeError:  # an older torch counts hardware alone
            return torch.cuda.is_bf16_supported()
    return bool({"avx512_bf16", "amx_bf16"} & kernel_flags())


@functools.lru_cache(maxsize=1)
def cpu_matmul_rates(size: int = 512, repeats: int = 5) -> tuple[float, float]:
    """(float32, bfloat16) GFLOP/s of a size x size product on this CPU, measured now (best of
    ``repeats``). Call it only where bfloat16 runs in hardware: emulated, it takes seconds."""
    import torch

    rates = []
    for dtype in (torch.float32, torch.bfloat16):
        g = torch.Generator().manual_seed(0)  # not the global stream: training seeds it later
        a, b = (torch.randn(size, size, generator=g).to(dtype) for _ in range(2))
        a @ b  # warm-up
        best = float("inf")
        for _ in range(repeats):
            started = time.perf_counter()
            a @ b
            best = min(best, time.perf_counter() - started)
        rates.append(2 * size**3 / best / 1e9)
    return rates[0], rates[1]


def bf16_pays(device_type: str = "cpu") -> tuple[bool, str]:
    """(whether autocasting matmuls to bfloat16 speeds training up on ``device_type``, and why
    not when it does not). A CPU needs bfloat16 in hardware, and even then its bfloat16 products
    must clearly beat float32 ones (by a quarter, past the noise of a shared machine, and worth
    the lost precision): AVX-512 BF16 without AMX runs them at about half float32's rate."""
    if not bf16_in_hardware(device_type):
        return False, "has no bfloat16 in hardware (emulated, it would be far slower)"
    if device_type == "cuda":
        return True, ""
    fp32, bf16 = cpu_matmul_rates()
    if bf16 < 1.25 * fp32:
        return False, (
            f"runs bfloat16 matrix products at {bf16:.0f} GFLOP/s and float32 ones at {fp32:.0f} "
            "(bfloat16 would not train faster)"
        )
    return True, ""


# int8 dot products in one instruction: AVX-512 VNNI, AVX-VNNI (its 256-bit form) and AMX's tiles
INT8_FLAGS = ("avx512_vnni", "avx_vnni", "amx_int8")


def int8_in_hardware() -> tuple[bool, str]:
    """(whether this CPU multiplies int8 by int8 into int32 sums in one instruction, and why not
    when it does not). int8 decoding (decode.precision int8) needs it: without VNNI or AMX the
    kernels multiply in pairs through 16-bit sums, which saturate unless activations lose a bit,
    and gain little over float32."""
    found = [flag for flag in INT8_FLAGS if flag in kernel_flags()]
    if found:
        return True, ""
    return False, f"({cpu_model()}{where_held()}) has no int8 dot-product instructions ({', '.join(INT8_FLAGS)})"
