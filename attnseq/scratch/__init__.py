"""attnseq.scratch: the NumPy reference engine (chapters 6-8 of "Deep Learning from Scratch 2").

``layers.py``: the book's layers, one short class each, forward and backward as the book
derives them (the code to read beside the book); ``fused.py``: fused twins of its Time layers,
tested equal to them, which the engine trains and decodes with; ``models.py``: the book's
seq2seq models (baseline, Peeky, attention, attention with a BiLSTM encoder), built from either
layer set (``build_model(..., layers=fused)``); ``optim.py``: SGD/Adam with gradient clipping;
``gradcheck.py``: a finite-difference gradient checker. Depends on NumPy only: the adapter that
trains and serves these models like the torch ones is attnseq/engines/numpy_engine.
"""

from __future__ import annotations

from . import fused, layers
from .layers import (
    GRU,
    LSTM,
    Attention,
    AttentionWeight,
    Embedding,
    TimeAffine,
    TimeAttention,
    TimeBiLSTM,
    TimeEmbedding,
    TimeGRU,
    TimeLSTM,
    TimeSoftmaxWithLoss,
    WeightSum,
)
from .models import MODELS, AttentionSeq2seq, BiAttentionSeq2seq, PeekySeq2seq, Seq2seq, build_model
from .optim import SGD, Adam, clip_grads

__all__ = [
    "layers",
    "fused",
    "Embedding",
    "TimeEmbedding",
    "LSTM",
    "TimeLSTM",
    "GRU",
    "TimeGRU",
    "TimeAffine",
    "TimeSoftmaxWithLoss",
    "WeightSum",
    "AttentionWeight",
    "Attention",
    "TimeAttention",
    "TimeBiLSTM",
    "Seq2seq",
    "PeekySeq2seq",
    "AttentionSeq2seq",
    "BiAttentionSeq2seq",
    "MODELS",
    "build_model",
    "SGD",
    "Adam",
    "clip_grads",
]
