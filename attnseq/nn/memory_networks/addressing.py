"""The Neural Turing Machine's memory access (Graves, Wayne & Danihelka 2014, section 3), as
functions of tensors: every head's weighting w over the N locations of a memory M (B, N, M_w)
comes from four steps, and heads read and write with it.

1. content addressing: w^c(i) = softmax_i(beta K[k, M(i)]), K the cosine similarity, beta >= 0
   the key strength;
2. interpolation: w^g = g w^c + (1 - g) w_{t-1}, g in [0, 1] the interpolation gate;
3. convolutional (circular) shift: w~(i) = sum_j w^g(j) s(i - j), s a distribution over the
   shifts -r..r, indices modulo N;
4. sharpening: w(i) = w~(i)^gamma / sum_j w~(j)^gamma, gamma >= 1.

Reading: r = sum_i w(i) M(i). Writing: every write head erases, M~(i) = M(i) prod_h (1 - w_h(i)
e_h), then adds, M'(i) = M~(i) + sum_h w_h(i) a_h.

Shapes: memory (B, N, W); weightings (B, H, N) for H heads; keys (B, H, W); strengths, gates and
sharpening exponents (B, H, 1); shifts (B, H, 2r + 1), shift -r first.
"""

from __future__ import annotations

import torch

EPS = 1e-8  # keeps the cosine and the sharpened weights finite (and differentiable) at zero


def content_weights(memory: torch.Tensor, key: torch.Tensor, strength: torch.Tensor) -> torch.Tensor:
    """w^c (B, H, N): softmax over locations of strength * cosine(key, memory row).

    The cosine as F.cosine_similarity defines it (each vector over its norm, the norm at least
    EPS), taken as one batched product of the unit keys and unit rows instead of broadcasting
    keys against rows into a (B, H, N, W) tensor, whose backward dominated a many-headed step."""
    unit_key = key / torch.linalg.vector_norm(key, dim=-1, keepdim=True).clamp_min(EPS)  # (B, H, W)
    unit_rows = memory / torch.linalg.vector_norm(memory, dim=-1, keepdim=True).clamp_min(EPS)  # (B, N, W)
    similarity = torch.bmm(unit_key, unit_rows.transpose(1, 2))  # (B, H, N)
    return torch.softmax(strength * similarity, dim=-1)


def interpolate(content: torch.Tensor, previous: torch.Tensor, gate: torch.Tensor) -> torch.Tensor:
    """w^g (B, H, N) = g w^c + (1 - g) w_{t-1}."""
    return gate * content + (1 - gate) * previous


def circular_shift(weights: torch.Tensor, shift: torch.Tensor) -> torch.Tensor:
    """w~ (B, H, N): ``weights`` circularly convolved with ``shift`` (B, H, 2r + 1) over the
    shifts -r..r, so all the weight at location i with shift +1 moves to i + 1 (mod N)."""
    r = shift.shape[-1] // 2
    rolled = torch.stack([weights.roll(offset, dims=-1) for offset in range(-r, r + 1)], -1)  # (B, H, N, 2r+1)
    return (rolled * shift.unsqueeze(2)).sum(-1)


def sharpen(weights: torch.Tensor, gamma: torch.Tensor) -> torch.Tensor:
    """w (B, H, N) = w~^gamma / sum w~^gamma (gamma >= 1 undoes the blur of the shift), taken as
    softmax(gamma log w~): the same weighting without the powers themselves, which in fp32
    underflow to 0 / 0 once gamma is large and w~ spread over many locations."""
    return torch.softmax(gamma * torch.log(weights + EPS), dim=-1)


def address(
    memory: torch.Tensor,
    previous: torch.Tensor,
    key: torch.Tensor,
    strength: torch.Tensor,
    gate: torch.Tensor,
    shift: torch.Tensor,
    gamma: torch.Tensor,
) -> torch.Tensor:
    """A head's new weighting (B, H, N): content, interpolation, shift, sharpening."""
    content = content_weights(memory, key, strength)
    return sharpen(circular_shift(interpolate(content, previous, gate), shift), gamma)


def read(memory: torch.Tensor, weights: torch.Tensor) -> torch.Tensor:
    """Read vectors (B, H, W) = sum_i w(i) M(i) for each head's weighting (B, H, N)."""
    return torch.bmm(weights, memory)


def write(memory: torch.Tensor, weights: torch.Tensor, erase: torch.Tensor, add: torch.Tensor) -> torch.Tensor:
    """The memory after every write head has erased (e (B, H, W) in [0, 1]) and added (a (B, H, W))."""
    kept = (1 - weights.unsqueeze(-1) * erase.unsqueeze(2)).prod(1)  # (B, N, W)
    return memory * kept + torch.einsum("bhn,bhw->bnw", weights, add)
