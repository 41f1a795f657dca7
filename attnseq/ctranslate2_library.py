"""CTranslate2's library loaded beside torch: with its own OpenMP runtime, and with the
instruction set its kernels run best with on this processor (``CT2_FORCE_CPU_ISA``)."""

from __future__ import annotations

import os
import platform
import sys

from .errors import UserError
from .hardware import cpu_flags, cpuinfo

# what CTranslate2 takes for AVX-512 (its cpu_supports_avx512)
AVX512_FLAGS = ("avx512f", "avx512cd", "avx512vl", "avx512dq", "avx512bw")


def ctranslate2_isa() -> str | None:
    """The instruction set attnseq asks CTranslate2's own kernels to use (its
    ``CT2_FORCE_CPU_ISA``), or None for CTranslate2's choice. CTranslate2 leaves AVX-512 out of
    its automatic choice (AVX2 at most), for processors that lower their clocks to run it; an
    AMD processor with AVX-512 (Zen 4 and later) does not, and there its AVX-512 kernels (the
    softmax and top-k of each search step, layer norms, quantising activations) decode faster
    with the same outputs (the figures: docs/engines.md, *Decoding with CTranslate2*). Elsewhere
    (Intel's AVX-512; no AVX-512) CTranslate2 chooses."""
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
    speed (docs/engines.md, *Decoding with CTranslate2*). Loaded with ``RTLD_DEEPBIND`` its library finds
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
