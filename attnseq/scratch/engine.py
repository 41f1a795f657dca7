"""The NumPy engine behind ``engine: numpy``: the book's models trained and served like the torch ones.

``train_numpy(config, run_dir)`` reads the same data, builds the same text pipeline and writes
the same run folder as the torch Trainer (config.yaml, vocabularies, metrics.jsonl,
best/last.safetensors, training state for ``--resume``); ``load_numpy_translator`` serves a
numpy run through the same Translator interface (search, translate, evaluate).

The book's conventions, kept on purpose:

- Sources are padded with the pad id to one fixed length S (the longest training source) and
  padding is an ordinary, unmasked token. With ``data.reverse_source`` the padded row is
  flipped (``x[:, ::-1]``), so the padding reaches the encoder first.
- Targets are bos + target + eos, padded with pad; the loss ignores pad positions and is the
  mean over the counted ones (the same normalisation as the torch trainer).
- Initialisation is always the book's (embeddings N(0,1)/100, weights N(0,1)/sqrt(fan_in),
  biases 0), whatever ``model.init`` says; batches are plain random batches (``train.bucket``
  is ignored) and the last partial batch of an epoch is dropped, as the book's trainer does.
- Decoding is batched greedy search for exactly ``decode.max_len`` steps, cut at eos; beam
  search is torch-only.

Source and target keep their own vocabularies (the models take ``target_vocab_size``).

With ``data.format: book`` (``attnseq train ... --data date.txt``) the arrays are the book's
own instead (``BookLayout``): the book's ids, '_' as the start symbol, answers of fixed width
without eos, padding spaces, and the book's random stream, so the run retraces the book's.
Designs: ``model.decoder`` none -> the book's baseline, peeky -> Peeky, book -> attention
(``model.bidirectional: true`` -> attention with a BiLSTM encoder).

BLAS threads: the engine runs NumPy's BLAS with ``train.threads`` threads (0 -> 1), through
threadpoolctl when it is installed, else through the OpenBLAS that NumPy ships; when neither
works, set ``OPENBLAS_NUM_THREADS=1`` in the environment (several OpenBLAS threads stall on a
small shared machine).
"""
from __future__ import annotations

import contextlib
import ctypes
import json
import logging
import pickle
from pathlib import Path
from typing import Callable, Iterator, Sequence

import numpy as np
from safetensors import safe_open
from safetensors.numpy import load_file, save_file

from ..api import Translator
from ..config import Config, save_config
from ..data.pipeline import TextPipeline
from ..data.book import BOOK_SEED, SEPARATOR
from ..data.vocab import SPECIALS, Vocab
from ..decoding.common import Hypothesis
from ..errors import ConfigError, DataError, UserError
from ..train.checkpoint import BEST, CONFIG_FILE, LAST
from ..train.epochs import EpochLoop, Progress
from ..train.loop import encode_pairs, load_splits
from ..utils import atomic_write, atomic_write_bytes
from .models import Seq2seq, build_model
from .optim import SGD, Adam, clip_grads

log = logging.getLogger(__name__)

__all__ = ["train_numpy", "load_numpy_translator", "NumpyTranslator", "NumpyTrainer",
           "numpy_design", "numpy_to_torch_state", "torch_to_numpy_state", "source_array",
           "target_array", "blas_threads", "save_numpy_weights", "load_numpy_weights",
           "ArrayLayout", "BookLayout", "LAYOUTS"]

STATE_FILE = "last.state.pkl"  # optimizer moments, RNG, progress and epoch order, for --resume
PAD, BOS, EOS = Vocab.pad_id, Vocab.bos_id, Vocab.eos_id

# model.decoder -> {model.bidirectional: the numpy model (attnseq.scratch.MODELS)}
NUMPY_DESIGNS = {
    "none": {False: "baseline"},
    "peeky": {False: "peeky"},
    "book": {False: "attention", True: "bi-attention"},
}
# settings the numpy models have no knob for: key -> the values they implement
REQUIREMENTS = {
    "model.arch": ("rnn",), "model.cell": ("lstm",), "model.encoder": ("stacked",),
    "model.encoder_layers": (1,), "model.decoder_layers": (1,), "model.bridge": ("copy",),
    "model.dropout": (0.0,), "model.tie_embeddings": (False,), "model.context_into_input": (False,),
    "train.schedule": ("constant",), "train.accumulate": (1,), "train.label_smoothing": (0.0,),
    "train.weight_decay": (0.0,), "train.precision": ("fp32",), "train.device": ("cpu", "auto"),
    "decode.beam_size": (1,),
}
DESIGN_REQUIREMENTS = {"book": {"model.attention": ("dot",)}}  # unscaled dot scores


# -- configuration ------------------------------------------------------------------------------
def _setting(config: Config, key: str):
    section, name = key.split(".")
    return getattr(getattr(config, section), name)


def numpy_design(config: Config) -> str:
    """The numpy model (a key of attnseq.scratch.MODELS) ``config`` describes; ConfigError naming
    the key when the numpy engine cannot build it."""
    decoder = config.model.decoder
    if decoder not in NUMPY_DESIGNS:
        raise ConfigError(f"model.decoder: the numpy engine (engine: numpy) has the designs "
                          f"{', '.join(NUMPY_DESIGNS)}; got {decoder!r} (use engine: torch for it)")
    by_direction = NUMPY_DESIGNS[decoder]
    if config.model.bidirectional not in by_direction:
        raise ConfigError(f"model.bidirectional: the numpy engine's {decoder} design needs "
                          f"{str(not config.model.bidirectional).lower()} (engine: numpy)")
    for key, allowed in {**REQUIREMENTS, **DESIGN_REQUIREMENTS.get(decoder, {})}.items():
        value = _setting(config, key)
        if value not in allowed:
            shown = ", ".join(json.dumps(v) for v in allowed)
            raise ConfigError(f"{key}: the numpy engine (engine: numpy) supports {shown}; got "
                              f"{json.dumps(value)}")
    if config.model.bidirectional and config.model.hidden_size % 2:
        raise ConfigError(f"model.hidden_size: a bidirectional encoder needs an even size, "
                          f"got {config.model.hidden_size}")
    return by_direction[config.model.bidirectional]


def _build(design: str, config: Config, pipeline: TextPipeline, layout: "ArrayLayout", rng
           ) -> Seq2seq:
    return build_model(design, layout.vocab_size(pipeline.src_vocab), config.model.embed_size,
                       config.model.hidden_size, dtype=np.float32, rng=rng,
                       ignore_label=layout.ignore_label,
                       target_vocab_size=layout.vocab_size(pipeline.tgt_vocab))


# -- BLAS threads -------------------------------------------------------------------------------
_OPENBLAS_SETTERS = ("scipy_openblas_set_num_threads64_", "scipy_openblas_set_num_threads",
                     "openblas_set_num_threads64_", "openblas_set_num_threads")


def _openblas():
    """(get, set) of the OpenBLAS NumPy was built with, or None."""
    try:
        from numpy._core import _multiarray_umath as core
    except ImportError:  # NumPy < 2
        from numpy.core import _multiarray_umath as core
    try:
        lib = ctypes.CDLL(core.__file__)
    except OSError:
        return None
    for name in _OPENBLAS_SETTERS:
        getter = getattr(lib, name.replace("_set_", "_get_"), None)
        setter = getattr(lib, name, None)
        if getter is not None and setter is not None:
            getter.restype = ctypes.c_int
            return getter, setter
    return None


@contextlib.contextmanager
def blas_threads(n: int) -> Iterator[None]:
    """NumPy's BLAS limited to ``n`` threads inside the block."""
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        threadpool_limits = None
    if threadpool_limits is not None:
        with threadpool_limits(n, user_api="blas"):
            yield
        return
    blas = _openblas()
    if blas is None:
        yield
        return
    get, set_ = blas
    before = get()
    set_(n)
    try:
        yield
    finally:
        set_(before)


# -- arrays as the model reads them ------------------------------------------------------------
def source_array(src_ids: Sequence[Sequence[int]], length: int, reverse: bool,
                 pad: int = PAD) -> np.ndarray:
    """Sources (N, max(length, longest)) as the book pads them: ``src_ids`` are the encoder's ids
    (already reversed by the pipeline when ``reverse``); the rows are the reading-order ids
    right-padded with ``pad``, flipped when ``reverse`` (so the padding comes first)."""
    S = max([length, *map(len, src_ids)])
    xs = np.full((len(src_ids), S), pad, dtype=np.int64)
    for row, ids in enumerate(src_ids):
        if reverse:
            xs[row, S - len(ids):] = ids
        else:
            xs[row, :len(ids)] = ids
    return xs


def target_array(tgt_ids: Sequence[Sequence[int]]) -> np.ndarray:
    """Targets (N, T + 1): bos + ids + eos, right-padded with pad to the longest."""
    T = max(map(len, tgt_ids)) + 1
    ts = np.full((len(tgt_ids), T + 1), PAD, dtype=np.int64)
    for row, ids in enumerate(tgt_ids):
        ts[row, :len(ids) + 2] = [BOS, *ids, EOS]
    return ts


def _real_columns(length: int, S: int, reverse: bool) -> slice:
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
        return source_array(src_ids, self.source_len, reverse)          # (N, S)

    def targets(self, tgt_ids: Sequence[Sequence[int]]) -> np.ndarray:
        return target_array(tgt_ids)                                    # (N, T + 1)

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

    ignore_label = -1                                  # every position counts

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
        return np.where(ids < 0, self.space, ids)     # an unknown character reads as a space

    def sources(self, src_ids: Sequence[Sequence[int]], reverse: bool) -> np.ndarray:
        return source_array([self._book_ids(ids) for ids in src_ids], self.source_len, reverse,
                            pad=self.space)

    def targets(self, tgt_ids: Sequence[Sequence[int]]) -> np.ndarray:
        L = max([self.target_len, *map(len, tgt_ids)])
        ts = np.full((len(tgt_ids), L + 1), self.space, dtype=np.int64)
        ts[:, 0] = self.start
        for row, ids in enumerate(tgt_ids):
            ts[row, 1:1 + len(ids)] = self._book_ids(ids)
        return ts

    def steps(self, decode) -> int:
        return self.target_len

    def output(self, ids: np.ndarray) -> tuple[list[int], int]:
        return [int(t) + self.offset for t in ids], len(ids)

    def rng(self, config: Config, lines: int) -> np.random.RandomState:
        rng = np.random.RandomState(BOOK_SEED)
        rng.shuffle(np.arange(lines))                  # the draws of the book's split
        return rng


LAYOUTS = {"tsv": ArrayLayout, "book": BookLayout}     # data.format -> layout


# -- weights between engines --------------------------------------------------------------------
def _torch_gates(a: np.ndarray) -> np.ndarray:
    """Gate blocks along the last axis from the book's order f, g, i, o to torch's i, f, g, o."""
    f, g, i, o = np.split(a, 4, axis=-1)
    return np.concatenate([i, f, g, o], axis=-1)


def _book_gates(a: np.ndarray) -> np.ndarray:
    """Gate blocks along the last axis from torch's order i, f, g, o to the book's f, g, i, o."""
    i, f, g, o = np.split(a, 4, axis=-1)
    return np.concatenate([f, g, i, o], axis=-1)


# numpy layer and parameter -> torch parameter ("{direction}" is "_reverse" for a BiLSTM's bwd)
_TORCH_NAMES = {
    ("embed", "W"): "embed.weight",
    ("lstm", "Wx"): "rnn.rnn.weight_ih_l0{direction}",
    ("lstm", "Wh"): "rnn.rnn.weight_hh_l0{direction}",
    ("lstm", "b"): "rnn.rnn.bias_ih_l0{direction}",
    ("affine", "W"): "generator.weight",
    ("affine", "b"): "generator.bias",
}


def _torch_name(name: str) -> str:
    """``encoder.lstm.bwd.Wx`` -> ``encoder.rnn.rnn.weight_ih_l0_reverse`` and so on."""
    part, layer, *direction, leaf = name.split(".")
    suffix = "_reverse" if direction == ["bwd"] else ""
    return f"{part}." + _TORCH_NAMES[layer, leaf].format(direction=suffix)


def numpy_to_torch_state(named_params: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """A torch state dict (arrays; ``torch.from_numpy`` them to load) of the torch model with the
    same design: LSTM weights transposed to (4H, in) with the gates reordered to i, f, g, o,
    the bias in ``bias_ih`` and zeros in ``bias_hh``; output layer weight = W.T.

    Works for every numpy model (baseline, peeky, attention, bi-attention) and its torch
    counterpart (``model.decoder`` none / peeky / book with ``model.bridge: copy``,
    ``model.cell: lstm``)."""
    state = {}
    for name, value in named_params.items():
        target, leaf = _torch_name(name), name.rsplit(".", 1)[1]
        if ".lstm." in name:
            value = _torch_gates(value)
            if leaf == "b":
                state[target.replace("bias_ih", "bias_hh")] = np.zeros_like(value)
        state[target] = np.ascontiguousarray(value.T if value.ndim == 2 and "embed" not in name
                                             else value)
    return state


def torch_to_numpy_state(state: dict, names: Sequence[str]) -> dict[str, np.ndarray]:
    """The inverse of ``numpy_to_torch_state`` for the numpy parameter ``names`` (a model's
    ``param_names``): LSTM biases become bias_ih + bias_hh."""
    arrays = {k: np.asarray(v.detach().cpu() if hasattr(v, "detach") else v) for k, v in state.items()}
    params = {}
    for name in names:
        source = _torch_name(name)
        value = arrays[source]
        if name.endswith(".b") and ".lstm." in name:
            value = value + arrays[source.replace("bias_ih", "bias_hh")]
        if value.ndim == 2 and "embed" not in name:
            value = value.T
        params[name] = np.ascontiguousarray(_book_gates(value) if ".lstm." in name else value)
    return params


# -- weights files ------------------------------------------------------------------------------
def save_numpy_weights(model, path: Path, metadata: dict[str, str]) -> None:
    """The model's named parameters as safetensors (atomically), with ``metadata``."""
    tensors = {k: np.ascontiguousarray(v) for k, v in model.named_params().items()}
    atomic_write(path, lambda tmp: save_file(tensors, tmp, metadata=metadata))


def numpy_weights_metadata(path: Path) -> dict[str, str]:
    """The metadata saved with the weights at ``path`` (design, source and target widths)."""
    if not Path(path).exists():
        raise UserError(f"{path}: no such checkpoint")
    with safe_open(str(path), framework="np") as fh:
        return fh.metadata() or {}


def load_numpy_weights(model: Seq2seq, path: Path) -> dict[str, str]:
    """Load weights written by ``save_numpy_weights`` into ``model``; their metadata."""
    metadata = numpy_weights_metadata(path)
    try:
        model.load_params(load_file(str(path)))
    except (KeyError, ValueError) as err:
        raise UserError(f"{path}: not weights of this numpy model ({err})") from None
    return metadata


# -- decoding -----------------------------------------------------------------------------------
class _KeepScores:
    """Stands in for a model's loss layer to capture the scores (N, T, V) of a forward pass."""

    def __init__(self):
        self.scores = None

    def forward(self, xs: np.ndarray, ts: np.ndarray) -> float:
        self.scores = xs
        return 0.0


def _log_softmax(x: np.ndarray) -> np.ndarray:
    x = x - x.max(axis=-1, keepdims=True)
    return x - np.log(np.exp(x).sum(axis=-1, keepdims=True))


class NumpyTranslator(Translator):
    """A numpy model with its text pipeline: the Translator interface over batched greedy search
    (``layout.steps`` steps, cut at eos unless the layout is the book's). Sources are padded to
    ``layout.source_len`` (longer ones to the longest of their batch). Attention (T_out, S)
    covers the real source tokens only: the weight the book's unmasked padding draws is left
    out, so a row may sum to less than 1."""

    def __init__(self, model, pipeline: TextPipeline, config: Config, layout: ArrayLayout,
                 threads: int = 1):
        self.model, self.pipeline, self.config, self.layout = model, pipeline, config, layout
        self.threads = threads
        self.device = "cpu"

    def decode_batch(self, src_ids: list[list[int]], decode, keep_attention: bool = False
                     ) -> list[list[Hypothesis]]:
        if decode.beam_size > 1:
            raise UserError(f"beam search (--beam {decode.beam_size}) is torch-only: the numpy "
                            "engine decodes greedily; use --beam 1")
        reverse = self.pipeline.config.reverse_source
        xs = self.layout.sources(src_ids, reverse)  # (N, S)
        with blas_threads(self.threads):
            ids = self.model.generate(xs, self.layout.start, self.layout.steps(decode))  # (N, L)
            alignment = getattr(self.model.decoder, "attention_weights", None)  # (N, L, S)
            logp = self._log_probs(xs, ids)  # (N, L)
        hyps = []
        for row, src in enumerate(src_ids):
            tokens, steps = self.layout.output(ids[row])
            a = None
            if keep_attention and alignment is not None:
                a = alignment[row, :steps, _real_columns(len(src), xs.shape[1], reverse)].astype(np.float32)
            hyps.append([Hypothesis(tokens, float(logp[row, :steps].sum()), a)])
        return hyps

    def _log_probs(self, xs: np.ndarray, ids: np.ndarray) -> np.ndarray:
        """Log-probabilities (N, L) of the tokens ``ids`` (N, L), fed back as the decoder's inputs."""
        ts = np.concatenate([np.full((len(ids), 1), self.layout.start, dtype=ids.dtype), ids], axis=1)
        loss_layer, keep = self.model.softmax, _KeepScores()
        self.model.softmax = keep
        try:
            self.model.forward(xs, ts)
        finally:
            self.model.softmax = loss_layer
        logp = _log_softmax(keep.scores.astype(np.float64))  # (N, L, V)
        return np.take_along_axis(logp, ids[:, :, None], axis=2)[:, :, 0]


def load_numpy_translator(run_dir: str | Path, config: Config, pipeline: TextPipeline,
                          checkpoint: str = "best") -> NumpyTranslator:
    """The numpy model of ``run_dir`` (``checkpoint`` best, falling back to last), ready to
    translate."""
    run_dir = Path(run_dir)
    design = numpy_design(config)
    path = run_dir / (BEST if checkpoint == "best" else LAST)
    if checkpoint == "best" and not path.exists():
        path = run_dir / LAST
    metadata = numpy_weights_metadata(path)
    layout = LAYOUTS[config.data.format](pipeline, int(metadata.get("source_len", 0)),
                                         int(metadata.get("target_len", 0)))
    model = _build(design, config, pipeline, layout, np.random.RandomState(0))
    load_numpy_weights(model, path)
    return NumpyTranslator(model, pipeline, config, layout, config.train.threads or 1)


# -- training -----------------------------------------------------------------------------------
def _adam(tc) -> Adam:
    optimizer = Adam(tc.lr, *tc.adam_betas)
    optimizer.eps = tc.adam_eps  # added to sqrt(v), as the book and torch do
    return optimizer


OPTIMIZERS = {"adam": _adam, "sgd": lambda tc: SGD(tc.lr)}  # train.optimizer -> the book's optimizer


def train_numpy(config: Config, run_dir: str | Path, resume: bool = False) -> dict:
    """Train the numpy model ``config`` describes into ``run_dir``; the last evaluation record."""
    design = numpy_design(config)
    if config.model.init != "book":
        log.warning("model.init: the numpy engine always uses the book's initialisation "
                    "(got %s)", config.model.init)
    with blas_threads(config.train.threads or 1):
        trainer = NumpyTrainer(config, run_dir, design, resume)
        log.info("training %s parameters (numpy %s) on %d pairs -> %s", f"{trainer.parameters:,}",
                 design, len(trainer.xs), run_dir)
        return trainer.fit()


class NumpyTrainer(EpochLoop):
    """The torch Trainer's loop (EpochLoop) and run folder, for the book's numpy models."""

    def __init__(self, config: Config, run_dir: str | Path, design: str, resume: bool = False,
                 on_eval: Callable[[dict], None] | None = None):
        self.config, self.run_dir, self.design, self.resume = config, Path(run_dir), design, resume
        self.on_eval = on_eval
        tc = config.train
        self.run_dir.mkdir(parents=True, exist_ok=True)
        splits = load_splits(config)
        self.dev_pairs = splits.get("dev", [])
        if resume:
            self.pipeline = TextPipeline.load(config.data, self.run_dir)
        else:
            self.pipeline = TextPipeline.fit(config.data, splits["train"], self.run_dir)
            self.pipeline.save(self.run_dir)
            save_config(config, self.run_dir / CONFIG_FILE)
        train = encode_pairs(self.pipeline, splits["train"], config.data.max_source_len,
                             config.data.max_target_len)
        if not train:
            raise DataError("no training pair is left after the length limits (data.max_*_len)")
        self.dev_examples = encode_pairs(self.pipeline, self.dev_pairs)
        self.reverse = config.data.reverse_source
        # S and L: every source is padded to the longest training source, (book) every target
        # to the longest training target
        self.layout = LAYOUTS[config.data.format](self.pipeline, max(len(e.src) for e in train),
                                                  max(len(e.tgt) for e in train))
        self.xs = self.layout.sources([e.src for e in train], self.reverse)  # (N, S)
        self.ts = self.layout.targets([e.tgt for e in train])  # (N, T + 1)
        self.ts_lengths = (self.ts != self.layout.ignore_label).sum(axis=1)  # counted positions
        self.rng = self.layout.rng(config, len(splits["train"]) + len(splits.get("test", [])))
        self.model = _build(design, config, self.pipeline, self.layout, self.rng)
        self.optimizer = OPTIMIZERS[tc.optimizer](tc)
        self.progress = Progress()
        self.order: np.ndarray | None = None  # this epoch's permutation of the training set
        if resume:
            self._restore()
        self.translator = NumpyTranslator(self.model, self.pipeline, config, self.layout,
                                          tc.threads or 1)

    @property
    def parameters(self) -> int:
        return sum(p.size for p in self.model.params)

    @property
    def train_size(self) -> int:
        return len(self.xs)

    @property
    def batches_per_epoch(self) -> int:
        """len // batch_size, as the book (the last partial batch is dropped), at least one."""
        return max(1, len(self.xs) // self.config.train.batch_size)

    # -- what EpochLoop asks of an engine ------------------------------------------------------
    def _epoch_batches(self) -> list[np.ndarray]:
        """Rows of the training set for each batch: slices of one permutation per epoch (drawn
        when the epoch starts, restored on resume)."""
        if self.progress.batch_in_epoch == 0 or self.order is None:
            self.order = self.rng.permutation(len(self.xs))
        size = self.config.train.batch_size
        return [self.order[k * size:(k + 1) * size] for k in range(self.batches_per_epoch)]

    def _update(self, group: list[np.ndarray]) -> tuple[float, int]:
        """One update on the training rows ``group[0]``: (summed loss, target tokens)."""
        tc, model = self.config.train, self.model
        batch, = group                                     # train.accumulate is 1
        ts = self.ts[batch, : self.ts_lengths[batch].max()]  # (B, T + 1): no all-pad columns
        loss = model.forward(self.xs[batch], ts)
        model.backward()
        if tc.clip_norm:
            clip_grads(model.grads, tc.clip_norm)
        self.optimizer.update(model.params, model.grads)
        tokens = int((ts[:, 1:] != self.layout.ignore_label).sum())
        return loss * tokens, tokens

    def _learning_rate(self) -> float:
        return self.config.train.lr

    # -- evaluation and checkpoints -------------------------------------------------------------
    def dev_loss(self, batch_size: int = 256) -> float:
        """Mean cross-entropy per counted target position (eos included) on the dev set."""
        total, tokens = 0.0, 0
        for start in range(0, len(self.dev_examples), batch_size):
            chunk = self.dev_examples[start:start + batch_size]
            xs = self.layout.sources([e.src for e in chunk], self.reverse)
            ts = self.layout.targets([e.tgt for e in chunk])
            n = int((ts[:, 1:] != self.layout.ignore_label).sum())
            total += self.model.forward(xs, ts) * n
            tokens += n
        return total / tokens if tokens else float("nan")

    def _save(self, best: bool) -> None:
        metadata = {"engine": "numpy", "design": self.design,
                    "source_len": str(self.layout.source_len), "target_len": str(self.layout.target_len)}
        save_numpy_weights(self.model, self.run_dir / LAST, metadata)
        state = {"optimizer": self._optimizer_state(), "rng": self.rng.get_state(),
                 "progress": dict(self.progress.__dict__), "order": self.order}
        atomic_write_bytes(self.run_dir / STATE_FILE, pickle.dumps(state))
        if best or not (self.run_dir / BEST).exists():
            save_numpy_weights(self.model, self.run_dir / BEST, metadata)

    def _optimizer_state(self) -> dict:
        """Adam's step count and moments by parameter name (SGD keeps nothing)."""
        m = getattr(self.optimizer, "m", None)
        if m is None:
            return {}
        names = self.model.param_names
        return {"iter": self.optimizer.iter, "m": dict(zip(names, m)),
                "v": dict(zip(names, self.optimizer.v))}

    def _restore(self) -> None:
        path = self.run_dir / STATE_FILE
        if not path.exists():
            raise UserError(f"{path}: nothing to resume (no numpy training state in the run folder)")
        state = pickle.loads(path.read_bytes())
        load_numpy_weights(self.model, self.run_dir / LAST)
        moments = state["optimizer"]
        if moments:
            names = self.model.param_names
            opt = self.optimizer
            opt.iter = moments["iter"]
            opt.m = [moments["m"][n] for n in names]
            opt.v = [moments["v"][n] for n in names]
            opt._tmp = [np.empty_like(x) for x in opt.m]  # Adam's scratch buffers
        self.rng.set_state(state["rng"])
        self.progress = Progress(**state["progress"])
        self.order = state["order"]

