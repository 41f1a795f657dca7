"""The torch engine's Translator: a torch Seq2Seq model searched by greedy or beam search (it sits
here, below attnseq.train, which evaluates with it, and the torch engine, which loads it)."""

from __future__ import annotations

import contextlib

import torch

from ...data.batching import SourceBatch
from ...data.inputs import SourceShape
from ...decoding.attention_views import attention_views
from ...decoding.common import Hypothesis
from ...decoding.search import search
from ...translator.base import Translator


class TorchTranslator(Translator):
    """A torch model with its text pipeline, ready to translate; ``precision`` says what its
    products run in (int8 once the engine has quantised it: nn/int8.py; bf16 autocast)."""

    def __init__(
        self, model: torch.nn.Module, pipeline, config, device: str | torch.device = "cpu", precision: str = "fp32"
    ):
        super().__init__(pipeline, config)
        self.model, self.device, self.precision = model, torch.device(device), precision
        self.model.to(self.device).eval()
        # copy attention (nn/copy.py): the model also reads each source as extended ids, and its
        # hypotheses hold them, the source's words outside the vocabulary numbered after it
        self.copies = getattr(model.decoder, "pointer", None) is not None

    def decode_sources(self, sources, decode, keep_attention=False):
        if not self.copies:
            return super().decode_sources(sources, decode, keep_attention)
        unk = self.pipeline.src_vocab.unk_id
        extended = [self.pipeline.extend_source(s.tokens).ids or [unk] for s in sources]
        return self.decode_batch([self._readable(s.ids) for s in sources], decode, keep_attention, extended)

    def autocast(self):
        """The products in bfloat16 when the model decodes at bf16 (torch.autocast: matrix products
        and the recurrent cells' in bfloat16, softmax and log-softmax kept in float32)."""
        if self.precision != "bf16":
            return contextlib.nullcontext()
        return torch.autocast(self.device.type, dtype=torch.bfloat16)

    def target_words(self, source):
        return self.pipeline.extend_source(source.tokens).oov if self.copies else ()

    def decode_batch(
        self, src_ids: list[list[int]], decode, keep_attention: bool = False, extended: list[list[int]] | None = None
    ) -> list[list[Hypothesis]]:
        was_training = self.model.training
        self.model.eval()
        try:
            with torch.no_grad(), self.autocast():
                source = SourceBatch.of(src_ids, extended).to(self.device)
                return search(self.model, source, decode, keep_attention)
        finally:
            self.model.train(was_training)

    def source_shape(self, source):
        grid = getattr(self.model.encoder, "grid", None)
        if grid is None:
            return None
        return SourceShape(self.pipeline.inputs.name, source.size, grid(len(source.ids)))

    def views_batch(self, src_ids, outputs, rows):
        was_training = self.model.training
        self.model.eval()
        try:
            with self.autocast():
                return attention_views(self.model, src_ids, outputs, rows)
        finally:
            self.model.train(was_training)
