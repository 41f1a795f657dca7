"""What the machine's processor can do as attnseq reads it (attnseq.hardware): the kernels' caps
on its instruction sets and what they leave of int8 and bfloat16."""

import pytest

from attnseq import hardware


@pytest.mark.parametrize("name", hardware.KERNEL_CAPS)
@pytest.mark.parametrize("value", ["AVX2", "avx2", "SSE4_2", "SSE41", "default", "AVX512", "AVX512_CORE_AMX", ""])
def test_kernels_held_to_avx2_have_no_int8_dot_products_or_bfloat16(monkeypatch, name, value):
    """MKL, oneDNN or ATen held to AVX2 or less (bench/isa.py, a Zen 3's arithmetic) run none of
    AVX-512, its VNNI and BF16, or AMX, whatever /proc/cpuinfo says: int8 and bf16 are not in
    the kernels then, and the reason names the variable."""
    for other in hardware.KERNEL_CAPS:
        monkeypatch.delenv(other, raising=False)
    monkeypatch.setenv(name, value)
    monkeypatch.setattr(
        hardware,
        "cpu_flags",
        lambda: frozenset({"avx2", "fma", "avx512f", "avx512_vnni", "avx512_bf16", "amx_bf16", "amx_int8"}),
    )
    held = value.upper() in ("AVX2", "SSE4_2", "SSE41", "DEFAULT")
    assert hardware.kernel_flags() == ({"avx2", "fma"} if held else hardware.cpu_flags())
    assert hardware.bf16_in_hardware("cpu") is not held
    has, why_not = hardware.int8_in_hardware()
    assert has is not held and (f"held to AVX2 by {name}={value}" in why_not) is held
