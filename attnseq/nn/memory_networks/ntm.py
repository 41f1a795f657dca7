"""The Neural Turing Machine (Graves, Wayne & Danihelka 2014): ``model.arch: ntm``.

One machine, a controller (an LSTM, or with ``model.controller: feedforward`` one tanh layer
whose only state is the memory and the heads) with ``read_heads`` read heads and ``write_heads``
write heads on a memory of N locations of width M (addressing.py), runs over the source and then over the
target. At every step t the controller reads [x_t; r_{t-1}], emits each head's key k, key
strength beta, interpolation gate g, shift distribution s and sharpening gamma (and a write
head's erase e and add a); the write heads change the memory, then the read heads read it,
and the output layer sees [h_t; r_t].

As a Seq2Seq: the encoder (TapeWriter) runs the machine over the source tokens, writing; the
memory, the heads' weightings and the controller state are its Memory (a Tape). The decoder
(TapeReader) is the same machine, continued: its first input is a learned delimiter and the
next ones are blank (the paper's copy setting), or with ``model.feed_outputs`` the previous
target symbol. It says eos when it has read the end of what was written.

The alignment of a decoder step over the source is sum_n w^read_t(n) w^write_j(n): how much the
read head reads where source token j was written (one on the diagonal for a perfect copy).

The memory starts as the constant 1e-6 everywhere and every head at location 0, the initial
read vectors are learned (Collier & Beel 2018 found such starts to train fastest).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch
from torch import nn

from ...errors import ConfigError
from ..model import ARCHS, Seq2Seq
from ..state import Memory, State
from .addressing import address, read, write

MEMORY_START = 1e-6  # every memory cell's value before the first write
MACHINE = ("h", "c", "memory", "weights", "reads")  # the state of the machine, batch first


@dataclass
class Tape(Memory):
    """What the encoder hands on: the Memory fields (keys = values = the memory (B, N, M) after
    the source, mask (B, N) all True) and the machine (its state after the source: h, c (B, H),
    memory, weights (B, R + W, N) read heads first, reads (B, R, M)); written (B, S, N) the mean
    write weighting at each source position (0 on padding); reading (B, S, R, N) and writing
    (B, S, W, N) every head's weighting at every source position, for pictures."""

    machine: dict = field(default_factory=dict)
    written: torch.Tensor = field(default=None)
    reading: torch.Tensor = field(default=None)
    writing: torch.Tensor = field(default=None)


class NTMCell(nn.Module):
    """One step of the machine: (input x (B, I), machine) -> (output features (B, F), machine)."""

    def __init__(self, cfg, input_size: int):
        super().__init__()
        self.cfg = cfg
        self.R, self.W = cfg.read_heads, cfg.write_heads
        self.N, self.M = cfg.memory_locations, cfg.memory_width
        self.shifts = 2 * cfg.shift_range + 1
        self.input_size = input_size  # x_t
        controls = input_size + self.R * self.M  # [x_t; r_{t-1}]
        self.recurrent = cfg.controller == "lstm"
        self.controller = (
            nn.LSTMCell(controls, cfg.hidden_size) if self.recurrent else nn.Linear(controls, cfg.hidden_size)
        )
        self.addressing_size = self.M + 3 + self.shifts  # k, beta, g, s, gamma
        heads = self.R + self.W
        self.emit = nn.Linear(cfg.hidden_size, heads * self.addressing_size + self.W * 2 * self.M)
        self.initial_reads = nn.Parameter(torch.randn(self.R, self.M) * 0.01)
        self.feature_size = cfg.hidden_size + self.R * self.M

    def initial(self, batch: int, like: torch.Tensor) -> dict[str, torch.Tensor]:
        """The machine before the first input: memory MEMORY_START, every head at location 0."""
        weights = like.new_zeros(batch, self.R + self.W, self.N)
        weights[:, :, 0] = 1.0
        return {
            "h": like.new_zeros(batch, self.cfg.hidden_size),
            "c": like.new_zeros(batch, self.cfg.hidden_size),
            "memory": like.new_full((batch, self.N, self.M), MEMORY_START),
            "weights": weights,
            "reads": self.initial_reads.to(like.dtype).expand(batch, self.R, self.M),
        }

    def head_parameters(self, h: torch.Tensor):
        """Each head's addressing parameters, and the write heads' erase and add vectors."""
        batch, heads = h.shape[0], self.R + self.W
        out = self.emit(h)  # (B, heads * A + W * 2M)
        addressing_part = out[:, : heads * self.addressing_size].view(batch, heads, self.addressing_size)
        key, strength, gate, shift, gamma = addressing_part.split([self.M, 1, 1, self.shifts, 1], -1)
        erase, add = out[:, heads * self.addressing_size :].view(batch, self.W, 2 * self.M).split(self.M, -1)
        return (
            torch.tanh(key),
            nn.functional.softplus(strength),
            torch.sigmoid(gate),
            torch.softmax(shift, -1),
            1 + nn.functional.softplus(gamma),
            torch.sigmoid(erase),
            torch.tanh(add),
        )

    def forward(self, x: torch.Tensor, machine: dict[str, torch.Tensor]):
        batch = x.shape[0]
        controls = torch.cat([x, machine["reads"].reshape(batch, -1)], -1)  # (B, I + R M)
        if self.recurrent:
            h, c = self.controller(controls, (machine["h"], machine["c"]))
        else:  # no state of its own: c stays zero, h is this step's hidden layer
            h, c = torch.tanh(self.controller(controls)), machine["c"]
        key, strength, gate, shift, gamma, erase, add = self.head_parameters(h)
        weights = address(machine["memory"], machine["weights"], key, strength, gate, shift, gamma)
        memory = write(machine["memory"], weights[:, self.R :], erase, add)
        reads = read(memory, weights[:, : self.R])  # (B, R, M)
        features = torch.cat([h, reads.reshape(batch, -1)], -1)  # (B, H + R M)
        return features, {"h": h, "c": c, "memory": memory, "weights": weights, "reads": reads}


def bit_table(vocab) -> torch.Tensor:
    """(V, b): row i holds the bits of token i when it is a string of b 0s and 1s (b the most
    common such length), zeros for every other token."""
    tokens = list(vocab.itos) if vocab is not None else []
    lengths = [len(t) for t in tokens if t and set(t) <= {"0", "1"}]
    width = max(set(lengths), key=lengths.count) if lengths else 0
    table = torch.zeros(len(tokens), width)
    for i, token in enumerate(tokens):
        if len(token) == width and set(token) <= {"0", "1"}:
            table[i] = torch.tensor([float(b) for b in token])
    return table


class TapeWriter(nn.Module):
    """The encoder: the machine over the source ids (B, S), padding leaving it unchanged. Its
    input is a token's learned embedding and, from ``bits`` (V, b), the token's bits."""

    def __init__(self, cfg, vocab_size: int, cell: NTMCell, bits: torch.Tensor):
        super().__init__()
        self.embed = nn.Embedding(vocab_size, cfg.embed_size, padding_idx=0)
        self.register_buffer("bits", bits, persistent=False)
        self.cell = cell
        self.output_size = cfg.memory_width

    def forward(self, src: torch.Tensor, src_mask: torch.Tensor) -> Tape:
        batch = src.shape[0]
        x = torch.cat([self.embed(src), self.bits[src].to(self.embed.weight.dtype)], -1)  # (B, S, E + b)
        machine = self.cell.initial(batch, x)
        reading, writing = [], []
        for t, x_t in enumerate(x.unbind(1)):
            _, new = self.cell(x_t, machine)
            real = src_mask[:, t]  # (B,)
            machine = {k: torch.where(real.view(-1, *[1] * (v.dim() - 1)), new[k], v) for k, v in machine.items()}
            step_weights = machine["weights"] * real.view(-1, 1, 1)  # (B, R + W, N)
            reading.append(step_weights[:, : self.cell.R])
            writing.append(step_weights[:, self.cell.R :])
        reading, writing = torch.stack(reading, 1), torch.stack(writing, 1)  # (B, S, R, N), (B, S, W, N)
        memory = machine["memory"]
        return Tape(
            keys=memory,
            values=memory,
            mask=src_mask.new_ones(batch, self.cell.N),
            machine=machine,
            written=writing.mean(2),
            reading=reading,
            writing=writing,
        )


class TapeReader(nn.Module):
    """The decoder: the machine continued over the target, behind the decoder step protocol.

    - ``init_state(tape) -> State`` (the machine, the source's write weightings, step 0);
    - ``step(prev_tokens (B,), state) -> (logits (B, V), state, alignment (B, S))``;
    - ``forward(tape, tgt_in (B, T)) -> (features (B, T, F), alignment (B, T, S))``, stepping;
    - ``generator``: features [h; r] -> logits.
    """

    def __init__(self, cfg, vocab_size: int, cell: NTMCell):
        super().__init__()
        self.feed_outputs = cfg.feed_outputs
        width = cell.input_size
        self.embed = nn.Embedding(vocab_size, width, padding_idx=0) if cfg.feed_outputs else None
        self.delimiter = None if cfg.feed_outputs else nn.Parameter(torch.randn(width) * 0.1)
        self.cell = cell
        self.feature_size = cell.feature_size
        self.generator = nn.Linear(cell.feature_size, vocab_size)

    def init_state(self, memory: Tape) -> State:
        """The state before the first target token."""
        return State(**memory.machine, written=memory.written, step=0)

    def inputs(self, prev_tokens: torch.Tensor, step: int, like: torch.Tensor) -> torch.Tensor:
        """The machine's input (B, E) at target position ``step``."""
        if self.feed_outputs:
            return self.embed(prev_tokens)
        if step == 0:
            return self.delimiter.to(like.dtype).expand(prev_tokens.shape[0], -1)
        return like.new_zeros(prev_tokens.shape[0], self.delimiter.shape[0])

    def advance(self, prev_tokens: torch.Tensor, state: State):
        """(features (B, F), state, the heads' weightings (B, R + W, N)) after one target step."""
        machine = {k: state[k] for k in MACHINE}
        features, machine = self.cell(self.inputs(prev_tokens, state["step"], state["h"]), machine)
        return features, state.replace(**machine, step=state["step"] + 1), machine["weights"]

    def alignment(self, weights: torch.Tensor, written: torch.Tensor) -> torch.Tensor:
        """(B, S): the read heads' mean weighting against each source position's write weighting."""
        return torch.einsum("bn,bsn->bs", weights[:, : self.cell.R].mean(1), written)

    def step(self, prev_tokens: torch.Tensor, state: State):
        features, state, weights = self.advance(prev_tokens, state)
        return self.generator(features), state, self.alignment(weights, state["written"])

    def forward(self, memory: Tape, tgt_in: torch.Tensor):
        """Teacher forcing (the same steps): (features (B, T, F), alignment (B, T, S))."""
        state = self.init_state(memory)
        features, alignments = [], []
        for prev in tgt_in.unbind(1):
            f, state, weights = self.advance(prev, state)
            features.append(f)
            alignments.append(self.alignment(weights, state["written"]))
        return torch.stack(features, 1), torch.stack(alignments, 1)

    def trace(self, memory: Tape, tgt_in: torch.Tensor) -> torch.Tensor:
        """Every head's weighting at every target step (B, T, R + W, N), fed ``tgt_in``."""
        state = self.init_state(memory)
        weights = []
        for prev in tgt_in.unbind(1):
            _, state, w = self.advance(prev, state)
            weights.append(w)
        return torch.stack(weights, 1)


@ARCHS.register("ntm")
class NTMArch:
    """One NTM: the encoder writes the source, the decoder reads it out."""

    reads_vocabulary = True  # which tokens are bit vectors (model.bit_inputs)

    @staticmethod
    def check(cfg):
        """``cfg`` (an NTMConfig): the shifts must fit in the memory."""
        if 2 * cfg.shift_range + 1 > cfg.memory_locations:
            raise ConfigError(
                f"model.shift_range: 2 r + 1 = {2 * cfg.shift_range + 1} shifts do not fit in "
                f"model.memory_locations = {cfg.memory_locations}",
                key="model.shift_range",
            )
        return cfg

    @staticmethod
    def build(cfg, src_vocab_size: int, tgt_vocab_size: int, shares_vocab: bool = False, src_vocab=None) -> Seq2Seq:
        """The model: the encoder and decoder share the one NTMCell."""
        bits = bit_table(src_vocab) if cfg.bit_inputs else torch.zeros(src_vocab_size, 0)
        if len(bits) != src_vocab_size:
            bits = torch.zeros(src_vocab_size, bits.shape[1])
        cell = NTMCell(cfg, cfg.embed_size + bits.shape[1])
        return Seq2Seq(TapeWriter(cfg, src_vocab_size, cell, bits), TapeReader(cfg, tgt_vocab_size, cell))
