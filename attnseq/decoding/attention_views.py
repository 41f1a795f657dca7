"""What a page shows of a hypothesis beyond its alignment, recomputed by one teacher-forced pass
over the hypothesis (the same numbers as stepping: tests/test_models.py checks that teacher
forcing equals stepping for every design):

- the Transformer: every layer's and head's cross-attention, and the encoder's self-attention;
- a recurrent decoder with a multi-head scorer: each head's alignment;
- local attention (local_m, local_p): the window [p_t - D, p_t + D] of every output step;
- copy attention (model.copy): the generation probability p_gen of every output step.

What a model shows is what its classes declare (nn/views.py). The decoder's scorer is watched
with a forward hook during the pass, so the designs need no code of their own for this: whatever
queries they score with are scored again here.
"""

from __future__ import annotations

import numpy as np
import torch

from ..data.batching import SourceBatch, pad
from ..data.vocab import Vocab
from ..nn.attention.local import window_centres
from ..nn.copy import generation_probability
from ..nn.views import ShowsCrossAttention, ShowsHeads, ShowsSelfAttention, ShowsWindow
from .common import AttentionViews


def teacher_inputs(outputs: list[list[int]], rows: list[int]) -> list[list[int]]:
    """The decoder inputs that reproduce each hypothesis' ``rows`` decoding steps: bos and its
    tokens, cut to ``rows`` (a hypothesis that ended with eos has one row more than tokens)."""
    return [([Vocab.bos_id] + tokens)[:n] for tokens, n in zip(outputs, rows)]


@torch.no_grad()
def attention_views(
    model, src_ids: list[int], outputs: list[list[int]], rows: list[int]
) -> tuple[list[AttentionViews], np.ndarray | None]:
    """(views of each hypothesis, the encoder's self-attention (layers, heads, S, S) or None)
    for hypotheses ``outputs`` (token ids, no bos/eos) of one source ``src_ids`` (as the
    encoder reads them: ids, or a file's features (L, F)), ``rows`` decoding steps each. Positions are the encoder's order."""
    device = next(model.parameters()).device
    n = len(outputs)
    source = SourceBatch.of([src_ids] * n).to(device)  # (n, S) ids or (n, L, F) a file's features
    tgt_in, _ = pad(teacher_inputs(outputs, rows))  # (n, T), padded at the end
    tgt_in = tgt_in.to(device)
    memory = model.encode(source)
    decoder, encoder = model.decoder, model.encoder
    encoder_self = None
    if isinstance(encoder, ShowsSelfAttention):
        encoder_self = encoder.self_attention(source.ids[:1], source.mask[:1])[0].float().cpu().numpy()  # (L, h, S, S)
    views = [AttentionViews() for _ in range(n)]
    if getattr(decoder, "pointer", None) is not None:  # copy attention: p_gen of every step
        p_gen = generation_probability(decoder, memory, tgt_in).float().cpu().numpy()  # (n, T)
        for i, v in enumerate(views):
            v.p_gen = p_gen[i, : rows[i]]
    if isinstance(decoder, ShowsCrossAttention):  # the Transformer: every layer's heads
        cross = decoder.cross_attention(memory, tgt_in).float().cpu().numpy()  # (n, L, h, T, S)
        for i, v in enumerate(views):
            v.cross = cross[i, :, :, : rows[i]]
        return views, encoder_self
    scorer = getattr(decoder, "scorer", None)
    if scorer is None:
        return views, encoder_self
    calls = []  # (query (n, T', Hq), keys, mask (n, S), positions (n, T') or None) of each scoring
    hook = scorer.register_forward_hook(lambda module, args, output: calls.append(args))
    try:
        decoder(memory, tgt_in)
    finally:
        hook.remove()
    query = torch.cat([c[0] for c in calls], 1)  # (n, T, Hq)
    keys, mask = calls[0][1], calls[0][3]
    positions = None if calls[0][4] is None else torch.cat([c[4] for c in calls], 1)  # (n, T)
    if isinstance(scorer, ShowsHeads):  # multi-head: (n, h, T, S) -> one layer
        heads = scorer.head_alignments(query, keys, mask, positions).float().cpu().numpy()
        for i, v in enumerate(views):
            v.cross = heads[i, None, :, : rows[i]]
    if isinstance(scorer, ShowsWindow):  # local attention: its window at every step
        lengths = mask.sum(-1, keepdim=True).float()  # (n, 1)
        centres = scorer.centres(query, lengths, positions)  # (n, T)
        middle = window_centres(centres, lengths)  # (n, T)
        width = scorer.options.window
        low = (middle - width).clamp(min=0)
        high = torch.minimum(middle + width, lengths - 1)
        window = torch.stack([low, high], -1).long().cpu().numpy()  # (n, T, 2)
        centres = centres.float().cpu().numpy()
        for i, v in enumerate(views):
            v.window, v.centres, v.width = window[i, : rows[i]], centres[i, : rows[i]], width
    return views, encoder_self
