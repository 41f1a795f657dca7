"""Batched greedy search, written against the decoder step protocol."""

from __future__ import annotations

import torch

from ..data.vocab import Vocab
from .common import Hypothesis, first_state
from .scores import top_log_probs


@torch.no_grad()
def greedy_search(
    model,
    src: torch.Tensor,
    src_mask: torch.Tensor,
    limits: torch.Tensor,
    keep_attention: bool = False,
    src_ext: torch.Tensor | None = None,
) -> list[list[Hypothesis]]:
    """The most probable next token at every step, for each sentence of the batch.

    src, src_mask: (B, S); limits: (B,) maximum output tokens; src_ext (B, S): the sources as
    extended ids, for a copying model. Sentences leave the batch as soon as they produce eos or
    reach their limit, so the rest decode faster. Returns one single-element list of Hypothesis
    per sentence.
    """
    batch = src.shape[0]
    state, real = first_state(model, src, src_mask, src_ext)
    tokens = torch.full((batch,), Vocab.bos_id, dtype=torch.long, device=src.device)
    active = torch.arange(batch, device=src.device)  # rows of the original batch still decoding
    outputs: list[list[int]] = [[] for _ in range(batch)]
    scores = [0.0] * batch
    attention: list[list[torch.Tensor]] = [[] for _ in range(batch)]
    limits = limits.to(src.device)
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
