"""Seq2seq models of chapters 7-8: baseline, Peeky, attention, and attention with a BiLSTM encoder.

Every model has ``forward(xs, ts) -> loss``, ``backward()`` and a batched greedy
``generate(xs, start_id, length) -> ids (N, length)``.  ``ts`` holds the decoder's start symbol
followed by the answer: the decoder reads ``ts[:, :-1]`` and is scored against ``ts[:, 1:]``.

Parameters are reachable by name (``named_params()``, ``named_grads()``, ``load_params()``)::

    encoder.embed.W   (V, D)
    encoder.lstm.Wx   (D, 4H)      gates side by side: f, g, i, o
    encoder.lstm.Wh   (H, 4H)
    encoder.lstm.b    (4H,)
    decoder.embed.W   (V, D)       V: the target vocabulary when it differs (target_vocab_size)
    decoder.lstm.Wx   (D, 4H)      Peeky: (H + D, 4H), rows [encoder state; embedding]
    decoder.lstm.Wh   (H, 4H)
    decoder.lstm.b    (4H,)
    decoder.affine.W  (H, V)       Peeky: (2H, V), rows [encoder state; LSTM output]
                                   attention: (2H, V), rows [context; LSTM output]
    decoder.affine.b  (V,)

Weights multiply from the right (``x @ W``, ``W`` of shape (in, out)).  The BiLSTM-encoder
model replaces the encoder LSTM by ``encoder.lstm.fwd.{Wx,Wh,b}`` and ``encoder.lstm.bwd.{...}``,
each direction of width H/2 (see BiAttentionEncoder).

``layers`` is the layer set the models are built from: the book's layers of scratch/layers.py
(the default, ``BookLayers``: the code to read beside the book), or the module scratch.fused,
their fused twins of the same names, which the NumPy engine trains and decodes with
(``build_model(..., layers=fused)``): the same functions, faster.  Two options only the fused
layers act on reach them through ``run_lstm``: ``cache=False`` when generating (keep nothing for
backward) and the sources' shared left padding (``shared_prefix``); the book's LSTMs take neither.

Initialisation follows the book: embeddings randn/100; LSTM and affine weights
randn/sqrt(fan_in); biases zero; values drawn in float64 and cast.  Draw order: encoder embedding,
encoder Wx, Wh (forward then backward direction for the BiLSTM), decoder embedding, Wx, Wh,
affine W.  ``rng=None`` draws from NumPy's global generator, so after ``np.random.seed(s)`` the
weights equal the book's for the same seed; any object with ``standard_normal`` also works.
"""

from __future__ import annotations

import numpy as np

from .layers import TimeAffine, TimeAttention, TimeBiLSTM, TimeEmbedding, TimeLSTM, TimeSoftmaxWithLoss

__all__ = [
    "BookLayers",
    "Encoder",
    "Decoder",
    "Seq2seq",
    "PeekyDecoder",
    "PeekySeq2seq",
    "AttentionEncoder",
    "AttentionDecoder",
    "AttentionSeq2seq",
    "BiAttentionEncoder",
    "BiAttentionSeq2seq",
    "MODELS",
    "build_model",
    "shared_prefix",
]


# --------------------------------------------------------------------------- helpers


class BookLayers:
    """The default layer set: the six classes the models build, the book's (scratch/layers.py).

    Any namespace with these names is a layer set: the modules scratch.layers and scratch.fused
    are too.  (This class stands for the first because models.py cannot import a sibling module
    as an object without an import circle through the package.)
    """

    TimeEmbedding, TimeLSTM, TimeBiLSTM = TimeEmbedding, TimeLSTM, TimeBiLSTM
    TimeAttention, TimeAffine, TimeSoftmaxWithLoss = TimeAttention, TimeAffine, TimeSoftmaxWithLoss


def _normal(rng, shape, scale, dtype):
    """Standard-normal draws (float64) times scale, cast to dtype, as the book does."""
    rng = np.random if rng is None else rng
    return (rng.standard_normal(shape) / scale).astype(dtype)


def _start_ids(start_id, N: int) -> np.ndarray:
    """The decoder's first input as an (N, 1) array: one id for all, or one per sample."""
    if np.ndim(start_id) == 0:
        return np.full((N, 1), int(start_id), dtype=np.int64)
    return np.asarray(start_id, dtype=np.int64).reshape(N, 1)


def _embed_lstm(rng, V: int, D: int, I: int, H: int, dtype):
    """The book's draws for an embedding (V, D) and an LSTM with I inputs and H units, in the
    book's order: embedding N(0,1)/100, Wx (I, 4H) and Wh (H, 4H) N(0,1)/sqrt(fan_in), b = 0."""
    embed_W = _normal(rng, (V, D), 100, dtype)
    lstm_Wx = _normal(rng, (I, 4 * H), np.sqrt(I), dtype)
    lstm_Wh = _normal(rng, (H, 4 * H), np.sqrt(H), dtype)
    return embed_W, lstm_Wx, lstm_Wh, np.zeros(4 * H, dtype)


def shared_prefix(ids: np.ndarray) -> np.ndarray:
    """(N,) length of each row's leading run of the most common first id (the left padding).

    Over those steps every such row feeds the encoder the same embedding from the same zero
    state, so the fused TimeLSTM computes them once for the batch (``forward(shared=...)``).
    """
    pad = np.bincount(ids[:, 0]).argmax()
    return np.cumprod(ids == pad, axis=1).sum(axis=1)


def run_lstm(lstm, xs: np.ndarray, cache: bool = True, shared: np.ndarray | None = None) -> np.ndarray:
    """``lstm.forward(xs)``: (N, T, D) -> (N, T, H). A fused LSTM (scratch/fused.py) is also told
    whether a backward follows (``cache``) and which prefix the samples share (``shared``)."""
    from .fused import FUSED_LSTMS

    if isinstance(lstm, FUSED_LSTMS):
        return lstm.forward(xs, cache, shared)
    return lstm.forward(xs)


class _Module:
    """Gathers the params and grads of named parts, so each one has a dotted name."""

    def _collect(self, **parts) -> None:
        self.params, self.grads, self.param_names = [], [], []
        for prefix, part in parts.items():
            for name, p, g in zip(part.param_names, part.params, part.grads):
                self.params.append(p)
                self.grads.append(g)
                self.param_names.append(f"{prefix}.{name}")

    def named_params(self) -> dict[str, np.ndarray]:
        """Name -> parameter array (the live arrays: writing into them changes the model)."""
        return dict(zip(self.param_names, self.params))

    def named_grads(self) -> dict[str, np.ndarray]:
        """Name -> gradient array of the last backward."""
        return dict(zip(self.param_names, self.grads))

    def load_params(self, values: dict[str, np.ndarray]) -> None:
        """Copy arrays into the parameters by name; names and shapes must match exactly."""
        own = self.named_params()
        if set(values) != set(own):
            missing, extra = sorted(set(own) - set(values)), sorted(set(values) - set(own))
            raise KeyError(f"parameter names differ: missing {missing}, unexpected {extra}")
        for name, p in own.items():
            v = np.asarray(values[name])
            if v.shape != p.shape:
                raise ValueError(f"{name}: shape {v.shape}, expected {p.shape}")
            p[...] = v


# --------------------------------------------------------------------------- chapter 7


class Encoder(_Module):
    """Embedding + LSTM over the source ids (N, S); returns the last hidden state (N, H).

    ``share_prefix`` (default on) tells the LSTM which leading steps the sources share (see
    shared_prefix), which the fused TimeLSTM computes once per batch; the results are the same
    either way.  ``cache=False``: no backward follows (generating).
    """

    share_prefix = True

    def __init__(
        self, vocab_size: int, wordvec_size: int, hidden_size: int, dtype=np.float32, rng=None, layers=BookLayers
    ):
        V, D, H = vocab_size, wordvec_size, hidden_size
        embed_W, lstm_Wx, lstm_Wh, lstm_b = _embed_lstm(rng, V, D, D, H, dtype)
        self.embed = layers.TimeEmbedding(embed_W)
        self.lstm = layers.TimeLSTM(lstm_Wx, lstm_Wh, lstm_b, stateful=False)
        self._collect(embed=self.embed, lstm=self.lstm)
        self.hs = None

    def _lstm_forward(self, xs: np.ndarray, cache: bool) -> np.ndarray:
        shared = shared_prefix(xs) if self.share_prefix else None
        xs = self.embed.forward(xs)  # (N, S, D)
        return run_lstm(self.lstm, xs, cache, shared)  # (N, S, H)

    def forward(self, xs: np.ndarray, cache: bool = True) -> np.ndarray:
        self.hs = self._lstm_forward(xs, cache)  # (N, S, H)
        return self.hs[:, -1, :]

    def backward(self, dh: np.ndarray) -> None:
        dhs = np.zeros_like(self.hs)
        dhs[:, -1, :] = dh
        self.embed.backward(self.lstm.backward(dhs))


class Decoder(_Module):
    """Embedding + LSTM started from the encoder state + affine to vocabulary scores."""

    def __init__(
        self, vocab_size: int, wordvec_size: int, hidden_size: int, dtype=np.float32, rng=None, layers=BookLayers
    ):
        V, D, H = vocab_size, wordvec_size, hidden_size
        lstm_in, affine_in = self._widths(D, H)
        embed_W, lstm_Wx, lstm_Wh, lstm_b = _embed_lstm(rng, V, D, lstm_in, H, dtype)
        affine_W = _normal(rng, (affine_in, V), np.sqrt(affine_in), dtype)
        affine_b = np.zeros(V, dtype)
        self.embed = layers.TimeEmbedding(embed_W)
        self.lstm = layers.TimeLSTM(lstm_Wx, lstm_Wh, lstm_b, stateful=True)
        self.affine = layers.TimeAffine(affine_W, affine_b)
        self._collect(embed=self.embed, lstm=self.lstm, affine=self.affine)

    @staticmethod
    def _widths(D: int, H: int) -> tuple[int, int]:
        """Input widths of the LSTM and of the output affine: here the embedding and h."""
        return D, H

    def _step(self, xs: np.ndarray, h: np.ndarray, cache: bool = True) -> np.ndarray:
        """Scores (N, T, V) for inputs xs (N, T) from the LSTM's current state; h is the
        encoder state (N, H), which designs like Peeky read at every step; ``cache=False``:
        no backward follows (generating)."""
        out = self.embed.forward(xs)  # (N, T, D)
        out = run_lstm(self.lstm, out, cache)  # (N, T, H)
        return self.affine.forward(out)  # (N, T, V)

    def forward(self, xs: np.ndarray, h: np.ndarray) -> np.ndarray:
        """Scores (N, T, V) for the decoder inputs xs (N, T), starting from state h (N, H)."""
        self.lstm.set_state(h)
        return self._step(xs, h)

    def backward(self, dscore: np.ndarray) -> np.ndarray:
        """Returns the gradient for the initial state h (N, H)."""
        dout = self.affine.backward(dscore)
        self.embed.backward(self.lstm.backward(dout))
        return self.lstm.dh

    def generate(self, h: np.ndarray, start_id, length: int) -> np.ndarray:
        """Greedy ids (N, length) from state h (N, H)."""
        N = h.shape[0]
        self.lstm.set_state(h)
        ids = _start_ids(start_id, N)
        sampled = np.empty((N, length), dtype=np.int64)
        for k in range(length):
            ids = self._step(ids, h, cache=False).argmax(axis=2)  # (N, 1)
            sampled[:, k] = ids[:, 0]
        return sampled


class Seq2seq(_Module):
    """Chapter 7's baseline: the encoder's last state starts the decoder."""

    encoder_class = Encoder
    decoder_class = Decoder

    def __init__(
        self,
        vocab_size: int,
        wordvec_size: int,
        hidden_size: int,
        dtype=np.float32,
        rng=None,
        ignore_label: int = -1,
        target_vocab_size: int | None = None,
        layers=BookLayers,
    ):
        self.encoder = self.encoder_class(vocab_size, wordvec_size, hidden_size, dtype=dtype, rng=rng, layers=layers)
        self.decoder = self.decoder_class(
            target_vocab_size or vocab_size, wordvec_size, hidden_size, dtype=dtype, rng=rng, layers=layers
        )
        self.softmax = layers.TimeSoftmaxWithLoss(ignore_label)
        self._collect(encoder=self.encoder, decoder=self.decoder)

    def forward(self, xs: np.ndarray, ts: np.ndarray) -> float:
        """Mean cross-entropy of the answer ts[:, 1:] given sources xs (N, S) and ts (N, T+1)."""
        decoder_xs, decoder_ts = ts[:, :-1], ts[:, 1:]
        h = self.encoder.forward(xs)
        score = self.decoder.forward(decoder_xs, h)
        return self.softmax.forward(score, decoder_ts)

    def backward(self, dout: float = 1.0) -> None:
        dscore = self.softmax.backward(dout)
        dh = self.decoder.backward(dscore)
        self.encoder.backward(dh)

    def generate(self, xs: np.ndarray, start_id, length: int) -> np.ndarray:
        """Greedy answers (N, length) for the sources xs (N, S), all decoded together."""
        h = self.encoder.forward(xs, cache=False)
        return self.decoder.generate(h, start_id, length)


# --------------------------------------------------------------------------- Peeky


class PeekyDecoder(Decoder):
    """Decoder that also feeds the encoder state h to the LSTM and to the affine at every step."""

    @staticmethod
    def _widths(D: int, H: int) -> tuple[int, int]:
        return H + D, H + H  # Wx rows: [h; embedding]; affine rows: [h; LSTM output]

    def _step(self, xs: np.ndarray, h: np.ndarray, cache: bool = True) -> np.ndarray:
        N, T = xs.shape
        peek = np.broadcast_to(h[:, None, :], (N, T, h.shape[1]))  # (N, T, H)
        out = self.embed.forward(xs)  # (N, T, D)
        out = run_lstm(self.lstm, np.concatenate((peek, out), axis=2), cache)  # (N, T, H)
        return self.affine.forward(np.concatenate((peek, out), axis=2))  # (N, T, V)

    def backward(self, dscore: np.ndarray) -> np.ndarray:
        H = self.lstm.params[1].shape[0]
        dout = self.affine.backward(dscore)  # (N, T, 2H)
        dpeek = dout[:, :, :H].sum(axis=1)
        dout = self.lstm.backward(dout[:, :, H:])  # (N, T, H + D)
        dpeek += dout[:, :, :H].sum(axis=1)
        self.embed.backward(dout[:, :, H:])
        return self.lstm.dh + dpeek


class PeekySeq2seq(Seq2seq):
    """Chapter 7's Peeky seq2seq (baseline encoder, PeekyDecoder)."""

    decoder_class = PeekyDecoder


# --------------------------------------------------------------------------- chapter 8


class AttentionEncoder(Encoder):
    """Encoder that returns the hidden states of every step, hs (N, S, H)."""

    def forward(self, xs: np.ndarray, cache: bool = True) -> np.ndarray:
        self.hs = self._lstm_forward(xs, cache)  # (N, S, H)
        return self.hs

    def backward(self, dhs: np.ndarray) -> None:
        self.embed.backward(self.lstm.backward(dhs))


class AttentionDecoder(Decoder):
    """Decoder with dot-product attention over the encoder states.

    At step t: LSTM state h_t; context c_t = sum_s softmax_s(h_t . hs_s) hs_s; scores =
    [c_t, h_t] @ W + b.  The LSTM starts from the last encoder state unless ``h`` is given.
    """

    def __init__(
        self, vocab_size: int, wordvec_size: int, hidden_size: int, dtype=np.float32, rng=None, layers=BookLayers
    ):
        super().__init__(vocab_size, wordvec_size, hidden_size, dtype, rng, layers)
        self.attention = layers.TimeAttention()
        self.dh = None  # gradient for the initial state, after backward
        self.attention_weights = None  # (N, length, S) from the last generate
        self._h_given = False

    @staticmethod
    def _widths(D: int, H: int) -> tuple[int, int]:
        return D, 2 * H  # affine rows: [context; h]

    def _step(self, xs, enc_hs, cache: bool = True) -> np.ndarray:
        out = self.embed.forward(xs)  # (N, T, D)
        dec_hs = run_lstm(self.lstm, out, cache)  # (N, T, H)
        c = self.attention.forward(enc_hs, dec_hs)  # (N, T, H)
        out = np.concatenate((c, dec_hs), axis=2)  # (N, T, 2H)
        return self.affine.forward(out)  # (N, T, V)

    def forward(self, xs: np.ndarray, enc_hs: np.ndarray, h: np.ndarray | None = None):
        self._h_given = h is not None
        self.lstm.set_state(enc_hs[:, -1] if h is None else h)
        return self._step(xs, enc_hs)

    def backward(self, dscore: np.ndarray) -> np.ndarray:
        """Returns the gradient for enc_hs (N, S, H); ``self.dh`` is that of the initial state."""
        dout = self.affine.backward(dscore)  # (N, T, 2H)
        H = dout.shape[2] // 2
        denc_hs, ddec_hs = self.attention.backward(dout[:, :, :H])
        ddec_hs += dout[:, :, H:]
        self.embed.backward(self.lstm.backward(ddec_hs))
        self.dh = self.lstm.dh
        if not self._h_given:
            denc_hs[:, -1] += self.dh
        return denc_hs

    def generate(self, enc_hs: np.ndarray, start_id, length: int, h: np.ndarray | None = None) -> np.ndarray:
        N = enc_hs.shape[0]
        self.lstm.set_state(enc_hs[:, -1] if h is None else h)
        ids = _start_ids(start_id, N)
        sampled = np.empty((N, length), dtype=np.int64)
        weights = []
        for k in range(length):
            ids = self._step(ids, enc_hs, cache=False).argmax(axis=2)
            sampled[:, k] = ids[:, 0]
            weights.append(self.attention.attention_weights)
        self.attention_weights = np.concatenate(weights, axis=1) if weights else None
        return sampled


class AttentionSeq2seq(Seq2seq):
    """Chapter 8's seq2seq with attention."""

    encoder_class = AttentionEncoder
    decoder_class = AttentionDecoder


class BiAttentionEncoder(AttentionEncoder):
    """Encoder with a bidirectional LSTM (section 4.1 of chapter 8): hs (N, S, H).

    Each direction has H/2 units, so hs_s = [forward h_s, backward h_s] has width H and the
    attention decoder is unchanged.  ``final_state(hs)`` joins the two directions' last states
    (forward at step S-1, backward at step 0) to start the decoder.
    """

    def __init__(
        self, vocab_size: int, wordvec_size: int, hidden_size: int, dtype=np.float32, rng=None, layers=BookLayers
    ):
        V, D, H = vocab_size, wordvec_size, hidden_size
        if H % 2:
            raise ValueError("hidden_size must be even: each direction gets half")
        Hd = H // 2
        embed_W = _normal(rng, (V, D), 100, dtype)
        weights = []
        for _ in range(2):  # forward, backward
            weights += [
                _normal(rng, (D, 4 * Hd), np.sqrt(D), dtype),
                _normal(rng, (Hd, 4 * Hd), np.sqrt(Hd), dtype),
                np.zeros(4 * Hd, dtype),
            ]
        self.embed = layers.TimeEmbedding(embed_W)
        self.lstm = layers.TimeBiLSTM(*weights)
        self._collect(embed=self.embed, lstm=self.lstm)
        self.hs = None

    @staticmethod
    def final_state(hs: np.ndarray) -> np.ndarray:
        Hd = hs.shape[2] // 2
        return np.concatenate((hs[:, -1, :Hd], hs[:, 0, Hd:]), axis=1)  # (N, H)

    def backward(self, dhs: np.ndarray, dh: np.ndarray | None = None) -> None:
        """dhs (N, S, H) for the states; dh (N, H) for final_state(hs), if it was used."""
        if dh is not None:
            Hd = dhs.shape[2] // 2
            dhs = dhs.copy()
            dhs[:, -1, :Hd] += dh[:, :Hd]
            dhs[:, 0, Hd:] += dh[:, Hd:]
        self.embed.backward(self.lstm.backward(dhs))


class BiAttentionSeq2seq(AttentionSeq2seq):
    """Attention seq2seq whose encoder is a bidirectional LSTM; the decoder starts from both
    directions' final states."""

    encoder_class = BiAttentionEncoder

    def forward(self, xs: np.ndarray, ts: np.ndarray) -> float:
        decoder_xs, decoder_ts = ts[:, :-1], ts[:, 1:]
        enc_hs = self.encoder.forward(xs)
        score = self.decoder.forward(decoder_xs, enc_hs, self.encoder.final_state(enc_hs))
        return self.softmax.forward(score, decoder_ts)

    def backward(self, dout: float = 1.0) -> None:
        denc_hs = self.decoder.backward(self.softmax.backward(dout))
        self.encoder.backward(denc_hs, self.decoder.dh)

    def generate(self, xs: np.ndarray, start_id, length: int) -> np.ndarray:
        enc_hs = self.encoder.forward(xs, cache=False)
        return self.decoder.generate(enc_hs, start_id, length, h=self.encoder.final_state(enc_hs))


MODELS = {"baseline": Seq2seq, "peeky": PeekySeq2seq, "attention": AttentionSeq2seq, "bi-attention": BiAttentionSeq2seq}


def build_model(
    name: str,
    vocab_size: int,
    wordvec_size: int = 16,
    hidden_size: int = 256,
    dtype=np.float32,
    rng=None,
    ignore_label: int = -1,
    target_vocab_size: int | None = None,
    layers=BookLayers,
) -> Seq2seq:
    """One of MODELS by name ("baseline", "peeky", "attention", "bi-attention").

    ``vocab_size`` is the source vocabulary; ``target_vocab_size`` (default: the same, as in the
    book) sizes the decoder's embedding and output affine; ``layers``: the layer set, the book's
    (BookLayers, or the module scratch.layers) or the module scratch.fused (the engine's)."""
    try:
        cls = MODELS[name]
    except KeyError:
        raise ValueError(f"unknown model {name!r}; choose from {sorted(MODELS)}") from None
    return cls(
        vocab_size,
        wordvec_size,
        hidden_size,
        dtype=dtype,
        rng=rng,
        ignore_label=ignore_label,
        target_vocab_size=target_vocab_size,
        layers=layers,
    )
