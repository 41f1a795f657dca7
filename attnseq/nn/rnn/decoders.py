"""Recurrent decoder designs, all behind the decoder step protocol: without attention
(``none``, Sutskever et al. 2014), with the source summary at every step (``cho2014``,
``peeky``), and attending (``bahdanau``, ``luong``, ``book``).

Every decoder offers:
- ``init_state(memory) -> State``
- ``step(prev_tokens (B,), state) -> (logits (B, V), state, alignment (B, S) or None)``
- ``forward(memory, tgt_in (B, T)) -> (features (B, T, F), alignment (B, T, S) or None)``,
  the teacher-forced path; ``generator(features)`` turns features into logits.

The base's constructor builds what every design has (embedding, recurrent stack, bridge, scorer);
a design's constructor then builds its own layers and the generator over its ``feature_size``
features. A design says what joins the embedding in the recurrent input (``rnn_extra``), what
follows the recurrent step (``after_rnn``, which returns a new state when it changes one) and,
optionally, a position-wise ``output_layer``. Designs whose step does not depend on the previous
step's output (``parallel``) run the whole target in one call during training. The others are
stepped one position at a time (``teacher_forced``), and their output layer then runs once over
the whole target. A test checks that teacher forcing equals stepping for every design.

The attending designs take two options of See et al. 2017 (``build_decoder``): copy attention
(``model.copy``: a PointerGenerator of nn/copy.py mixes the output layer's distribution with the
attention over the source; the step returns log-probabilities over the extended vocabulary) and
coverage (``model.coverage``: the state's ``coverage``, the sum of the earlier alignments, enters
the scorer, so the design steps one position at a time in training too). A scorer that reads the
previous step's alignment (``locates``: location-aware attention) has it carried the same way,
in the state's ``previous``, and steps its design one position at a time too.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from ...errors import ConfigError
from ...registry import Registry
from ...schema import Variant
from ..attention import Locating, build_scorer
from ..copy import PointerGenerator, copy_step, share_source, vocabulary_ids
from ..output import OutputLayer
from ..state import Memory, State
from .cells import RecurrentLayer, build_rnn

DEFAULT_ATTENTION = Variant("general")  # the scorer of an attending design when model.attention is unset

DECODERS: Registry[type[RNNDecoder]] = Registry("decoder design", key="model.decoder")


class Bridge(nn.Module):
    """Maps the encoder's final states (Le, B, He) to the decoder's first state.

    ``copy``: h0 = encoder final state, layer by layer (the book); ``linear``: h0 of every layer
    = tanh(W h_final) of the top encoder layer; ``zero``: zeros. Memory cells start at zero.
    """

    def __init__(
        self,
        kind: str,
        encoder_size: int,
        encoder_layers: int,
        hidden_size: int,
        layers: int,
        has_cell_state: bool,
        cell_size: int = 0,
    ):
        super().__init__()
        self.kind, self.hidden_size, self.layers = kind, hidden_size, layers
        self.has_cell_state = has_cell_state
        self.cell_size = cell_size or hidden_size  # c is wider than h in a projected LSTM
        if kind == "copy" and (encoder_size != hidden_size or encoder_layers != layers):
            raise ConfigError(
                "model.bridge: copy needs the encoder and decoder to have the same hidden size "
                f"and layers (encoder {encoder_layers}x{encoder_size}, decoder {layers}x{hidden_size}); "
                "use linear or zero",
                key="model.bridge",
            )
        self.proj = nn.Linear(encoder_size, layers * hidden_size) if kind == "linear" else None

    def forward(self, final: torch.Tensor | None, batch: int, like: torch.Tensor):
        """The decoder's initial recurrent state: (L, B, H), or a tuple (h, c) for LSTMs."""
        if self.kind == "copy" and final is not None:
            h = final.contiguous()
        elif self.kind == "linear" and final is not None:
            h = torch.tanh(self.proj(final[-1]))  # (B, L * H)
            h = h.view(batch, self.layers, self.hidden_size).transpose(0, 1).contiguous()
        else:
            h = like.new_zeros(self.layers, batch, self.hidden_size)
        if self.has_cell_state:
            return (h, h.new_zeros(self.layers, batch, self.cell_size))
        return h


class RNNDecoder(nn.Module):
    """Base of the recurrent designs. Its constructor builds what every design has: the
    embedding, the recurrent stack (its input the embedding and ``extra_input_size`` more units,
    what the design joins to it), the bridge and, for designs with ``uses_attention``, the
    scorer of ``model.attention`` (queries: the recurrent outputs). A design's constructor then
    builds its own layers, sets ``feature_size`` (the width of its features) and builds the
    generator over them, last: the initialisations draw the parameters in the order they were
    made. ``options`` is the design's options instance."""

    uses_attention = True
    parallel = True  # ``step_features`` may run over the whole target at once
    embedding_first = True  # the recurrent input is [embedding; extra] (False: [extra; embedding])

    def __init__(
        self, cfg, vocab_size: int, memory_size: int, encoder_layers: int, options=None, extra_input_size: int = 0
    ):
        super().__init__()
        self.cfg, self.options = cfg, options
        self.memory_size = memory_size
        self.embed = nn.Embedding(vocab_size, cfg.embed_size, padding_idx=0)
        self.dropout = nn.Dropout(cfg.dropout)
        self.rnn = build_rnn(
            cfg.cell, cfg.embed_size + extra_input_size, cfg.hidden_size, cfg.decoder_layers, cfg.dropout
        )
        self.hidden_size = self.rnn.output_size  # the recurrent outputs (P for lstm_proj)
        self.bridge = Bridge(
            cfg.bridge,
            memory_size,
            encoder_layers,
            self.hidden_size,
            cfg.decoder_layers,
            self.rnn.has_cell_state,
            cell_size=cfg.hidden_size,
        )
        self.scorer = None
        if self.uses_attention:
            self.scorer = build_scorer(cfg.attention or DEFAULT_ATTENTION, self.hidden_size, memory_size)
        self.vocab_size = vocab_size
        self.pointer: PointerGenerator | None = None  # copy attention (add_copy)
        self.coverage_loss_weight = 0.0  # > 0 with coverage (add_coverage)
        self.coverage = False
        self.locates = isinstance(self.scorer, Locating)  # the state carries alpha_{i-1}

    def add_copy(self) -> None:
        """Copy attention (nn/copy.py): p_gen from the context, the features the output layer
        reads and the input embedding; steps return log-probabilities over the extended vocabulary."""
        self.pointer = PointerGenerator(self.memory_size, self.feature_size, self.cfg.embed_size, self.vocab_size)

    def add_coverage(self, loss_weight: float) -> None:
        """Coverage (See et al. 2017): the sum of the earlier alignments (the state's ``coverage``,
        (B, S) per hypothesis) enters the scorer, so the design steps one position at a time
        in training too; the loss adds ``loss_weight`` times the coverage loss."""
        self.scorer.add_coverage()
        self.coverage, self.coverage_loss_weight, self.parallel = True, loss_weight, False

    # -- what a design defines ------------------------------------------------------------
    def rnn_extra(self, state: State, steps: int) -> tuple[torch.Tensor | None, torch.Tensor | None]:
        """(what joins the embedding in the recurrent input (B, T', X) or None, the alignment
        (B, T', S) computed for it or None), before the recurrent step of ``steps`` positions."""
        return None, None

    def after_rnn(
        self,
        outputs: torch.Tensor,
        embedded: torch.Tensor,
        extra: torch.Tensor | None,
        alignment: torch.Tensor | None,
        state: State,
    ):
        """(features (B, T', F'), the state (a new one where the design changes it), alignment
        or None) from the recurrent outputs (B, T', H)."""
        raise NotImplementedError

    def output_layer(self, features: torch.Tensor) -> torch.Tensor:
        """Position-wise layers between ``after_rnn``'s features and the generator: (B, T, F)."""
        return features

    def step_features(self, embedded: torch.Tensor, state: State):
        """(features (B, T', F), state, alignment (B, T', S) or None) for inputs (B, T', E),
        before the output layer."""
        extra, alignment = self.rnn_extra(state, embedded.shape[1])
        inputs = embedded
        if extra is not None:
            inputs = torch.cat([embedded, extra] if self.embedding_first else [extra, embedded], -1)
        outputs, hidden = self.rnn(inputs, state["hidden"])  # (B, T', H)
        features, state, alignment = self.after_rnn(outputs, embedded, extra, alignment, state.replace(hidden=hidden))
        if self.coverage:  # one position at a time: c_{t+1} = c_t + a_t
            state = state.replace(coverage=state["coverage"] + alignment.squeeze(1))
        if self.locates:  # one position at a time: the next step reads a_t
            state = state.replace(previous=alignment.squeeze(1))
        return features, state, alignment

    def embed_tokens(self, tokens: torch.Tensor) -> torch.Tensor:
        """The embeddings of target ids (B, T) -> (B, T, E), dropout applied; a copying decoder
        reads the extended ids of copied tokens as unk."""
        if self.pointer is not None:
            tokens = vocabulary_ids(tokens, self.vocab_size)
        return self.dropout(self.embed(tokens))

    # -- the protocol ---------------------------------------------------------------------
    def init_state(self, memory: Memory) -> State:
        """The state before the first target token: the recurrent state, the target position
        and, for an attending design, the memory (one row per sentence); with coverage the
        coverage vector (B, S) (zeros), with a scorer that ``locates`` its first previous
        alignment (B, S), with copying the source's extended ids."""
        batch = memory.keys.shape[0]
        state = State(
            hidden=self.bridge(memory.final, batch, memory.keys),
            batch_dims={"hidden": 1},
            step=torch.zeros(batch, dtype=torch.long, device=memory.keys.device),
        )  # (B,) target position
        if self.scorer is not None:
            state = state.share(keys=self.scorer.prepare(memory.keys), values=memory.values, mask=memory.mask)
        if self.coverage:
            state = state.replace(coverage=memory.values.new_zeros(memory.mask.shape))  # (B, S)
        if self.locates:
            state = state.replace(previous=self.scorer.first_alignment(memory.mask, memory.values.dtype))  # (B, S)
        if self.pointer is not None:
            state = share_source(state, memory, self.vocab_size)
        return state

    def step(self, prev_tokens: torch.Tensor, state: State):
        """(logits (B, V), state, alignment (B, S) or None) after feeding ``prev_tokens`` (B,);
        a copying decoder returns log-probabilities over the extended vocabulary (B, V_ext)."""
        embedded = self.embed_tokens(prev_tokens.unsqueeze(1))  # (B, 1, E)
        features, state, alignment = self.step_features(embedded, state)
        state = advance(state)
        features = self.output_layer(features).squeeze(1)  # (B, F)
        logits = self.generator(features)  # (B, V)
        if self.pointer is not None:
            logits = copy_step(
                self.pointer, logits, features, embedded.squeeze(1), alignment.squeeze(1), "values", state
            )
        return logits, state, None if alignment is None else alignment.squeeze(1)

    def forward(self, memory: Memory, tgt_in: torch.Tensor):
        """Teacher forcing: (features (B, T, F), alignment (B, T, S) or None)."""
        features, alignment, _ = self.teacher(memory, tgt_in)
        return features, alignment

    def teacher(self, memory: Memory, tgt_in: torch.Tensor):
        """Teacher forcing: (features (B, T, F), alignment (B, T, S) or None, the input
        embeddings x_t (B, T, E)), what the loss of a copying decoder reads."""
        state = self.init_state(memory)
        embedded = self.embed_tokens(tgt_in)  # (B, T, E)
        if self.parallel:
            features, _, alignment = self.step_features(embedded, state)
        else:
            features, alignment = self.teacher_forced(embedded, state)
        return self.output_layer(features), alignment, embedded

    def teacher_forced(self, embedded: torch.Tensor, state: State):
        """The sequential designs under teacher forcing, position by position: (features before
        the output layer (B, T, F'), alignment (B, T, S) or None)."""
        features, alignments = [], []
        for step_input in embedded.split(1, dim=1):  # split, not slicing: one gradient buffer
            f, state, a = self.step_features(step_input, state)
            state = advance(state)
            features.append(f)
            alignments.append(a)
        alignment = None if alignments[0] is None else torch.cat(alignments, 1)
        return torch.cat(features, 1), alignment

    # -- shared pieces --------------------------------------------------------------------
    def attend(self, query: torch.Tensor, state: State):
        """(context (B, T', Hm), alignment (B, T', S)) for query (B, T', Hq); local scorers get
        the target positions (B, T') of the queries, a scorer that covers the coverage, one that
        locates the previous alignment. The hypotheses of one sentence attend to its memory
        together (State.attend), so beam search never copies the memory."""
        positions = state["step"].unsqueeze(1) + torch.arange(query.shape[1], device=query.device)  # (B, T')
        coverage = state["coverage"].unsqueeze(1) if self.coverage else None  # (B, 1, S): one position a step
        previous = state["previous"].unsqueeze(1) if self.locates else None  # (B, 1, S): one position a step
        return state.attend(
            self.scorer,
            query,
            state["keys"],
            state["values"],
            state["mask"],
            positions=positions,
            coverage=coverage,
            previous=previous,
        )


def advance(state: State) -> State:
    """``state`` one target position further (its ``step`` counter + 1)."""
    return state.replace(step=state["step"] + 1)


@DECODERS.register("none")
class PlainDecoder(RNNDecoder):
    """No attention: the encoder reaches the decoder only through the bridge (Sutskever et al. 2014)."""

    uses_attention = False

    def __init__(self, cfg, vocab_size, memory_size, encoder_layers, options=None):
        super().__init__(cfg, vocab_size, memory_size, encoder_layers, options)
        self.feature_size = self.hidden_size  # h_t
        self.generator = OutputLayer(self.feature_size, vocab_size)

    def after_rnn(self, outputs, embedded, extra, alignment, state):
        return self.dropout(outputs), state, None


@dataclass
class BookOptions:
    context_into_input: bool = False  # also feed the context into the next step (section 4.2)


@DECODERS.register("book", options=BookOptions)
class BookDecoder(RNNDecoder):
    """The book's chapter 8: attend with the current state; concat(context, h) into the output layer.

    ``context_into_input`` also feeds the previous context into the next step (section 4.2).
    """

    def __init__(self, cfg, vocab_size, memory_size, encoder_layers, options):
        feeds = options.context_into_input
        super().__init__(
            cfg, vocab_size, memory_size, encoder_layers, options, extra_input_size=memory_size if feeds else 0
        )  # the previous context
        self.parallel = not feeds
        self.feature_size = memory_size + self.hidden_size  # [c_t; h_t]
        self.generator = OutputLayer(self.feature_size, vocab_size)

    def init_state(self, memory):
        state = super().init_state(memory)
        if not self.options.context_into_input:
            return state
        return state.replace(context=memory.values.new_zeros(memory.values.shape[0], 1, self.memory_size))

    def rnn_extra(self, state, steps):
        return (state["context"] if self.options.context_into_input else None), None  # (B, 1, Hm)

    def after_rnn(self, outputs, embedded, extra, alignment, state):
        context, alignment = self.attend(outputs, state)  # (B, T', Hm), (B, T', S)
        if self.options.context_into_input:
            state = state.replace(context=context)
        return self.dropout(torch.cat([context, outputs], -1)), state, alignment


@dataclass
class LuongOptions:
    input_feeding: bool = True  # feed the attentional state into the next step


@DECODERS.register("luong", options=LuongOptions)
class LuongDecoder(RNNDecoder):
    """Luong et al. 2015: attend with the current state h_t; attentional state
    h~_t = tanh(W_c [c_t; h_t]) feeds the output layer and, with input feeding, the next step."""

    def __init__(self, cfg, vocab_size, memory_size, encoder_layers, options):
        feeds = options.input_feeding
        super().__init__(
            cfg, vocab_size, memory_size, encoder_layers, options, extra_input_size=cfg.hidden_size if feeds else 0
        )  # h~_{t-1}
        self.parallel = not feeds
        self.W_c = nn.Linear(memory_size + self.hidden_size, cfg.hidden_size, bias=False)
        self.feature_size = cfg.hidden_size  # h~_t
        self.generator = OutputLayer(self.feature_size, vocab_size)

    def init_state(self, memory):
        state = super().init_state(memory)
        if not self.options.input_feeding:
            return state
        return state.replace(feed=memory.values.new_zeros(memory.values.shape[0], 1, self.cfg.hidden_size))

    def rnn_extra(self, state, steps):
        return (state["feed"] if self.options.input_feeding else None), None  # (B, 1, H)

    def after_rnn(self, outputs, embedded, extra, alignment, state):
        context, alignment = self.attend(outputs, state)  # (B, T', Hm)
        attentional = torch.tanh(self.W_c(torch.cat([context, outputs], -1)))  # (B, T', H)
        attentional = self.dropout(attentional)
        if self.options.input_feeding:
            state = state.replace(feed=attentional)
        return attentional, state, alignment


@DECODERS.register("bahdanau")
class BahdanauDecoder(RNNDecoder):
    """Bahdanau et al. 2014: attend with the previous state s_{t-1}; the context enters the
    recurrent input; a readout tanh(W_r [s_t; c_t; y_{t-1}]) feeds the output layer."""

    parallel = False

    def __init__(self, cfg, vocab_size, memory_size, encoder_layers, options=None):
        super().__init__(cfg, vocab_size, memory_size, encoder_layers, options, extra_input_size=memory_size)  # c_t
        self.W_r = nn.Linear(self.hidden_size + memory_size + cfg.embed_size, cfg.hidden_size)
        self.feature_size = cfg.hidden_size  # the readout
        self.generator = OutputLayer(self.feature_size, vocab_size)

    def rnn_extra(self, state, steps):
        previous = RecurrentLayer.hidden_of(state["hidden"])[-1].unsqueeze(1)  # s_{t-1} (B, 1, H)
        return self.attend(previous, state)  # context (B, 1, Hm), alignment (B, 1, S)

    def after_rnn(self, outputs, embedded, extra, alignment, state):
        return torch.cat([outputs, extra, embedded], -1), state, alignment  # [s_t; c_t; y_{t-1}]

    def output_layer(self, features):
        return self.dropout(torch.tanh(self.W_r(features)))  # the readout, over all positions at once


# -- the source summary c at every step, no attention (Cho et al. 2014; the book's Peeky) ----------
# One fixed vector c, the encoder's summary of the source, enters the recurrent input and the
# output layer at every step instead of only the first state. Neither design depends on its
# previous outputs, so both run the whole target in one call during training.
def summary_of(memory: Memory) -> torch.Tensor:
    """The source summary c (B, H): the top encoder layer's final state, or, for encoders
    without final states, the mean of the values over real tokens."""
    if memory.final is not None:
        return memory.final[-1]
    mask = memory.mask.unsqueeze(-1).to(memory.values.dtype)  # (B, S, 1)
    return (memory.values * mask).sum(1) / mask.sum(1).clamp(min=1)


class SummaryDecoder(RNNDecoder):
    """Base: c joins the embedding in the recurrent input; the shared ``state["summary"]``
    (B, 1, Hm) holds it, one row per sentence."""

    uses_attention = False

    def __init__(self, cfg, vocab_size, memory_size, encoder_layers, options=None):
        super().__init__(cfg, vocab_size, memory_size, encoder_layers, options, extra_input_size=memory_size)  # c

    def init_state(self, memory: Memory) -> State:
        return super().init_state(memory).share(summary=summary_of(memory).unsqueeze(1))  # (B, 1, Hm)

    def rnn_extra(self, state, steps):
        """c of every hypothesis, repeated for ``steps`` positions: (B, T', Hm)."""
        c = state.per_hypothesis("summary")
        return c.expand(c.shape[0], steps, c.shape[2]), None


@DECODERS.register("cho2014")
class ChoDecoder(SummaryDecoder):
    """Cho et al. 2014: s_t = f(s_{t-1}, y_{t-1}, c); the output layer sees
    tanh(W_o [s_t; c; y_{t-1}]) (the paper uses a maxout there). The first state comes from c
    through the bridge (``bridge: linear`` gives the paper's s_0 = tanh(V c))."""

    def __init__(self, cfg, vocab_size, memory_size, encoder_layers, options=None):
        super().__init__(cfg, vocab_size, memory_size, encoder_layers, options)
        self.W_o = nn.Linear(self.hidden_size + memory_size + cfg.embed_size, cfg.hidden_size)
        self.feature_size = cfg.hidden_size  # tanh(W_o [s_t; c; y_{t-1}])
        self.generator = OutputLayer(self.feature_size, vocab_size)

    def after_rnn(self, outputs, embedded, extra, alignment, state):
        return torch.cat([outputs, extra, embedded], -1), state, None  # [s_t; c; y_{t-1}]

    def output_layer(self, features):
        return self.dropout(torch.tanh(self.W_o(features)))


@DECODERS.register("peeky")
class PeekyDecoder(SummaryDecoder):
    """The book's chapter 7 Peeky decoder: LSTM input concat(h_enc, embedding); the output
    affine reads concat(h_enc, LSTM output). With ``bridge: copy`` the LSTM also starts from
    h_enc, as in the book."""

    embedding_first = False  # the book's order: [h_enc; embedding]

    def __init__(self, cfg, vocab_size, memory_size, encoder_layers, options=None):
        super().__init__(cfg, vocab_size, memory_size, encoder_layers, options)
        self.feature_size = memory_size + self.hidden_size  # [h_enc; h_t]
        self.generator = OutputLayer(self.feature_size, vocab_size)

    def after_rnn(self, outputs, embedded, extra, alignment, state):
        return self.dropout(torch.cat([extra, outputs], -1)), state, None


def build_decoder(cfg, vocab_size: int, memory_size: int, encoder_layers: int) -> RNNDecoder:
    """The decoder design ``cfg.decoder`` names, with copy attention (``model.copy``) and
    coverage (``model.coverage``) where the config asks for them; stepped one position at a time
    in training where its scorer reads the previous alignment."""
    decoder = DECODERS.build(cfg.decoder, "model.decoder", cfg, vocab_size, memory_size, encoder_layers)
    if decoder.locates:  # each step's score reads the alignment of the step before
        decoder.parallel = False
    if cfg.coverage:
        decoder.add_coverage(cfg.coverage_loss_weight)
    if cfg.copy:
        decoder.add_copy()
    return decoder
