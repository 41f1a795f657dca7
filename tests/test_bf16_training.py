"""Training under bfloat16 autocast on a CPU (train.precision bf16 where it pays): the same seed,
batches and updates as float32 end at a dev loss within noise of float32's. On a CPU where bf16
would not pay the trainer is told it does (its choice is tested in test_inputs.py), so the
autocast path (the chunked bfloat16 loss included) runs on every machine."""

from __future__ import annotations

import pytest
from helpers import ROOT, write_reverse_dir

SMALL = {  # the subword preset ties its embeddings to the output layer: one width
    "recommended-char": ["model.embed_size=16", "model.hidden_size=64", "model.dropout=0"],
    "recommended-subword": ["model.embed_size=64", "model.hidden_size=64", "model.dropout=0"],
}
QUIET = ["train.batch_size=32", "train.progress=false", "train.log_every=0", "train.eval_max_sentences=100"]


@pytest.mark.slow
@pytest.mark.bf16_lstm
@pytest.mark.parametrize("preset", list(SMALL))
def test_bf16_training_on_a_cpu_ends_within_noise_of_fp32(preset, tmp_path, monkeypatch):
    from attnseq.config import load_config
    from attnseq.engines.torch_engine import trainer as loop

    monkeypatch.setattr(loop, "bf16_pays", lambda device_type: (True, ""))
    data = write_reverse_dir(tmp_path / "data")
    extra = ["data.tokenizer={name: sentencepiece, vocab_size: 40, joint: true}"] if "subword" in preset else []
    losses = {}
    for precision in ("fp32", "bf16"):
        trainer = loop.Trainer(
            load_config(
                ROOT / "configs" / f"{preset}.yaml",
                [
                    f"data.dir={data}",
                    *SMALL[preset],
                    *QUIET,
                    *extra,
                    f"train.precision={precision}",
                    "train.max_steps=120",
                    "train.eval_every=120",
                    "train.seed=3",
                ],
            ),
            tmp_path / precision,
        )
        assert trainer.bf16 is (precision == "bf16")
        losses[precision] = trainer.fit()["dev_loss"]
    assert losses["fp32"] < 2.0, losses  # it learned: an untrained model's loss is about log V, V >= 40 here
    assert abs(losses["bf16"] - losses["fp32"]) <= 0.15 * losses["fp32"], losses
