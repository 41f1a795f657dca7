"""``engine: torch``: the models of attnseq/nn trained by attnseq/train, decoded by attnseq/decoding."""
from __future__ import annotations

from ..base import ENGINES, Engine


@ENGINES.register("torch")
class TorchEngine(Engine):
    """Every architecture and design, on a CPU or a GPU, in one process or under torchrun."""

    def check(self, config):
        from ...train.loop import check_config

        return check_config(config)

    def train(self, config, run_dir, resume=False, on_eval=None, overwrite=False):
        from ...hardware import keep_freed_memory
        from ...train.loop import Trainer

        keep_freed_memory()  # a step's large tensors reuse memory instead of faulting it in again
        trainer = Trainer(config, run_dir, resume=resume, on_eval=on_eval, overwrite=overwrite)
        summary = trainer.fit()
        return summary if trainer.is_main else None

    def load(self, run_dir, config, checkpoint="best", device="cpu"):
        import torch

        from ...data.pipeline import TextPipeline
        from ...translator.torch_model import TorchTranslator
        from ...hardware import keep_freed_memory
        from ...nn.layout import lay_out_for_decoding
        from ...nn.model import build_model, load_model_weights
        from ...runs import checkpoint_path, read_checkpoint

        pipeline = TextPipeline.load(config.data, run_dir)
        model = build_model(config.model, len(pipeline.src_vocab), len(pipeline.tgt_vocab), pipeline.shares_vocab,
                            src_vocab=pipeline.src_vocab)
        path = checkpoint_path(run_dir, checkpoint)
        load_model_weights(model, read_checkpoint(path)[0], path)
        if torch.device(device).type == "cpu":
            lay_out_for_decoding(model)  # this model only translates
            keep_freed_memory()  # each step's log-probabilities and caches reuse memory
        return TorchTranslator(model, pipeline, config, device)
