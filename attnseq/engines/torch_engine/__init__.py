"""``engine: torch``: the models of attnseq/nn trained by attnseq/train, decoded by attnseq/decoding."""

from __future__ import annotations

import logging

from ...errors import ConfigError
from ..base import ENGINES, TrainingEngine

log = logging.getLogger("attnseq")


@ENGINES.register("torch")
class TorchEngine(TrainingEngine):
    """Every architecture and design, on a CPU or a GPU, in one process or under torchrun."""

    def check(self, config):
        from .trainer import check_config

        return check_config(config)

    def train(self, config, run_dir, resume=False, on_eval=None, overwrite=False):
        from ...allocator import keep_freed_memory
        from .trainer import Trainer

        keep_freed_memory()  # a step's large tensors reuse memory instead of faulting it in again
        trainer = Trainer(config, run_dir, resume=resume, on_eval=on_eval, overwrite=overwrite)
        summary = trainer.fit()
        return summary if trainer.is_main else None

    def load(self, run_dir, config, checkpoint="best", device="cpu"):
        import torch

        from ...allocator import keep_freed_memory
        from ...data.pipeline import TextPipeline
        from ...nn.int8 import quantize_int8
        from ...nn.layout import lay_out_for_decoding
        from ...nn.model import build_model, load_model_weights
        from ...runs import checkpoint_path, read_checkpoint
        from .translator import TorchTranslator

        precision = decoding_precision(config.decode.precision, torch.device(device).type)
        pipeline = TextPipeline.load(config.data, run_dir)
        model = build_model(
            config.model,
            len(pipeline.src_vocab),
            len(pipeline.tgt_vocab),
            pipeline.shares_vocab,
            src_vocab=pipeline.src_vocab,
            features=pipeline.inputs.feature_size,
        )
        path = checkpoint_path(run_dir, checkpoint)
        load_model_weights(model, read_checkpoint(path)[0], path)
        if precision == "int8":
            quantize_int8(model.eval())  # once, here: every batch then decodes with the int8 weights
        if torch.device(device).type == "cpu":
            lay_out_for_decoding(model)  # this model only translates
            keep_freed_memory()  # each step's log-probabilities and caches reuse memory
        return TorchTranslator(model, pipeline, config, device, precision=precision)


def decoding_precision(wanted: str, device_type: str) -> str:
    """The precision a model loaded on ``device_type`` decodes at when ``decode.precision`` is
    ``wanted``: int8 where this CPU has int8 dot-product instructions (VNNI, AMX) and torch its
    int8 kernels, bf16 where bfloat16 products pay on the device (hardware.bf16_pays), else fp32
    with one warning saying why. int8 on a GPU is a ConfigError."""
    if wanted == "bf16":
        from ...hardware import bf16_pays

        pays, why_not = bf16_pays(device_type)
        if not pays:
            log.warning("decode.precision bf16: this %s %s; decoding in fp32", device_type.upper(), why_not)
            return "fp32"
        return "bf16"
    if wanted != "int8":
        return wanted
    from ...hardware import int8_in_hardware
    from ...nn.int8 import ENGINE, int8_kernels

    if device_type != "cpu":
        raise ConfigError(
            f"decode.precision: int8 decodes on the CPU (torch's int8 kernels); got device "
            f"{device_type}: use fp32 there",
            key="decode.precision",
        )
    has, why_not = int8_in_hardware()
    if has and not int8_kernels():
        has, why_not = False, f"has no int8 kernels in this torch (no {ENGINE} engine)"
    if not has:
        log.warning("decode.precision int8: this CPU %s; decoding in fp32", why_not)
        return "fp32"
    return "int8"
