"""What this machine's processor can do, read at run time (the CPU model changes from day to
day here): its name, its instruction-set flags, whether bfloat16 runs in hardware and whether
it is faster than float32 here, whether it has int8 dot-product instructions; how the C
library's allocator should treat the large tensors a step frees and allocates again; and
CTranslate2 loaded beside torch with its own OpenMP runtime and the instruction set its kernels
run best with here."""

from __future__ import annotations

import ctypes
import functools
import os
import platform
import re
import sys
import time
from collections.abc import Mapping

from .errors import UserError
from .utils import whole_number


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
    page (what this gains: the README's Benchmarks, ``make bench``). True when set; False
    where the C library is not glibc or the environment already sets either threshold
    (``MALLOC_MMAP_THRESHOLD_``, ``MALLOC_TRIM_THRESHOLD_``), which is then left to rule."""
    if platform.libc_ver()[0] != "glibc" or {"MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_"} & set(os.environ):
        return False
    try:
        libc = ctypes.CDLL(None)  # this process's symbols, glibc's among them (no ldconfig run to find it)
        return bool(libc.mallopt(_M_MMAP_THRESHOLD, MMAP_BELOW)) and bool(libc.mallopt(_M_TRIM_THRESHOLD, KEEP_FREE))
    except (OSError, AttributeError):
        return False


# GNU OpenMP's GOMP_CPU_AFFINITY: CPU numbers, ranges (4-7) and ranges with a stride (0-15:2), separated by
# spaces or commas
AFFINITY = re.compile(
    r"[\s,]*\d+(?:\s*-\s*\d+(?:\s*:\s*\d+)?)?(?:[\s,]+\d+(?:\s*-\s*\d+(?:\s*:\s*\d+)?)?)*[\s,]*", re.ASCII
)  # (a digit of another script, "０", is one of the values that hang)


# threads a setting may ask for (train.threads, reproduce --threads, OMP_NUM_THREADS): far above any core count
# here, below where creating them fails (16,384 torch threads ended the process, "libgomp: Thread creation
# failed"; train.threads=100000 crashed it, OMP_NUM_THREADS=100000 aborted a CTranslate2 search)
MAX_THREADS = 1024


def check_openmp_environment(environ: Mapping[str, str] = os.environ) -> None:
    """A UserError naming the variable when the OpenMP runtime torch loads would hang or end the
    process on it as torch is imported or first runs in parallel: ``GOMP_CPU_AFFINITY`` outside
    its grammar (some such values, "abc", "1:2", "1.5", make that import loop for ever: any
    program's ``import torch``), or ``OMP_NUM_THREADS`` asking for more than MAX_THREADS threads."""
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


# what CTranslate2 takes for AVX-512 (its cpu_supports_avx512)
AVX512_FLAGS = ("avx512f", "avx512cd", "avx512vl", "avx512dq", "avx512bw")


def ctranslate2_isa() -> str | None:
    """The instruction set attnseq asks CTranslate2's own kernels to use (its
    ``CT2_FORCE_CPU_ISA``), or None for CTranslate2's choice. CTranslate2 leaves AVX-512 out of
    its automatic choice (AVX2 at most), for processors that lower their clocks to run it; an
    AMD processor with AVX-512 (Zen 4 and later) does not, and there its AVX-512 kernels (the
    softmax and top-k of each search step, layer norms, quantising activations) decode faster:
    on a Zen 4 EPYC, the gettext Transformer's test set at 1 thread, 4 runs each way, int8 beam 5
    +7-13%, float32 beam 5 +3-6%, int8 greedy +1-7%, float32 greedy 1-5% slower, outputs
    unchanged (README, *Decoding with CTranslate2*). Elsewhere (Intel's AVX-512, not measured
    here; no AVX-512) CTranslate2 chooses."""
    return "AVX512" if cpuinfo("vendor_id") == "AuthenticAMD" and ctranslate2_isas().get("AVX512") else None


def ctranslate2_isas() -> dict[str, bool]:
    """The values CTranslate2 takes for ``CT2_FORCE_CPU_ISA`` on this processor's architecture,
    each with whether this processor has it (CTranslate2 refuses one it lacks)."""
    if platform.machine().lower() in ("aarch64", "arm64"):
        return {"NEON": True, "GENERIC": True}
    flags = cpu_flags()
    return {
        "AVX512": all(flag in flags for flag in AVX512_FLAGS),
        "AVX2": "avx2" in flags,
        "AVX": "avx" in flags,
        "GENERIC": True,
    }


def check_ctranslate2_isa(value: str) -> None:
    """A UserError naming ``CT2_FORCE_CPU_ISA`` when ``value`` is one CTranslate2 would refuse at
    the first search (it reads the variable then): not one of its names (spelt as it spells
    them), or an instruction set this processor lacks. Empty is CTranslate2's own choice."""
    isas = ctranslate2_isas()
    if value and not isas.get(value):
        why = (
            f"this processor does not have it (it has {', '.join(name for name, has in isas.items() if has)})"
            if value in isas
            else f"CTranslate2 takes {', '.join(isas)}"
        )
        raise UserError(f"CT2_FORCE_CPU_ISA={value!r}: {why}; unset it to let attnseq choose")


def import_ctranslate2():
    """The ``ctranslate2`` module, imported so that its library calls the OpenMP runtime it ships
    with (ImportError where it is not installed).

    torch loads its own libgomp into the process's global symbols, so a plain import binds
    CTranslate2's OpenMP calls to torch's runtime. Once torch has run a parallel region that
    runtime manages torch's threads and CTranslate2's together, more than there are cores, and
    drops to the short spin it keeps for an oversubscribed machine: CTranslate2's many small
    parallel regions then wait on the kernel, and it decodes on 2 threads at about half its
    speed (README, *Decoding with CTranslate2*). Loaded with ``RTLD_DEEPBIND`` its library finds
    its own libgomp first. Not where ``LD_PRELOAD`` is set (a preloaded allocator would then be
    bypassed by CTranslate2 alone), nor where the module was already imported.

    Where the environment does not set ``CT2_FORCE_CPU_ISA``, it is set to ``ctranslate2_isa()``
    (for this process and those it starts) before CTranslate2 reads it; a value CTranslate2 would
    refuse is a UserError naming the variable (``check_ctranslate2_isa``)."""
    if "CT2_FORCE_CPU_ISA" in os.environ:
        check_ctranslate2_isa(os.environ["CT2_FORCE_CPU_ISA"])
    elif ctranslate2_isa():
        os.environ["CT2_FORCE_CPU_ISA"] = ctranslate2_isa()
    if "ctranslate2" in sys.modules:
        return sys.modules["ctranslate2"]
    import numpy  # noqa: F401  (loaded as always before the flag is set: only CTranslate2's libraries get it)

    deepbind = getattr(os, "RTLD_DEEPBIND", 0)
    flags = sys.getdlopenflags()
    if deepbind and not os.environ.get("LD_PRELOAD"):
        sys.setdlopenflags(flags | deepbind)
    try:
        import ctranslate2
    finally:
        sys.setdlopenflags(flags)
    return ctranslate2
