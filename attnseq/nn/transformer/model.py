"""The Transformer (Vaswani et al. 2017), behind the same decoder step protocol as the RNN decoders.

Sizes come from ModelConfig: d_model = ``model.hidden_size``; ``model.layers`` layers in the encoder
and in the decoder; ``model.heads`` heads of d_model / heads dimensions each; ``model.ff_size``
hidden units in the position-wise feed-forward; ``model.dropout`` on the embeddings, on every
sublayer's output, on the attention weights and inside the feed-forward; ``model.pre_norm`` puts
layer norm before each sublayer (x + f(LN(x)), with a final LN on each stack) or after the
residual sum (LN(x + f(x)), the paper's); ``model.positional`` chooses the positional encoding
(positional.py). The layers are in layers.py.

The embeddings are added to the residual stream, so they are d_model wide.

Tied embeddings (``model.tie_embeddings``): with ``decoder`` the decoder's token embedding is the
generator's weight; with ``all``, which needs one vocabulary for both sides (``data.shared_vocab``),
the encoder's token embedding is the same matrix too.

Target padding needs no mask of its own: it is at the end, so causal attention never reaches
it from a real position.

Decoding: ``init_state`` projects the memory into each layer's cross-attention keys and values
once; each ``step`` feeds one token and appends its self-attention keys and values to a per-layer
cache, so a step costs one new position. With ``use_cache = False`` (set before ``init_state``)
every step recomputes the whole prefix instead, for comparison.
"""

from __future__ import annotations

import dataclasses

import torch
from torch import nn

from ...errors import ConfigError
from ..copy import PointerGenerator, copy_step, share_source, vocabulary_ids
from ..frontends.base import FRONTENDS, Frontend, build_frontend
from ..model import ARCHS, Seq2Seq, embedding_ties
from ..output import OutputLayer
from ..state import Memory, RowLayout, State
from ..views import ShowsCrossAttention, ShowsSelfAttention
from .layers import Cache, DecoderLayer, EncoderLayer, causal_mask, padding_mask
from .positional import POSITIONAL, TransformerEmbedding


# -- stacks ----------------------------------------------------------------------------------------
class TransformerEncoder(ShowsSelfAttention, nn.Module):
    """Source ids (B, S) -> Memory(keys = values = outputs (B, S, D), mask, final=None);
    ``self_attention`` gives the weights of every layer and head, for display. With a
    ``frontend`` (nn/frontends: a source that is a file) the source is features (B, L, F), and
    the layers run over the cells the frontend makes of them (positions its own)."""

    def __init__(self, cfg, vocab_size: int, frontend: Frontend | None = None):
        super().__init__()
        self.frontend = frontend
        if frontend is None:
            self.embed = TransformerEmbedding(vocab_size, cfg.hidden_size, cfg.positional, cfg.dropout)
        self.layers = nn.ModuleList(EncoderLayer(cfg) for _ in range(cfg.layers))
        self.norm = nn.LayerNorm(cfg.hidden_size) if cfg.pre_norm else nn.Identity()
        self.output_size = cfg.hidden_size

    def inputs(self, src: torch.Tensor, src_mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(the first layer's inputs (B, S, D), their mask (B, S)): the embedded ids, or the
        frontend's cells of the features."""
        if self.frontend is None:
            return self.embed(src), src_mask
        return self.frontend.cells(src, src_mask)

    def forward(self, src: torch.Tensor, src_mask: torch.Tensor) -> Memory:
        x, src_mask = self.inputs(src, src_mask)  # (B, S, D), (B, S)
        mask = padding_mask(src_mask)  # (B, 1, 1, S)
        for layer in self.layers:
            x = layer(x, mask)
        x = self.norm(x)
        return Memory(keys=x, values=x, mask=src_mask, final=None)

    def self_attention(self, src: torch.Tensor, src_mask: torch.Tensor) -> torch.Tensor:
        """Every layer's and head's self-attention over the source: (B, layers, heads, S, S)."""
        x, src_mask = self.inputs(src, src_mask)  # (B, S, D), (B, S)
        mask = padding_mask(src_mask)  # (B, 1, 1, S)
        weights = []
        for layer in self.layers:
            x, w = layer.forward_with_weights(x, mask)
            weights.append(w)
        return torch.stack(weights, 1)


class TransformerDecoder(ShowsCrossAttention, nn.Module):
    """The decoder stack behind the step protocol (see attnseq/nn/rnn/decoders.py).

    - ``init_state(memory) -> State``
    - ``step(prev_tokens (B,), state) -> (logits (B, V), state, alignment (B, S))``: alignment is
      the last layer's cross-attention averaged over heads;
    - ``step_heads(prev_tokens, state) -> (logits, state, weights (B, layers, heads, S))``;
    - ``forward(memory, tgt_in (B, T), need_weights=False) -> (features (B, T, D), alignment
      (B, T, S) or None)``, the teacher-forced path (one pass, causal mask);
    - ``cross_attention(memory, tgt_in) -> (B, layers, heads, T, S)``, every head, teacher-forced;
    - ``generator``: features -> logits; ``feature_size`` = d_model.

    The State holds ``cross_keys``/``cross_values`` (tuples over layers of (B, h, S, dk)), the
    source ``mask`` (B, S), ``step`` (the position of the next input token) and, with the cache,
    ``self_keys``/``self_values`` (tuples over layers of (B, h, t, dk)); without it ``tokens``
    (B, t), the prefix fed so far.
    """

    def __init__(self, cfg, vocab_size: int):
        super().__init__()
        self.heads, self.head_size = cfg.heads, cfg.hidden_size // cfg.heads
        self.embed = TransformerEmbedding(vocab_size, cfg.hidden_size, cfg.positional, cfg.dropout)
        self.layers = nn.ModuleList(DecoderLayer(cfg) for _ in range(cfg.layers))
        self.norm = nn.LayerNorm(cfg.hidden_size) if cfg.pre_norm else nn.Identity()
        self.feature_size = cfg.hidden_size
        self.generator = OutputLayer(cfg.hidden_size, vocab_size)
        self.vocab_size = vocab_size
        # copy attention (nn/copy.py) over the last layer's cross-attention averaged over heads
        d = cfg.hidden_size
        self.pointer = PointerGenerator(d, d, d, vocab_size) if cfg.copy else None
        self.use_cache = True

    # -- shared pieces ----------------------------------------------------------------------------
    def project_memory(self, memory: Memory) -> tuple[tuple[torch.Tensor, ...], tuple[torch.Tensor, ...]]:
        """Each layer's cross-attention keys and values of the memory: tuples of (B, h, S, dk)."""
        pairs = [layer.cross_attn.project(memory.keys, memory.values) for layer in self.layers]
        return tuple(k for k, _ in pairs), tuple(v for _, v in pairs)

    def run(
        self,
        x: torch.Tensor,
        self_mask: torch.Tensor | None,
        past: list[Cache] | None,
        cross_keys,
        cross_values,
        cross_mask: torch.Tensor,
        weights_from: int,
        row_layout: RowLayout = RowLayout(),  # noqa: B008 (frozen)
        past_rows: torch.Tensor | None = None,
    ):
        """(features (B, T, D), caches per layer, cross weights per layer (B, h, T, S) or None).

        Layers numbered ``weights_from`` and above return their cross-attention weights. The
        memory holds one row per sentence, whose hypotheses are rows of x (``row_layout``); ``past_rows``
        (B,) the row of the caches each row of x continues.
        """
        caches, weights = [], []
        for i, layer in enumerate(self.layers):
            x, cache, w = layer(
                x,
                self_mask,
                None if past is None else past[i],
                cross_keys[i],
                cross_values[i],
                cross_mask,
                need_weights=i >= weights_from,
                row_layout=row_layout,
                past_rows=past_rows,
            )
            caches.append(cache)
            weights.append(w)
        return self.norm(x), caches, weights

    def embed_tokens(self, tokens: torch.Tensor, start: int = 0) -> torch.Tensor:
        """Embeddings with positions from ``start`` of target ids (B, T) -> (B, T, D); a copying
        decoder reads the extended ids of copied tokens as unk."""
        if self.pointer is not None:
            tokens = vocabulary_ids(tokens, self.vocab_size)
        return self.embed(tokens, start=start)

    def _teacher(self, memory: Memory, tgt_in: torch.Tensor, weights_from: int, x: torch.Tensor | None = None):
        """(features (B, T, D), cross weights per layer) of the target ids ``tgt_in`` (B, T), or
        of their inputs ``x`` (B, T, D) when given."""
        cross_keys, cross_values = self.project_memory(memory)
        x = self.embed_tokens(tgt_in) if x is None else x  # (B, T, D)
        features, _, weights = self.run(
            x,
            causal_mask(tgt_in.shape[1], tgt_in.device),
            None,
            cross_keys,
            cross_values,
            padding_mask(memory.mask),
            weights_from,
        )
        return features, weights

    # -- teacher forcing --------------------------------------------------------------------------
    def forward(self, memory: Memory, tgt_in: torch.Tensor, need_weights: bool = False):
        """Teacher forcing: (features (B, T, D), alignment (B, T, S) or None).

        The alignment (the last layer's cross-attention averaged over heads) is computed only
        with ``need_weights``; otherwise the fused attention kernel runs everywhere.
        """
        last = len(self.layers) - 1
        features, weights = self._teacher(memory, tgt_in, last if need_weights else last + 1)
        return features, weights[-1].mean(1) if need_weights else None

    def teacher(self, memory: Memory, tgt_in: torch.Tensor):
        """Teacher forcing: (features (B, T, D), alignment (B, T, S), the inputs x_t (B, T, D):
        embeddings with positions), what the loss of a copying decoder reads."""
        x = self.embed_tokens(tgt_in)  # (B, T, D)
        features, weights = self._teacher(memory, tgt_in, len(self.layers) - 1, x)
        return features, weights[-1].mean(1), x

    def cross_attention(self, memory: Memory, tgt_in: torch.Tensor) -> torch.Tensor:
        """Every layer's and head's cross-attention under teacher forcing: (B, layers, heads, T, S)."""
        _, weights = self._teacher(memory, tgt_in, 0)
        return torch.stack(weights, 1)

    # -- the step protocol ------------------------------------------------------------------------
    def init_state(self, memory: Memory) -> State:
        """The state before the first target token (memory projected once for every layer)."""
        cross_keys, cross_values = self.project_memory(memory)
        # stored contiguous: the layer whose weights a step returns multiplies them explicitly,
        # and would otherwise copy its strided view (B, h, S, dk) at every step
        cross_keys = tuple(k.contiguous() for k in cross_keys)
        cross_values = tuple(v.contiguous() for v in cross_values)
        batch = memory.mask.shape[0]
        if self.use_cache:
            empty = memory.keys.new_zeros(batch, self.heads, 0, self.head_size)
            entries = dict(
                self_keys=(empty,) * len(self.layers),
                self_values=(empty,) * len(self.layers),
                cache_rows=torch.arange(batch, device=memory.mask.device),
            )  # (B,) row of the cache
        else:
            entries = dict(tokens=memory.mask.new_zeros(batch, 0, dtype=torch.long))
        state = State(
            cross_keys=cross_keys,
            cross_values=cross_values,
            mask=memory.mask,
            step=0,
            **entries,
            shared={"cross_keys", "cross_values", "mask"},  # one row per sentence
            deferred={"self_keys", "self_values"},
        )  # rows taken when next extended
        if self.pointer is not None:  # what the context c_t is the attention over, and the ids it copies
            state = share_source(state.share(copy_values=memory.values), memory, self.vocab_size)
        return state

    def step(self, prev_tokens: torch.Tensor, state: State):
        """(logits (B, V), state, alignment (B, S)) after feeding ``prev_tokens`` (B,); a copying
        decoder returns log-probabilities over the extended vocabulary (B, V_ext)."""
        last = len(self.layers) - 1
        logits, state, weights = self._step(prev_tokens, state, last)
        return logits, state, weights[last][:, :, 0].mean(1)

    def step_heads(self, prev_tokens: torch.Tensor, state: State):
        """Like ``step``, with every layer's and head's cross-attention: (B, layers, heads, S)."""
        logits, state, weights = self._step(prev_tokens, state, 0)
        return logits, state, torch.stack([w[:, :, 0] for w in weights], 1)

    def _step(self, prev_tokens: torch.Tensor, state: State, weights_from: int):
        """(logits (B, V) or a copying decoder's log-probabilities (B, V_ext), new state, cross
        weights per layer (B, h, 1, S) or None)."""
        if self.pointer is not None:
            weights_from = min(weights_from, len(self.layers) - 1)  # the copy distribution is the last layer's
        t = state["step"]
        memory = (state["cross_keys"], state["cross_values"], padding_mask(state["mask"]))
        if "tokens" in state:  # no cache: the whole prefix again, keep the last position
            tokens = torch.cat([state["tokens"], prev_tokens.unsqueeze(1)], 1)  # (B, t + 1)
            x = self.embed_tokens(tokens)  # (B, t + 1, D)
            features, _, weights = self.run(
                x, causal_mask(t + 1, tokens.device), None, *memory, weights_from, state.row_layout
            )
            features, x = features[:, -1:], x[:, -1:]
            weights = [None if w is None else w[:, :, -1:] for w in weights]
            new = state.replace(step=t + 1, tokens=tokens)
        else:
            x = self.embed_tokens(prev_tokens.unsqueeze(1), start=t)  # (B, 1, D)
            past = list(zip(state["self_keys"], state["self_values"]))
            features, caches, weights = self.run(
                x, None, past, *memory, weights_from, state.row_layout, past_rows=state["cache_rows"]
            )
            new = state.replace(
                step=t + 1,
                self_keys=tuple(k for k, _ in caches),
                self_values=tuple(v for _, v in caches),
                cache_rows=torch.arange(x.shape[0], device=x.device),
            )
        logits = self.generator(features[:, 0])  # (B, V)
        if self.pointer is not None:
            logits = copy_step(
                self.pointer, logits, features[:, 0], x[:, 0], weights[-1][:, :, 0].mean(1), "copy_values", new
            )
        return logits, new, weights


# -- the builder -----------------------------------------------------------------------------------
def check_config(cfg) -> None:
    """Raise a ConfigError naming the key when the sizes in ``cfg`` do not make a Transformer."""
    if cfg.hidden_size % cfg.heads:
        raise ConfigError(
            f"model.heads: model.hidden_size (d_model = {cfg.hidden_size}) must be divisible by "
            f"model.heads ({cfg.heads})",
            key="model.heads",
        )


def initialize_transformer(model: nn.Module) -> None:
    """Xavier-uniform weights and zero biases in every linear layer except the generator, whose
    weight (like the token embeddings') is drawn from N(0, 1/d_model)."""
    for name, module in model.named_modules():
        if isinstance(module, nn.Linear):
            if name.endswith("generator"):
                nn.init.normal_(module.weight, std=module.in_features**-0.5)
            else:
                nn.init.xavier_uniform_(module.weight)
            nn.init.zeros_(module.bias)


@ARCHS.register("transformer")
class TransformerArch:
    """The Transformer encoder and decoder."""

    reads_features = True

    @staticmethod
    def check(cfg):
        """``cfg`` (a TransformerConfig) checked, its positional encoding's and frontend's options
        written out."""
        check_config(cfg)
        frontend = None if cfg.frontend is None else FRONTENDS.resolve(cfg.frontend, "model.frontend")
        return dataclasses.replace(
            cfg, positional=POSITIONAL.resolve(cfg.positional, "model.positional"), frontend=frontend
        )

    @staticmethod
    def build(cfg, src_vocab_size: int, tgt_vocab_size: int, shares_vocab: bool = False, features: int = 0) -> Seq2Seq:
        """The model, embeddings tied as ``model.tie_embeddings`` says: the decoder's with the
        output layer, and with all (one vocabulary, ``shares_vocab``) the encoder's too. With
        ``model.frontend`` the encoder's layers read the frontend's cells of ``features`` values
        a position."""
        frontend = None if cfg.frontend is None else build_frontend(cfg.frontend, features, cfg.hidden_size, cfg)
        encoder = TransformerEncoder(cfg, src_vocab_size, frontend)
        decoder = TransformerDecoder(cfg, tgt_vocab_size)
        model = Seq2Seq(encoder, decoder)
        initialize_transformer(model)
        tie = embedding_ties(cfg, shares_vocab, true_ties_all=True)
        if tie != "none":
            decoder.generator.weight = decoder.embed.tokens.weight
        if tie == "all":
            encoder.embed.tokens.weight = decoder.embed.tokens.weight
        return model
