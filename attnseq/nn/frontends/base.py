"""Source encoders of features, not ids ("frontends", ``model.frontend``): what a model reads when
its source column names a file (``data.input``: image, audio; data/inputs). A frontend takes the
padded features (B, L, F) with their mask (B, L) and returns the cells every attending decoder
attends over, ``(B, S, H)`` with their mask ``(B, S)``:

- a recurrent model (``model.arch: rnn``) uses the frontend as its encoder: ``forward`` gives the
  Memory, its ``final`` (1, B, H) the mean of the real cells, from which the bridge starts the
  decoders that need an initial state;
- the Transformer runs its encoder layers over the cells (``cells``), so a frontend gives them
  their positions itself.

``grid(length)`` says how the S cells lie over an input of ``length`` positions (rows and
columns of an image's grid, steps over audio frames: data.inputs.SourceShape), so the attention
can be drawn over the input. A registry maps a name to the class and its options; ``reads``
names the input kind a frontend encodes, and a model whose frontend reads another kind than
``data.input`` is refused (engines/torch_engine/trainer.py check_source).
"""

from __future__ import annotations

import torch
from torch import nn

from ...registry import Registry
from ..state import Memory

FRONTENDS: Registry[type[Frontend]] = Registry("frontend", key="model.frontend")


class Frontend(nn.Module):
    """Base: features (B, L, F) and mask (B, L) -> cells (B, S, ``output_size``) and mask (B, S).

    A subclass's constructor takes (model settings, F, ``output_size``, options)."""

    reads: str  # the input kind (data.input) whose features it encodes
    output_size: int

    def cells(self, features: torch.Tensor, mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(cells (B, S, H), their mask (B, S), True on the real ones) of ``features`` (B, L, F)."""
        raise NotImplementedError

    def grid(self, length: int) -> tuple[int, ...]:
        """The shape of the cells of an input of ``length`` positions (its S cells, row-major)."""
        raise NotImplementedError

    def forward(self, features: torch.Tensor, mask: torch.Tensor) -> Memory:
        """The Memory of the features: keys = values = the cells, ``final`` (1, B, H) the mean of
        the real cells (what a recurrent decoder's bridge starts from)."""
        cells, cell_mask = self.cells(features, mask)  # (B, S, H), (B, S)
        weights = cell_mask.unsqueeze(-1).to(cells.dtype)  # (B, S, 1)
        final = (cells * weights).sum(1) / weights.sum(1).clamp(min=1)  # (B, H)
        return Memory(keys=cells, values=cells, mask=cell_mask, final=final.unsqueeze(0))


def build_frontend(variant, feature_size: int, output_size: int, cfg=None) -> Frontend:
    """The frontend ``variant`` (model.frontend, resolved) names, reading ``feature_size`` values
    a position and giving ``output_size`` features a cell."""
    return FRONTENDS.build(variant, "model.frontend", cfg, feature_size, output_size)
