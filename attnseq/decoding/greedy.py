"""Batched greedy search, written against the decoder step protocol."""

from __future__ import annotations

import torch

from ..data.batching import SourceBatch
from ..data.vocab import Vocab
from .common import Hypothesis, first_state
from .scores import top_log_probs


@torch.no_grad()
def greedy_search(
    model, source: SourceBatch, limits: torch.Tensor, keep_attention: bool = False
) -> list[list[Hypothesis]]:
    """The most probable next token at every step, for each sentence of the ``source`` batch.

    limits: (B,) maximum output tokens. Sentences leave the batch as soon as they produce eos or
    reach their limit, so the rest decode faster. Returns one single-element list of Hypothesis
    per sentence (a copying model's tokens are extended ids).
    """
    batch, device = source.ids.shape[0], source.ids.device
    state, real = first_state(model, source)
    tokens = torch.full((batch,), Vocab.bos_id, dtype=torch.long, device=device)
    active = torch.arange(batch, device=device)  # rows of the original batch still decoding
    outputs: list[list[int]] = [[] for _ in range(batch)]
    scores = [0.0] * batch
    attention: list[list[torch.Tensor]] = [[] for _ in range(batch)]
    limits = limits.to(device)
    real = real.cpu()  # attention is returned over each sentence's real source positions
    step = 0
    while active.numel():
        logits, state, alignment = model.decoder.step(tokens, state)  # (b, V), (b, S)
        best_logp, tokens = (column[:, 0] for column in top_log_probs(logits, 1))  # (b,)
        step += 1
        done = (tokens == Vocab.eos_id) | (limits[active] <= step)
        step_alignment = alignment.float().cpu() if keep_attention and alignment is not None else None
        for row, (sentence, token, token_logp) in enumerate(zip(active.tolist(), tokens.tolist(), best_logp.tolist())):
            scores[sentence] += token_logp
            if token != Vocab.eos_id:
                outputs[sentence].append(token)
            if step_alignment is not None:
                attention[sentence].append(step_alignment[row, real[sentence]])
        if bool(done.any()):
            keep = (~done).nonzero().squeeze(1)
            active, tokens = active[keep], tokens[keep]
            if keep.numel():
                state = state.select(keep)
    return [
        [Hypothesis(outputs[i], scores[i], torch.stack(attention[i]) if attention[i] else None)] for i in range(batch)
    ]
