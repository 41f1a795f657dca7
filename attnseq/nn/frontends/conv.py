"""``model.frontend: conv``: a convolutional image encoder that turns an image into a grid of
feature vectors (Xu et al. 2015; Deng et al. 2017, image-to-markup).

The image (B, W, H) of data.input image (its columns as positions) is read by ``blocks`` blocks
of a 3x3 convolution, batch norm and ReLU, each halving the grid, the first with ``channels``
channels and each after with twice as many: the first by a stride of 2 (the full-resolution
image is the costliest to convolve: a strided convolution there costs a quarter, and spares the
pooling's pass), the others by a 2x2 max-pool after it. That gives a grid of ceil(H / 2^blocks)
rows and ceil(W / 2^blocks) columns of C-channel cells. The maps are held channels-last, which
the CPU's convolutions read several times faster here. Then, as ``positions`` says:

- ``rows``: a bidirectional recurrent layer (model.cell; LSTM for the Transformer) runs along
  each row of the grid, as Deng et al.'s row encoder does, its input joined with a learned
  vector of the row (their trainable initial state per row, as an input), so a cell knows its
  row and what lies left and right of it;
- ``2d``: a linear map of each cell plus a sinusoidal encoding of its row (the first half of
  the features) and of its column (the second half).

Batch invariance: the columns after an image's width are zeros (the input kind's background);
after every convolution and every pooling the columns past the image's own (halved, rounded
up) width are set to zero again, and pooling rounds up, so each real cell is the same number
whether the image is encoded alone or beside wider ones. The memory's mask is True on the
cells of real columns, in every row. The cells are laid out column by column (S = column x rows +
row), so an image's real cells come first and its padding after them, as a text's tokens do.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import nn

from ...errors import ConfigError
from ...schema import choice, number
from ..rnn.cells import build_rnn
from ..transformer.positional import sinusoidal_table
from .base import FRONTENDS, Frontend


@dataclass
class ConvOptions:
    channels: int = number(32, 1)  # the first block's channels; each block after has twice as many
    blocks: int = number(3, 1, 6)  # conv blocks, each halving the grid's height and width
    positions: str = choice("rows", ("rows", "2d"))  # rows: Deng et al.'s row encoder; 2d: sin/cos of row and column


def column_mask(lengths: torch.Tensor, width: int) -> torch.Tensor:
    """(B, 1, 1, width) True on each image's first ``lengths`` columns."""
    return (torch.arange(width, device=lengths.device).view(1, width) < lengths.view(-1, 1)).view(-1, 1, 1, width)


@FRONTENDS.register("conv", options=ConvOptions)
class ConvFrontend(Frontend):
    """Convolution blocks over a grey image, then a row encoder or 2-D positions: cells (B, R*C, H)."""

    reads = "image"

    def __init__(self, cfg, feature_size: int, output_size: int, options: ConvOptions):
        super().__init__()
        self.options, self.output_size = options, output_size
        self.height = feature_size  # pixel rows of every image (data.input.height)
        layers, channels, previous = [], options.channels, 1
        for block in range(options.blocks):
            norm = nn.BatchNorm2d(channels)
            norm.num_batches_tracked = None  # a 0-d counter only momentum=None reads; checkpoints hold arrays
            conv = nn.Conv2d(previous, channels, 3, stride=2 if block == 0 else 1, padding=1)
            layers.append(nn.ModuleDict({"conv": conv, "norm": norm}))
            previous, channels = channels, channels * 2
        self.blocks = nn.ModuleList(layers)
        self.channels = previous
        self.rows = self.grid(1)[0]
        if options.positions == "rows":
            if output_size % 2:
                raise ConfigError(
                    f"model.hidden_size: the row encoder is bidirectional and needs an even size, got {output_size}",
                    key="model.hidden_size",
                )
            self.row_vectors = nn.Parameter(torch.zeros(self.rows, previous))  # (R, C)
            self.row_encoder = build_rnn(
                getattr(cfg, "cell", None) or "lstm", previous, output_size // 2, bidirectional=True
            )
        else:
            self.project = nn.Linear(previous, output_size)

    def grid(self, length: int) -> tuple[int, ...]:
        """(rows, columns) of the grid of an image ``length`` columns wide."""
        scale = 2**self.options.blocks
        return (math.ceil(self.height / scale), math.ceil(length / scale))

    def feature_map(self, features: torch.Tensor, mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(the grid (B, C, R, Cols), its columns' lengths (B,)) of images (B, W, H), mask (B, W)."""
        x = features.transpose(1, 2).unsqueeze(1).contiguous(memory_format=torch.channels_last)  # (B, 1, H, W)
        lengths = mask.sum(1)  # (B,)
        for index, block in enumerate(self.blocks):
            x = torch.relu(block["norm"](block["conv"](x)))  # (B, C, H', W'), halved by the first's stride
            if index == 0:
                lengths = torch.div(lengths + 1, 2, rounding_mode="floor")
            x = x * column_mask(lengths, x.shape[-1])  # what lies past an image is zero, as alone
            if index > 0:
                x = nn.functional.max_pool2d(x, 2, ceil_mode=True)  # (B, C, ceil(H'/2), ceil(W'/2))
                lengths = torch.div(lengths + 1, 2, rounding_mode="floor")
                x = x * column_mask(lengths, x.shape[-1])
        return x, lengths

    def cells(self, features, mask):
        x, lengths = self.feature_map(features, mask)  # (B, C, R, Cols), (B,)
        batch, channels, rows, columns = x.shape
        x = x.permute(0, 2, 3, 1)  # (B, R, Cols, C)
        if self.options.positions == "rows":
            x = x + self.row_vectors.view(1, rows, 1, channels)
            flat = x.reshape(batch * rows, columns, channels)  # a sequence per row
            row_lengths = lengths.repeat_interleave(rows)  # (B * R,)
            padded = bool((row_lengths < columns).any())
            out, _ = self.row_encoder.encode(flat, row_lengths if padded else None)  # (B * R, Cols, H)
            out = out.reshape(batch, rows, columns, self.output_size)
        else:
            half = self.output_size // 2
            row_pos = sinusoidal_table(rows, half).to(x)  # (R, H/2)
            col_pos = sinusoidal_table(columns, self.output_size - half).to(x)  # (Cols, H - H/2)
            positions = torch.cat(
                [
                    row_pos.unsqueeze(1).expand(rows, columns, half),
                    col_pos.unsqueeze(0).expand(rows, columns, self.output_size - half),
                ],
                -1,
            )
            out = self.project(x) + positions  # (B, R, Cols, H)
        # column by column (the rows of a column together): an image's real cells come first, its
        # padding after them, as a text's tokens do
        cell_mask = torch.arange(columns, device=x.device).view(1, columns, 1) < lengths.view(-1, 1, 1)
        cell_mask = cell_mask.expand(batch, columns, rows)  # (B, Cols, R)
        out = out.transpose(1, 2)  # (B, Cols, R, H)
        return out.reshape(batch, columns * rows, self.output_size), cell_mask.reshape(batch, columns * rows)
