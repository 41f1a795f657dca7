"""attnseq.scratch: the NumPy reference engine (chapters 7-8 of "Deep Learning from Scratch 2").

Layers with hand-written backward passes, the book's seq2seq models (baseline, Peeky,
attention, attention with a BiLSTM encoder), SGD/Adam, a trainer, the book's data loader and
chapter-8 experiment, and a finite-difference gradient checker.  Depends on NumPy only.
"""
from __future__ import annotations

from .book import BookData, load_data, run_book
from .layers import (Attention, AttentionWeight, Embedding, GRU, LSTM, TimeAffine,
                     TimeAttention, TimeBiLSTM, TimeEmbedding, TimeGRU, TimeLSTM,
                     TimeSoftmaxWithLoss, WeightSum)
from .models import (MODELS, AttentionSeq2seq, BiAttentionSeq2seq, PeekySeq2seq, Seq2seq,
                     build_model)
from .optim import SGD, Adam, clip_grads
from .trainer import Trainer, eval_exact_match

__all__ = [
    "Embedding", "TimeEmbedding", "LSTM", "TimeLSTM", "GRU", "TimeGRU", "TimeAffine",
    "TimeSoftmaxWithLoss", "WeightSum", "AttentionWeight", "Attention", "TimeAttention",
    "TimeBiLSTM",
    "Seq2seq", "PeekySeq2seq", "AttentionSeq2seq", "BiAttentionSeq2seq", "MODELS", "build_model",
    "SGD", "Adam", "clip_grads", "Trainer", "eval_exact_match",
    "BookData", "load_data", "run_book",
]
