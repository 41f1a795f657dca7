"""The Transformer (Vaswani et al. 2017), behind the same decoder step protocol as the RNN decoders.

Sizes come from ModelConfig: d_model = ``model.hidden_size``; ``model.layers`` layers in the encoder
and in the decoder; ``model.heads`` heads of d_model / heads dimensions each; ``model.ff_size``
hidden units in the position-wise feed-forward; ``model.dropout`` on the embeddings, on every
sublayer's output, on the attention weights and inside the feed-forward; ``model.pre_norm`` puts
layer norm before each sublayer (x + f(LN(x)), with a final LN on each stack) or after the
residual sum (LN(x + f(x)), the paper's); ``model.positional`` and ``model.max_positions`` choose
the positional encoding (nn/positional.py).

``model.embed_size`` is ignored: the embeddings are added to the residual stream, so they are
d_model wide. The RNN keys (``cell``, ``encoder_layers``, ``decoder_layers``, ``bidirectional``,
``decoder``, ``attention``, ``bridge``, ...) are ignored too.

Tied embeddings (``model.tie_embeddings``): the decoder's token embedding is the generator's
weight, and the encoder's token embedding is the same tensor too when the source and target
vocabularies have the same size. That is meant for ``data.shared_vocab: true`` (one joint
vocabulary, same ids on both sides); with separate vocabularies of different sizes only the
decoder side is tied. Keep ``data.shared_vocab`` on whenever you tie a joint-vocabulary model.

Masks are boolean, True where attention may look: padding masks hide the source's padding
(encoder self-attention, cross-attention); the decoder's self-attention is causal. Target
padding needs no mask of its own: it is at the end, so causal attention never reaches it from
a real position.

Decoding: ``init_state`` projects the memory into each layer's cross-attention keys and values
once; each ``step`` feeds one token and appends its self-attention keys and values to a per-layer
cache, so a step costs one new position. With ``use_cache = False`` (set before ``init_state``)
every step recomputes the whole prefix instead, for comparison.
"""
from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from ..errors import ConfigError
from .model import ARCHS, Seq2Seq
from .positional import TransformerEmbedding
from .state import Memory, State

Cache = tuple[torch.Tensor, torch.Tensor]  # a layer's self-attention (keys, values), each (B, h, t, dk)


# -- masks and attention ---------------------------------------------------------------------------
def padding_mask(mask: torch.Tensor) -> torch.Tensor:
    """(B, S) True on real tokens -> (B, 1, 1, S), broadcastable over heads and queries."""
    return mask[:, None, None, :]


def causal_mask(length: int, device: torch.device | str | None = None) -> torch.Tensor:
    """(T, T): True where query position t may attend to key position u, i.e. u <= t."""
    return torch.ones(length, length, dtype=torch.bool, device=device).tril()


def scaled_dot_product(query: torch.Tensor, keys: torch.Tensor, values: torch.Tensor,
                       mask: torch.Tensor | None, dropout: float = 0.0, need_weights: bool = False):
    """(context (B, h, T, dk), weights (B, h, T, S) or None) of softmax(Q K^T / sqrt(dk)) V.

    query (B, h, T, dk); keys, values (B, h, S, dk); mask boolean, broadcastable to (B, h, T, S),
    True where a query may attend. Without ``need_weights`` torch's fused kernel runs (it does
    not return the weights); with it the same masked softmax is computed explicitly.
    """
    if not need_weights:
        return F.scaled_dot_product_attention(query, keys, values, attn_mask=mask, dropout_p=dropout), None
    scores = query @ keys.transpose(-2, -1) / math.sqrt(query.shape[-1])  # (B, h, T, S)
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    weights = torch.softmax(scores, dim=-1)
    context = F.dropout(weights, dropout) @ values if dropout else weights @ values  # (B, h, T, dk)
    return context, weights


class MultiHeadAttention(nn.Module):
    """h heads of scaled dot-product attention over projections W_q, W_k, W_v; W_o mixes them.

    Keys and values are projected separately (``project``) so that a decoder can project the
    memory once per sentence and cache its own past keys and values.
    """

    def __init__(self, d_model: int, heads: int, dropout: float):
        super().__init__()
        self.heads, self.head_size, self.dropout = heads, d_model // heads, dropout
        self.W_q = nn.Linear(d_model, d_model)
        self.W_k = nn.Linear(d_model, d_model)
        self.W_v = nn.Linear(d_model, d_model)
        self.W_o = nn.Linear(d_model, d_model)

    def split(self, x: torch.Tensor) -> torch.Tensor:
        """(B, L, D) -> (B, h, L, dk)."""
        batch, length, _ = x.shape
        return x.view(batch, length, self.heads, self.head_size).transpose(1, 2)

    def project(self, keys: torch.Tensor, values: torch.Tensor) -> Cache:
        """Per-head keys and values (B, h, S, dk) of inputs (B, S, D)."""
        return self.split(self.W_k(keys)), self.split(self.W_v(values))

    def forward(self, query: torch.Tensor, keys: torch.Tensor, values: torch.Tensor,
                mask: torch.Tensor | None, need_weights: bool = False):
        """(output (B, T, D), weights (B, h, T, S) or None) for query inputs (B, T, D) and
        projected keys, values (B, h, S, dk)."""
        dropout = self.dropout if self.training else 0.0
        context, weights = scaled_dot_product(self.split(self.W_q(query)), keys, values, mask,
                                              dropout, need_weights)  # (B, h, T, dk)
        batch, _, length, _ = context.shape
        return self.W_o(context.transpose(1, 2).reshape(batch, length, -1)), weights


class FeedForward(nn.Module):
    """Position-wise feed-forward: W_2 dropout(ReLU(W_1 x)), (B, T, D) -> (B, T, D)."""

    def __init__(self, d_model: int, ff_size: int, dropout: float):
        super().__init__()
        self.W_1, self.W_2 = nn.Linear(d_model, ff_size), nn.Linear(ff_size, d_model)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.W_2(self.dropout(torch.relu(self.W_1(x))))


class Residual(nn.Module):
    """The residual connection and layer norm around one sublayer f, with dropout on f's output.

    pre-norm: x + f(LN(x)); post-norm: LN(x + f(x)). ``inner(x)`` is f's input and
    ``outer(x, f_out)`` the result.
    """

    def __init__(self, d_model: int, dropout: float, pre_norm: bool):
        super().__init__()
        self.pre_norm = pre_norm
        self.norm = nn.LayerNorm(d_model)
        self.dropout = nn.Dropout(dropout)

    def inner(self, x: torch.Tensor) -> torch.Tensor:
        return self.norm(x) if self.pre_norm else x

    def outer(self, x: torch.Tensor, sublayer_out: torch.Tensor) -> torch.Tensor:
        x = x + self.dropout(sublayer_out)
        return x if self.pre_norm else self.norm(x)


# -- layers ----------------------------------------------------------------------------------------
class EncoderLayer(nn.Module):
    """Self-attention over the source, then the feed-forward, each inside a Residual."""

    def __init__(self, cfg):
        super().__init__()
        d = cfg.hidden_size
        self.self_attn = MultiHeadAttention(d, cfg.heads, cfg.dropout)
        self.ff = FeedForward(d, cfg.ff_size, cfg.dropout)
        self.attn_res = Residual(d, cfg.dropout, cfg.pre_norm)
        self.ff_res = Residual(d, cfg.dropout, cfg.pre_norm)

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """(B, S, D) -> (B, S, D); mask (B, 1, 1, S)."""
        h = self.attn_res.inner(x)
        keys, values = self.self_attn.project(h, h)
        x = self.attn_res.outer(x, self.self_attn(h, keys, values, mask)[0])
        return self.ff_res.outer(x, self.ff(self.ff_res.inner(x)))


class DecoderLayer(nn.Module):
    """Causal self-attention, cross-attention over the memory, feed-forward; each in a Residual."""

    def __init__(self, cfg):
        super().__init__()
        d = cfg.hidden_size
        self.self_attn = MultiHeadAttention(d, cfg.heads, cfg.dropout)
        self.cross_attn = MultiHeadAttention(d, cfg.heads, cfg.dropout)
        self.ff = FeedForward(d, cfg.ff_size, cfg.dropout)
        self.self_res = Residual(d, cfg.dropout, cfg.pre_norm)
        self.cross_res = Residual(d, cfg.dropout, cfg.pre_norm)
        self.ff_res = Residual(d, cfg.dropout, cfg.pre_norm)

    def forward(self, x: torch.Tensor, self_mask: torch.Tensor | None, past: Cache | None,
                cross_keys: torch.Tensor, cross_values: torch.Tensor, cross_mask: torch.Tensor,
                need_weights: bool = False):
        """(x (B, T, D), cache, cross weights (B, h, T, S) or None) for new positions x (B, T, D).

        ``past``: the self-attention keys and values of earlier positions (B, h, t, dk) or None;
        the returned cache holds them followed by the new positions' (B, h, t + T, dk).
        ``self_mask`` (T, t + T) or None; cross keys/values (B, h, S, dk); cross_mask (B, 1, 1, S).
        """
        h = self.self_res.inner(x)
        keys, values = self.self_attn.project(h, h)  # (B, h, T, dk)
        if past is not None:
            keys, values = torch.cat([past[0], keys], 2), torch.cat([past[1], values], 2)
        x = self.self_res.outer(x, self.self_attn(h, keys, values, self_mask)[0])
        context, weights = self.cross_attn(self.cross_res.inner(x), cross_keys, cross_values,
                                           cross_mask, need_weights)
        x = self.cross_res.outer(x, context)
        x = self.ff_res.outer(x, self.ff(self.ff_res.inner(x)))
        return x, (keys, values), weights


# -- stacks ----------------------------------------------------------------------------------------
class TransformerEncoder(nn.Module):
    """Source ids (B, S) -> Memory(keys = values = outputs (B, S, D), mask, final=None)."""

    def __init__(self, cfg, vocab_size: int):
        super().__init__()
        self.embed = TransformerEmbedding(vocab_size, cfg.hidden_size, cfg.positional,
                                          cfg.max_positions, cfg.dropout)
        self.layers = nn.ModuleList(EncoderLayer(cfg) for _ in range(cfg.layers))
        self.norm = nn.LayerNorm(cfg.hidden_size) if cfg.pre_norm else nn.Identity()
        self.output_size = cfg.hidden_size

    def forward(self, src: torch.Tensor, src_mask: torch.Tensor) -> Memory:
        x = self.embed(src)  # (B, S, D)
        mask = padding_mask(src_mask)  # (B, 1, 1, S)
        for layer in self.layers:
            x = layer(x, mask)
        x = self.norm(x)
        return Memory(keys=x, values=x, mask=src_mask, final=None)


class TransformerDecoder(nn.Module):
    """The decoder stack behind the step protocol (see attnseq/nn/decoders.py).

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
        self.embed = TransformerEmbedding(vocab_size, cfg.hidden_size, cfg.positional,
                                          cfg.max_positions, cfg.dropout)
        self.layers = nn.ModuleList(DecoderLayer(cfg) for _ in range(cfg.layers))
        self.norm = nn.LayerNorm(cfg.hidden_size) if cfg.pre_norm else nn.Identity()
        self.feature_size = cfg.hidden_size
        self.generator = nn.Linear(cfg.hidden_size, vocab_size)
        self.use_cache = True

    # -- shared pieces ----------------------------------------------------------------------------
    def project_memory(self, memory: Memory) -> tuple[tuple[torch.Tensor, ...], tuple[torch.Tensor, ...]]:
        """Each layer's cross-attention keys and values of the memory: tuples of (B, h, S, dk)."""
        pairs = [layer.cross_attn.project(memory.keys, memory.values) for layer in self.layers]
        return tuple(k for k, _ in pairs), tuple(v for _, v in pairs)

    def run(self, x: torch.Tensor, self_mask: torch.Tensor | None, past: list[Cache] | None,
            cross_keys, cross_values, cross_mask: torch.Tensor, weights_from: int):
        """(features (B, T, D), caches per layer, cross weights per layer (B, h, T, S) or None).

        Layers numbered ``weights_from`` and above return their cross-attention weights.
        """
        caches, weights = [], []
        for i, layer in enumerate(self.layers):
            x, cache, w = layer(x, self_mask, None if past is None else past[i], cross_keys[i],
                                cross_values[i], cross_mask, need_weights=i >= weights_from)
            caches.append(cache)
            weights.append(w)
        return self.norm(x), caches, weights

    def _teacher(self, memory: Memory, tgt_in: torch.Tensor, weights_from: int):
        cross_keys, cross_values = self.project_memory(memory)
        x = self.embed(tgt_in)  # (B, T, D)
        features, _, weights = self.run(x, causal_mask(tgt_in.shape[1], tgt_in.device), None,
                                        cross_keys, cross_values, padding_mask(memory.mask), weights_from)
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

    def cross_attention(self, memory: Memory, tgt_in: torch.Tensor) -> torch.Tensor:
        """Every layer's and head's cross-attention under teacher forcing: (B, layers, heads, T, S)."""
        _, weights = self._teacher(memory, tgt_in, 0)
        return torch.stack(weights, 1)

    # -- the step protocol ------------------------------------------------------------------------
    def init_state(self, memory: Memory) -> State:
        """The state before the first target token (memory projected once for every layer)."""
        cross_keys, cross_values = self.project_memory(memory)
        state = State(cross_keys=cross_keys, cross_values=cross_values, mask=memory.mask, step=0)
        batch = memory.mask.shape[0]
        if self.use_cache:
            empty = memory.keys.new_zeros(batch, self.heads, 0, self.head_size)
            state.update(self_keys=(empty,) * len(self.layers), self_values=(empty,) * len(self.layers))
        else:
            state["tokens"] = memory.mask.new_zeros(batch, 0, dtype=torch.long)
        return state

    def step(self, prev_tokens: torch.Tensor, state: State):
        """(logits (B, V), state, alignment (B, S)) after feeding ``prev_tokens`` (B,)."""
        last = len(self.layers) - 1
        logits, state, weights = self._step(prev_tokens, state, last)
        return logits, state, weights[last][:, :, 0].mean(1)

    def step_heads(self, prev_tokens: torch.Tensor, state: State):
        """Like ``step``, with every layer's and head's cross-attention: (B, layers, heads, S)."""
        logits, state, weights = self._step(prev_tokens, state, 0)
        return logits, state, torch.stack([w[:, :, 0] for w in weights], 1)

    def _step(self, prev_tokens: torch.Tensor, state: State, weights_from: int):
        """(logits (B, V), new state, cross weights per layer (B, h, 1, S) or None)."""
        t = state["step"]
        memory = (state["cross_keys"], state["cross_values"], padding_mask(state["mask"]))
        new = State(state, batch_dims=state.batch_dims)
        new["step"] = t + 1
        if "tokens" in state:  # no cache: the whole prefix again, keep the last position
            tokens = torch.cat([state["tokens"], prev_tokens.unsqueeze(1)], 1)  # (B, t + 1)
            features, _, weights = self.run(self.embed(tokens), causal_mask(t + 1, tokens.device), None,
                                            *memory, weights_from)
            features = features[:, -1:]
            weights = [None if w is None else w[:, :, -1:] for w in weights]
            new["tokens"] = tokens
        else:
            x = self.embed(prev_tokens.unsqueeze(1), start=t)  # (B, 1, D)
            past = list(zip(state["self_keys"], state["self_values"]))
            features, caches, weights = self.run(x, None, past, *memory, weights_from)
            new["self_keys"] = tuple(k for k, _ in caches)
            new["self_values"] = tuple(v for _, v in caches)
        return self.generator(features[:, 0]), new, weights


# -- the builder -----------------------------------------------------------------------------------
def check_config(cfg) -> None:
    """Raise a ConfigError naming the key when the sizes in ``cfg`` do not make a Transformer."""
    positive = {"model.hidden_size": cfg.hidden_size, "model.layers": cfg.layers,
                "model.heads": cfg.heads, "model.ff_size": cfg.ff_size}
    for key, value in positive.items():
        if value < 1:
            raise ConfigError(f"{key}: the Transformer needs a positive number, got {value}")
    if cfg.hidden_size % cfg.heads:
        raise ConfigError(
            f"model.heads: model.hidden_size (d_model = {cfg.hidden_size}) must be divisible by "
            f"model.heads ({cfg.heads})"
        )
    if not 0.0 <= cfg.dropout < 1.0:
        raise ConfigError(f"model.dropout: expected a probability in [0, 1), got {cfg.dropout}")


def initialize_transformer(model: nn.Module) -> None:
    """Xavier-uniform weights and zero biases in every linear layer except the generator, whose
    weight (like the token embeddings') is drawn from N(0, 1/d_model)."""
    for name, module in model.named_modules():
        if isinstance(module, nn.Linear):
            if name.endswith("generator"):
                nn.init.normal_(module.weight, std=module.in_features ** -0.5)
            else:
                nn.init.xavier_uniform_(module.weight)
            nn.init.zeros_(module.bias)


@ARCHS.register("transformer")
def build_transformer(cfg, src_vocab_size: int, tgt_vocab_size: int) -> Seq2Seq:
    """Transformer encoder and decoder; embeddings tied as ``cfg.tie_embeddings`` says (see the
    module docstring for the source side)."""
    check_config(cfg)
    encoder = TransformerEncoder(cfg, src_vocab_size)
    decoder = TransformerDecoder(cfg, tgt_vocab_size)
    model = Seq2Seq(encoder, decoder)
    initialize_transformer(model)
    if cfg.tie_embeddings:
        decoder.generator.weight = decoder.embed.tokens.weight
        if src_vocab_size == tgt_vocab_size:
            encoder.embed.tokens.weight = decoder.embed.tokens.weight
    return model
