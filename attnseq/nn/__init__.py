"""The torch models: attention scorers (attention/), recurrent encoder-decoders (rnn/), the
Transformer (transformer/), memory networks (memory/), the encoders of sources that are files
(frontends/), behind one Seq2Seq model and the decoder step protocol (state.py). Importing any
part of the package registers every variant."""

from . import attention, memory_networks, rnn, transformer  # noqa: F401  (fill the registries)
from .frontends import conv, pyramidal  # noqa: F401  (after the layers they use)
from .model import ARCHS, Seq2Seq, build_model, check_model, count_parameters

__all__ = ["ARCHS", "Seq2Seq", "build_model", "check_model", "count_parameters"]
