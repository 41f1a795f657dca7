"""Batched beam search, written against the decoder step protocol.

Each sentence of the batch keeps up to ``beam_size`` alive hypotheses, one decoder-state row
each. One step of the search:

1. **expand**: every alive hypothesis proposes its ``beam_size`` most probable next tokens;
2. **select top-k**: each sentence keeps its ``beam_size`` best candidates (sum of log-probs);
3. **set finished aside**: candidates that end (eos, or the sentence's length limit) leave the
   beam with their score divided by the length penalty; they are never extended again;
4. **reorder state**: the state rows follow the surviving candidates, and the rows of sentences
   whose search is over are dropped, so the rest decode faster.

A sentence's search is over when its ``n_best``-th finished hypothesis scores at least as well
as any alive hypothesis possibly could (log-probs only decrease a score, and the length penalty
is largest at the length limit), so stopping early never changes the result. Sentences never
interact, so a sentence decodes the same alone or inside a padded batch.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from ..data.batching import SourceBatch
from ..data.vocab import Vocab
from ..errors import ConfigError
from .common import Hypothesis, first_state, gnmt_penalty
from .scores import top_log_probs

NEG_INF = float("-inf")


def expand(logits: torch.Tensor, scores: torch.Tensor, k: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Every alive hypothesis extended by its ``k`` most probable next tokens.

    logits: (n * slots, V) next-token logits; scores: (n, slots) hypothesis scores (float64,
    -inf for empty slots). Returns candidate scores (n, slots * k') and tokens (n, slots * k'),
    k' = min(k, V). The best k candidates over all (slot, token) pairs are among these.
    """
    n, slots = scores.shape
    top_logp, top_tokens = top_log_probs(logits, k)  # (n * slots, k')
    candidates = scores.unsqueeze(-1) + top_logp.double().view(n, slots, -1)  # (n, slots, k')
    return candidates.view(n, -1), top_tokens.view(n, -1)


def select_top_k(
    candidates: torch.Tensor, tokens: torch.Tensor, k: int, slots: int
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Each sentence's k best candidates, best first.

    candidates, tokens: (n, slots * k'). Returns scores (n, k), tokens (n, k) and origin (n, k),
    the slot of the hypothesis each candidate extends (fewer than k with a tiny vocabulary).
    """
    per_slot = candidates.shape[1] // slots  # k'
    scores, index = candidates.topk(min(k, candidates.shape[1]), dim=-1)  # (n, k)
    return scores, tokens.gather(1, index), torch.div(index, per_slot, rounding_mode="floor")


@dataclass
class Beams:
    """The alive hypotheses of the active sentences: ``width`` slots per sentence, one decoder
    state row per slot (row = sentence position * width + slot)."""

    sentence: torch.Tensor  # (n,) batch index of each active sentence
    scores: torch.Tensor  # (n, width) float64 sums of log-probs; -inf marks an empty slot
    tokens: torch.Tensor  # (n, width) each hypothesis' last token
    history: torch.Tensor  # (n * width, t) tokens so far
    attention: torch.Tensor | None = None  # (n * width, t, S) with keep_attention

    @property
    def width(self) -> int:
        return self.scores.shape[1]

    def follow(
        self, rows: torch.Tensor, scores: torch.Tensor, tokens: torch.Tensor, alignment: torch.Tensor | None
    ) -> Beams:
        """The beams after a step: slot j of sentence i extends the hypothesis in state row
        rows[i, j] (n, k) with tokens[i, j]; alignment (n * width, S) of the step, or None."""
        flat = rows.view(-1)
        history = torch.cat([self.history[flat], tokens.view(-1, 1)], 1)  # (n * k, t + 1)
        attention = None
        if alignment is not None:
            step_alignment = alignment.float()[flat].unsqueeze(1)  # (n * k, 1, S)
            attention = (
                step_alignment if self.attention is None else torch.cat([self.attention[flat], step_alignment], 1)
            )
        return Beams(self.sentence, scores, tokens, history, attention)

    def keep(self, keep: torch.Tensor) -> Beams:
        """Only the active sentences at positions ``keep`` (m,)."""
        rows = (keep.unsqueeze(1) * self.width + torch.arange(self.width, device=keep.device)).view(-1)
        attention = None if self.attention is None else self.attention[rows]
        return Beams(self.sentence[keep], self.scores[keep], self.tokens[keep], self.history[rows], attention)


class Finished:
    """Hypotheses set aside, per sentence of the batch, kept best first (ties: earliest first). An
    empty hypothesis (eos first) is kept only while it is the best: below another it is no
    alternative worth listing, and an n-best list never holds one but at its head."""

    def __init__(self, batch: int, n_best: int, device: torch.device):
        self.n_best = n_best
        self.hypotheses: list[list[Hypothesis]] = [[] for _ in range(batch)]
        self.threshold = torch.full((batch,), NEG_INF, dtype=torch.float64, device=device)  # (B,)

    def add(self, sentence: int, hypothesis: Hypothesis) -> None:
        """Keep ``hypothesis`` and update the sentence's n_best-th best score."""
        found = self.hypotheses[sentence]
        found.append(hypothesis)
        found.sort(key=lambda h: -h.score)  # stable: equal scores keep their order
        found[1:] = [h for h in found[1:] if h.tokens]
        if len(found) >= self.n_best:
            self.threshold[sentence] = found[self.n_best - 1].score

    def best(self, sentence: int) -> list[Hypothesis]:
        """The sentence's n_best hypotheses, best first."""
        return self.hypotheses[sentence][: self.n_best] or [Hypothesis([], NEG_INF)]


def set_finished_aside(
    finished: Finished, beams: Beams, ends: torch.Tensor, real: torch.Tensor, step: int, alpha: float
) -> Beams:
    """Move the hypotheses marked in ``ends`` (n, width) into ``finished``; their slots empty.

    real: (B, S) the positions each sentence's attention falls on (common.first_state), the
    columns of the attention a hypothesis keeps.
    """
    where = ends.nonzero()  # (m, 2): (active sentence position, slot)
    if not where.numel():
        return beams
    rows = where[:, 0] * beams.width + where[:, 1]
    lp = gnmt_penalty(step, alpha)
    sentences = beams.sentence[where[:, 0]].tolist()
    raw_scores = beams.scores[where[:, 0], where[:, 1]].tolist()
    for sentence, row, tokens, raw in zip(sentences, rows.tolist(), beams.history[rows].tolist(), raw_scores):
        if tokens[-1] == Vocab.eos_id:
            tokens.pop()
        alignment = None
        if beams.attention is not None:
            alignment = beams.attention[row][:, real[sentence]]  # (T_out, S_i)
        finished.add(sentence, Hypothesis(tokens, raw / lp, alignment))
    beams.scores = beams.scores.masked_fill(ends, NEG_INF)
    return beams


def sentences_done(
    scores: torch.Tensor, at_limit: torch.Tensor, threshold: torch.Tensor, limits: torch.Tensor, alpha: float
) -> torch.Tensor:
    """(n,) True where the search is over: no alive hypothesis, the length limit reached, or the
    n_best-th finished score >= the best score an alive hypothesis (n, k) could still reach."""
    best_alive = scores.max(1).values  # (n,) sums of log-probs, <= 0
    best_possible = best_alive / gnmt_penalty(limits.double(), alpha)
    return at_limit | torch.isinf(best_alive) | (threshold >= best_possible)


@torch.no_grad()
def beam_search(
    model,
    source: SourceBatch,
    limits: torch.Tensor,
    beam_size: int,
    n_best: int = 1,
    length_penalty: float = 0.0,
    keep_attention: bool = False,
) -> list[list[Hypothesis]]:
    """The ``n_best`` best hypotheses of each sentence of the ``source`` batch, best first, by
    beam search.

    limits: (B,) maximum output tokens per sentence. Scores are sums of
    token log-probs (eos included when produced) divided by lp(|Y|) when ``length_penalty``
    (alpha) > 0. With ``keep_attention`` each hypothesis carries its attention (T_out, S_i),
    one row per decoding step (the eos step included), S_i the sentence's source length.
    """
    if n_best > beam_size:
        raise ConfigError(
            f"decode.n_best ({n_best}) must not exceed decode.beam_size ({beam_size})", key="decode.n_best"
        )
    if length_penalty < 0:
        raise ConfigError(f"decode.length_penalty must be >= 0, got {length_penalty}", key="decode.length_penalty")
    alpha, device = float(length_penalty), source.ids.device
    batch = source.ids.shape[0]
    state, real = first_state(model, source)  # one row per sentence
    real = real.to(device)
    limits = limits.to(device)
    finished = Finished(batch, n_best, device)
    beams = Beams(  # one slot per sentence holding the empty hypothesis
        sentence=torch.arange(batch, device=device),
        scores=torch.zeros(batch, 1, dtype=torch.float64, device=device),
        tokens=torch.full((batch, 1), Vocab.bos_id, dtype=torch.long, device=device),
        history=torch.empty(batch, 0, dtype=torch.long, device=device),
    )
    step = 0
    while beams.sentence.numel():
        step += 1
        logits, state, alignment = model.decoder.step(beams.tokens.view(-1), state)  # (n * width, V)
        scores, tokens, origin = select_top_k(
            *expand(logits, beams.scores, beam_size), beam_size, beams.width
        )  # (n, k)
        rows = torch.arange(len(beams.sentence), device=device).unsqueeze(1) * beams.width + origin
        beams = beams.follow(rows, scores, tokens, alignment if keep_attention else None)

        limit = limits[beams.sentence]  # (n,)
        at_limit = limit <= step
        ends = ((tokens == Vocab.eos_id) | at_limit.unsqueeze(1)) & torch.isfinite(scores)
        beams = set_finished_aside(finished, beams, ends, real, step, alpha)
        done = sentences_done(beams.scores, at_limit, finished.threshold[beams.sentence], limit, alpha)
        if bool(done.any()):
            keep = (~done).nonzero().squeeze(1)
            beams, rows = beams.keep(keep), rows[keep]
        if beams.sentence.numel():
            state = state.select(rows.reshape(-1), group=rows.shape[1])  # reorder and drop rows in one step
    return [finished.best(i) for i in range(batch)]
