"""decode.precision bf16: the torch engine's products autocast to bfloat16 where they pay."""

from __future__ import annotations

import logging

import pytest
import torch

import attnseq
from attnseq import hardware


def linear_output_dtypes(translator, sources) -> set[torch.dtype]:
    """The dtypes the model's linear layers produce while ``translator`` translates ``sources``."""
    seen: set[torch.dtype] = set()
    hooks = [
        m.register_forward_hook(lambda module, args, out: seen.add(out.dtype))
        for m in translator.model.modules()
        if isinstance(m, torch.nn.Linear)
    ]
    try:
        translator.translate(sources)
    finally:
        for hook in hooks:
            hook.remove()
    return seen


@pytest.mark.bf16_lstm
def test_bf16_decodes_in_bfloat16_where_it_pays_and_answers_as_fp32_does(quick_runs, monkeypatch):
    monkeypatch.setattr(hardware, "bf16_pays", lambda device_type="cpu": (True, ""))
    run = quick_runs["rnn"]
    sources = [line.split("\t")[0] for line in (quick_runs.data / "test.tsv").read_text().splitlines()]
    fp32, bf16 = attnseq.load(run), attnseq.load(run, precision="bf16")
    assert (fp32.precision, bf16.precision) == ("fp32", "bf16")
    assert attnseq.load(run, overrides=["decode.precision=bf16"]).precision == "bf16"
    assert linear_output_dtypes(fp32, sources[:4]) == {torch.float32}
    assert torch.bfloat16 in linear_output_dtypes(bf16, sources[:4])
    a, b = fp32.translate(sources), bf16.translate(sources)
    assert sum(x == y for x, y in zip(a, b)) >= 0.9 * len(a)
    for t in bf16.search(sources[:3], n_best=2, beam_size=2):
        assert all(torch.isfinite(torch.tensor(t.scores))) and t.scores == sorted(t.scores, reverse=True)


def test_bf16_where_it_does_not_pay_warns_once_and_decodes_in_fp32(quick_runs, monkeypatch, caplog):
    monkeypatch.setattr(hardware, "bf16_pays", lambda device_type="cpu": (False, "has no bfloat16 in hardware"))
    with caplog.at_level(logging.WARNING, logger="attnseq"):
        translator = attnseq.load(quick_runs["rnn"], precision="bf16")
        translator.translate(["abc", "cab"])
    warnings = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(warnings) == 1 and "decode.precision bf16" in warnings[0] and "decoding in fp32" in warnings[0]
    assert translator.precision == "fp32"
