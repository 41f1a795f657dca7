"""The loop cells' speed: forward + backward of attnseq's hoisted time loop (nn/rnn/loop_cells.py)
against a naive loop that applies a Linear layer to concat(h_{t-1}, x_t) at every step.

    python bench/loop_cells.py [--batch 64 --steps 20 --input 64 --hidden 128 --repeats 20]

Prints milliseconds per forward + backward on 1 thread. (A benchmark, not a test.)
"""

from __future__ import annotations

import argparse
import time

import torch
from torch import nn

from attnseq.nn.rnn.loop_cells import MinimalGRULayer, PeepholeLSTMLayer


class _NaiveMinimalGRU(nn.Module):
    """A bare Python loop over a Linear on concat(h, x) per step: the baseline of the timing."""

    def __init__(self, input_size: int, hidden_size: int):
        super().__init__()
        self.hidden_size = hidden_size
        self.gates = nn.Linear(hidden_size + input_size, 2 * hidden_size)

    def forward(self, inputs):
        h = inputs.new_zeros(inputs.shape[0], self.hidden_size)
        outputs = []
        for t in range(inputs.shape[1]):
            a = self.gates(torch.cat([h, inputs[:, t]], -1))
            update, candidate = torch.sigmoid(a[:, : self.hidden_size]), torch.tanh(a[:, self.hidden_size :])
            h = update * candidate + (1 - update) * h
            outputs.append(h)
        return torch.stack(outputs, 1)


class _NaivePeepholeLSTM(nn.Module):
    """Baseline of the timing: a Linear on concat(h, x) per step, peepholes as in the layer."""

    def __init__(self, input_size: int, hidden_size: int):
        super().__init__()
        self.hidden_size = hidden_size
        self.gates = nn.Linear(hidden_size + input_size, 4 * hidden_size)
        self.peephole = nn.Parameter(torch.zeros(3 * hidden_size))

    def forward(self, inputs):
        h = c = inputs.new_zeros(inputs.shape[0], self.hidden_size)
        p_i, p_f, p_o = self.peephole.chunk(3)
        outputs = []
        for t in range(inputs.shape[1]):
            a_i, a_f, a_g, a_o = self.gates(torch.cat([h, inputs[:, t]], -1)).chunk(4, 1)
            c = torch.sigmoid(a_f + p_f * c) * c + torch.sigmoid(a_i + p_i * c) * torch.tanh(a_g)
            h = torch.sigmoid(a_o + p_o * c) * torch.tanh(c)
            outputs.append(h)
        return torch.stack(outputs, 1)


def benchmark(batch: int = 64, steps: int = 20, input_size: int = 64, hidden: int = 128, repeats: int = 20) -> None:
    """Print forward+backward milliseconds of the hoisted loop against the naive loop
    (sets torch to 1 thread)."""
    torch.set_num_threads(1)
    torch.manual_seed(0)
    x = torch.randn(batch, steps, input_size)
    pairs = {
        "mingru": (MinimalGRULayer(input_size, hidden), _NaiveMinimalGRU(input_size, hidden)),
        "lstm_peephole": (PeepholeLSTMLayer(input_size, hidden), _NaivePeepholeLSTM(input_size, hidden)),
    }

    def timed(fn) -> float:
        for _ in range(3):
            fn().sum().backward()
        started = time.perf_counter()
        for _ in range(repeats):
            fn().sum().backward()
        return (time.perf_counter() - started) / repeats * 1000

    for name, (layer, naive) in pairs.items():
        hoisted = timed(lambda layer=layer: layer(x)[0])
        baseline = timed(lambda naive=naive: naive(x))
        print(
            f"{name:14s} hoisted {hoisted:6.2f} ms  naive {baseline:6.2f} ms  speed-up {baseline / hoisted:4.2f}x"
            f"  (1 thread, B {batch}, T {steps}, I {input_size}, H {hidden})"
        )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--input", type=int, default=64)
    parser.add_argument("--hidden", type=int, default=128)
    parser.add_argument("--repeats", type=int, default=20)
    args = parser.parse_args()
    benchmark(args.batch, args.steps, args.input, args.hidden, args.repeats)
