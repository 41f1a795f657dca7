"""beam-vs-greedy: beam search against greedy decoding of the same trained models (Sutskever et
al. 2014's LSTM encoder-decoder, which decoded with a beam), on a copy task the models have not
mastered, so that search has something to find: how often the beam finds an output the model
scores higher than greedy's, and whether those outputs are more often right."""

from __future__ import annotations

import time
from dataclasses import dataclass

from ..eval.metrics import exact_match
from ..viz import pyplot, save_figure
from .base import REPRODUCTIONS, Finding, Reproduction, Result, Table, budget
from .datasets import CopyTaskOptions, counts, read_split
from .spread import Spread, paired_finding
from .texts import texts
from .training import PlateauOptions, fit_seeds, step_budget
from .wording import Phrase

BEAMS = (1, 2, 5, 10)  # beam widths decoded; 1 is greedy
COMPARED = 5  # the beam the core findings hold against greedy
EXACT, LOGP, FOUND, SPEED = ("test exact match", "mean log-probability", "strings scored above greedy", "strings/s")
WIDTHS = {"narrow": 2, "wide": 10}  # the observation: how much of the widest beam's gain the narrowest has
MARGIN = 1e-4  # a beam output counts as more probable than greedy's by more than this (nats)

TEXT = texts("beam-vs-greedy")


def row_name(beam: int) -> str:
    return "greedy" if beam == 1 else f"beam {beam}"


@dataclass
class BeamVsGreedyOptions(CopyTaskOptions, PlateauOptions):
    steps: int = budget(8000)  # the cap of updates of every model (batch 128)
    eval_every: int = 100  # updates between dev evaluations (greedy)
    hidden_size: int = 64  # LSTM units: a copy of 6-10 digits it learns, not perfectly
    lr: float = 0.003  # Adam's rate


@REPRODUCTIONS.register("beam-vs-greedy", options=BeamVsGreedyOptions)
class BeamVsGreedy(Reproduction):
    title, claim, quotes, source = TEXT.title, TEXT.claim, TEXT.quotes, TEXT.source
    default_seeds = 5
    nominal_minutes = 4.0

    def run(self) -> Result:
        from ..api import load

        o, ctx = self.options, self.context
        data = o.split(ctx.run_dir("data"))
        test = read_split(data, "test")
        sources = [s for s, _ in test]
        settings = [
            f"model.hidden_size={o.hidden_size}",
            f"train.lr={o.lr}",
            "model.decoder=none",  # Sutskever et al.: C only starts the decoder (the preset's own)
            *step_budget(o.steps, o.eval_every, o.dev_sentences, o),
            f"decode.max_len={o.max_length + 1}",
        ]
        keys = (EXACT, LOGP, FOUND, SPEED)
        per_beam: dict[str, dict[str, list[float]]] = {str(b): {k: [] for k in keys} for b in BEAMS}
        runs, records = fit_seeds(ctx, [("sutskever", "book-baseline", [])], data, settings, o.steps)
        for _, _, run_dir in runs:
            translator = load(run_dir)
            references = [translator.pipeline.normalise(t) for _, t in test]
            greedy_scores = None
            for beam in BEAMS:
                tick = time.perf_counter()
                results = translator.search(sources, beam_size=beam)
                seconds = time.perf_counter() - tick
                outputs = [r.outputs[0] for r in results]
                scores = [r.scores[0] for r in results]  # the model's log-probability of each output
                greedy_scores = scores if beam == 1 else greedy_scores
                found = sum(s > g + MARGIN for s, g in zip(scores, greedy_scores))
                row = per_beam[str(beam)]
                row[EXACT].append(100 * exact_match(outputs, references))
                row[LOGP].append(sum(scores) / len(scores))
                row[FOUND].append(100 * found / len(scores))
                row[SPEED].append(len(sources) / max(seconds, 1e-9))
        table = Table(
            ["decoding", EXACT, LOGP, FOUND, SPEED],
            [
                [
                    row_name(beam),
                    Spread(per_beam[str(beam)][EXACT]).format(unit="%"),
                    Spread(per_beam[str(beam)][LOGP]).format(unit="", digits=3),
                    Spread(per_beam[str(beam)][FOUND]).format(unit="%"),
                    Spread(per_beam[str(beam)][SPEED]).format(digits=0),
                ]
                for beam in BEAMS
            ],
            caption=TEXT.format("caption", steps=o.steps, seeds=ctx.seeds, n=len(test)),
        )
        exact = {b: Spread(per_beam[str(b)][EXACT]).mean for b in BEAMS}
        return Result(
            summary=TEXT.format("summary", **{f"b{b}": exact[b] for b in BEAMS}, seeds=ctx.seeds),
            tables=[table],
            figures=[self._figure(per_beam)],
            runs=records,
            setup=TEXT.paragraphs(
                "setup",
                counts=counts(data),
                min_length=o.min_length,
                max_length=o.max_length,
                hidden_size=o.hidden_size,
                lr=o.lr,
                steps=o.steps,
                plateau=o.plateau_words(),
                beams=", ".join(map(str, BEAMS[1:])),
                compared=COMPARED,
                margin=MARGIN,
            ),
            budget=TEXT.format("budget", steps=o.steps, seeds=ctx.seeds, plateau=o.plateau_words()),
            data={"per_beam": per_beam, "compared": COMPARED},
        )

    def _figure(self, per_beam):
        plt = pyplot()
        fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4.2), dpi=110)
        for seed, _ in enumerate(per_beam["1"][EXACT]):
            left.plot(BEAMS, [per_beam[str(b)][EXACT][seed] for b in BEAMS], marker="o", alpha=0.7)
            right.plot(BEAMS, [per_beam[str(b)][FOUND][seed] for b in BEAMS], marker="o", alpha=0.7)
        for ax, label in ((left, "test exact match (%)"), (right, "test strings scored above greedy (%)")):
            ax.set_xscale("log")
            ax.set_xticks(BEAMS, [str(b) for b in BEAMS])
            ax.set_xlabel("beam width (1: greedy)")
            ax.set_ylabel(label)
            ax.grid(alpha=0.3)
        o = self.options
        fig.suptitle(
            f"Copying {o.min_length}-{o.max_length} digits without attention: greedy and beam search, one line per seed",
            fontsize=10,
        )
        fig.tight_layout()
        return save_figure(fig, self.context.figure("beams")), TEXT.format("figure")

    @staticmethod
    def judge(data: dict) -> tuple[list[Finding], list[Phrase]]:
        """Core, beam COMPARED against greedy on each seed's model (the paired t test over the
        seeds, two-sided at ALPHA): its outputs have the higher mean log-probability under the
        model (the search finds what greedy misses), and the higher test exact match (the search
        improves the results, as the source says). Observed: the share of beam 10's gain that
        beam 2 already has."""
        per_beam, compared = data["per_beam"], data["compared"]
        greedy, beam = per_beam["1"], per_beam[str(compared)]
        findings = [
            paired_finding(
                TEXT.phrase(key, beam=compared),
                "beam",
                beam[column],
                "greedy",
                greedy[column],
                unit,
                digits,
                where=[((row_name(compared),), column), (("greedy",), column)],
            )
            for key, column, unit, digits in (("logp", LOGP, " nats", 3), ("exact", EXACT, "%", 1))
        ]
        gains = [
            (b2 - g, b10 - g)
            for g, b2, b10 in zip(
                greedy[EXACT], per_beam[str(WIDTHS["narrow"])][EXACT], per_beam[str(WIDTHS["wide"])][EXACT]
            )
        ]
        total = sum(g10 for _, g10 in gains)
        share = (
            TEXT.phrase("share_none", **WIDTHS)
            if total <= 0
            else TEXT.phrase("share", share=sum(g2 for g2, _ in gains) / total, **WIDTHS)
        )
        return findings, [share]
