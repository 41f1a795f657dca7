"""Each hypothesis' most probable next tokens and their log-probabilities, from logits.

A search needs only the k largest entries of each row of log_softmax(logits). torch's top-k
over a whole row of a large vocabulary costs several times the log-softmax itself; here the
candidates come from one pass of block maxima instead (the k largest entries of a row lie in
its k blocks with the largest maxima), and a top-k over those k blocks. The log-probabilities
are torch's own log-softmax, so scores are bit for bit what a plain top-k gives.
"""

from __future__ import annotations

import torch

BLOCK = 128  # entries per block: the candidates are k blocks of this many


def row_top_k(values: torch.Tensor, k: int) -> tuple[torch.Tensor, torch.Tensor]:
    """(largest (N, k'), their columns (N, k')) of each row of ``values`` (N, V), largest first,
    k' = min(k, V): what ``values.topk(k, dim=-1)`` returns (equal entries may come in another
    order)."""
    n, width = values.shape
    k = min(k, width)
    blocks = width // BLOCK
    if blocks <= 2 * k:  # a narrow row: torch's own passes are as fast
        if k == 1:
            best, column = values.max(-1, keepdim=True)
            return best, column
        return values.topk(k, dim=-1)
    full = blocks * BLOCK
    tiled = values[:, :full].view(n, blocks, BLOCK)  # (N, nb, BLOCK), a view
    best_blocks = tiled.amax(-1).topk(k, dim=-1).indices  # (N, k)
    candidates = tiled.gather(1, best_blocks.unsqueeze(-1).expand(n, k, BLOCK)).view(n, k * BLOCK)
    columns = (best_blocks.unsqueeze(-1) * BLOCK + torch.arange(BLOCK, device=values.device)).view(n, -1)
    if full < width:  # the last, partial block is always a candidate
        candidates = torch.cat([candidates, values[:, full:]], 1)
        columns = torch.cat([columns, torch.arange(full, width, device=values.device).expand(n, -1)], 1)
    top, where = candidates.topk(k, dim=-1)  # (N, k)
    return top, columns.gather(1, where)


def top_log_probs(logits: torch.Tensor, k: int) -> tuple[torch.Tensor, torch.Tensor]:
    """(log-probs (N, k'), tokens (N, k')) of each row's k' = min(k, V) most probable tokens,
    best first; logits (N, V)."""
    return row_top_k(torch.log_softmax(logits.float(), dim=-1), k)
