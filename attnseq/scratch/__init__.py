"""attnseq.scratch: the NumPy reference engine (chapters 7-8 of "Deep Learning from Scratch 2").

Layers with hand-written backward passes, the book's seq2seq models (baseline, Peeky,
attention, attention with a BiLSTM encoder), SGD/Adam with gradient clipping, and a
finite-difference gradient checker. Depends on NumPy only: the adapter that trains and serves
these models like the torch ones is attnseq/engines/numpy_engine.
"""
from __future__ import annotations

from .layers import (Attention, AttentionWeight, Embedding, GRU, LSTM, TimeAffine,
                     TimeAttention, TimeBiLSTM, TimeEmbedding, TimeGRU, TimeLSTM,
                     TimeSoftmaxWithLoss, WeightSum)
from .models import (MODELS, AttentionSeq2seq, BiAttentionSeq2seq, PeekySeq2seq, Seq2seq,
                     build_model)
from .optim import SGD, Adam, clip_grads

__all__ = [
    "Embedding", "TimeEmbedding", "LSTM", "TimeLSTM", "GRU", "TimeGRU", "TimeAffine",
    "TimeSoftmaxWithLoss", "WeightSum", "AttentionWeight", "Attention", "TimeAttention",
    "TimeBiLSTM",
    "Seq2seq", "PeekySeq2seq", "AttentionSeq2seq", "BiAttentionSeq2seq", "MODELS", "build_model",
    "SGD", "Adam", "clip_grads",
]
