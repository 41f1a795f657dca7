"""How a run's token ids become the book's models' arrays, and their outputs ids again.

The book's conventions, kept on purpose (``ArrayLayout``, every data set but the book's file):

- Sources are padded with the pad id to one fixed length S (the longest training source) and
  padding is an ordinary, unmasked token. With ``data.reverse_source`` the padded row is
  flipped (``x[:, ::-1]``), so the padding reaches the encoder first.
- Targets are bos + target + eos, padded with pad; the loss ignores pad positions and is the
  mean over the counted ones (the same normalisation as the torch trainer).
- Decoding is batched greedy search for exactly ``decode.max_len`` steps, cut at eos.

With ``data.format: book`` (``attnseq train ... --data date.txt``) the arrays are the book's own
(``BookLayout``): the book's ids, '_' as the start symbol, answers of fixed width without eos,
padding spaces, and the book's random stream, so the run retraces the book's.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ...config import Config
from ...data.corpora.book import BOOK_SEED, SEPARATOR
from ...data.pipeline import TextPipeline
from ...data.vocab import SPECIALS, Vocab

PAD, BOS, EOS = Vocab.pad_id, Vocab.bos_id, Vocab.eos_id


def source_array(src_ids: Sequence[Sequence[int]], length: int, reverse: bool, pad: int = PAD) -> np.ndarray:
    """Sources (N, max(length, longest)) as the book pads them: ``src_ids`` are the encoder's ids
    (already reversed by the pipeline when ``reverse``); the rows are the reading-order ids
    right-padded with ``pad``, flipped when ``reverse`` (so the padding comes first)."""
    S = max([length, *map(len, src_ids)])
    xs = np.full((len(src_ids), S), pad, dtype=np.int64)
    for row, ids in enumerate(src_ids):
        if reverse:
            xs[row, S - len(ids) :] = ids
        else:
            xs[row, : len(ids)] = ids
    return xs


def target_array(tgt_ids: Sequence[Sequence[int]]) -> np.ndarray:
    """Targets (N, T + 1): bos + ids + eos, right-padded with pad to the longest."""
    T = max(map(len, tgt_ids)) + 1
    ts = np.full((len(tgt_ids), T + 1), PAD, dtype=np.int64)
    for row, ids in enumerate(tgt_ids):
        ts[row, : len(ids) + 2] = [BOS, *ids, EOS]
    return ts


def real_columns(length: int, S: int, reverse: bool) -> slice:
    """Where a source of ``length`` ids sits in a row of ``source_array`` of width S."""
    return slice(S - length, S) if reverse else slice(0, length)


class ArrayLayout:
    """How a run's token ids become the numpy model's arrays, and its outputs ids again.

    attnseq's conventions: the model's ids are the pipeline's; sources are padded with pad to
    ``source_len`` (the padding first when reversed), targets are bos + ids + eos padded with
    pad (pad positions don't count in the loss), decoding starts at bos and stops at eos or
    after ``decode.max_len`` steps; weights and batches come from ``train.seed``.
    """

    ignore_label = PAD
    start = BOS

    def __init__(self, pipeline: TextPipeline, source_len: int, target_len: int = 0):
        self.source_len, self.target_len = source_len, target_len

    def vocab_size(self, vocab: Vocab) -> int:
        return len(vocab)

    def sources(self, src_ids: Sequence[Sequence[int]], reverse: bool) -> np.ndarray:
        return source_array(src_ids, self.source_len, reverse)  # (N, S)

    def targets(self, tgt_ids: Sequence[Sequence[int]]) -> np.ndarray:
        return target_array(tgt_ids)  # (N, T + 1)

    def steps(self, decode) -> int:
        return decode.max_len

    def output(self, ids: np.ndarray) -> tuple[list[int], int]:
        """One decoded row (L,) -> its pipeline ids and the steps it took (eos included)."""
        eos = np.flatnonzero(ids == EOS)
        steps = int(eos[0]) + 1 if eos.size else len(ids)
        return [int(t) for t in ids[:steps] if t != EOS], steps

    def rng(self, config: Config, lines: int) -> np.random.RandomState:
        return np.random.RandomState(config.train.seed)


class BookLayout(ArrayLayout):
    """``data.format: book``: the book's own arrays, so that training retraces the book's run.

    The model's ids are the book's (the pipeline's minus the four special tokens, which the book
    does not have); sources are padded with spaces; targets are '_' + the answer padded with
    spaces, every position counted; decoding starts at '_' and runs for exactly the answer's
    width (``target_len``); weights and batches come from the book's random stream (seed 1984,
    after the shuffle that splits the file).
    """

    ignore_label = -1  # every position counts

    def __init__(self, pipeline: TextPipeline, source_len: int, target_len: int = 0):
        super().__init__(pipeline, source_len, target_len)
        self.offset = len(SPECIALS)
        stoi = pipeline.src_vocab.stoi
        self.space = stoi.get(" ", self.offset) - self.offset
        self.start = stoi[SEPARATOR] - self.offset

    def vocab_size(self, vocab: Vocab) -> int:
        return len(vocab) - self.offset

    def _book_ids(self, ids: Sequence[int]) -> np.ndarray:
        ids = np.asarray(ids, dtype=np.int64) - self.offset
        return np.where(ids < 0, self.space, ids)  # an unknown character reads as a space

    def sources(self, src_ids: Sequence[Sequence[int]], reverse: bool) -> np.ndarray:
        return source_array([self._book_ids(ids) for ids in src_ids], self.source_len, reverse, pad=self.space)

    def targets(self, tgt_ids: Sequence[Sequence[int]]) -> np.ndarray:
        L = max([self.target_len, *map(len, tgt_ids)])
        ts = np.full((len(tgt_ids), L + 1), self.space, dtype=np.int64)
        ts[:, 0] = self.start
        for row, ids in enumerate(tgt_ids):
            ts[row, 1 : 1 + len(ids)] = self._book_ids(ids)
        return ts

    def steps(self, decode) -> int:
        return self.target_len

    def output(self, ids: np.ndarray) -> tuple[list[int], int]:
        return [int(t) + self.offset for t in ids], len(ids)

    def rng(self, config: Config, lines: int) -> np.random.RandomState:
        rng = np.random.RandomState(BOOK_SEED)
        rng.shuffle(np.arange(lines))  # the draws of the book's split
        return rng


LAYOUTS = {"tsv": ArrayLayout, "book": BookLayout}  # data.format -> layout
