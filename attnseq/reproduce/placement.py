"""placement: where the attention's context goes and which decoder state attends. The book's
section 4.2 question (context into the output layer only, or also into the next step's input)
and Bahdanau's previous state against Luong's current state, on the book's date task."""

from __future__ import annotations

from dataclasses import dataclass

from ..viz import pyplot, save_figure
from .base import REPRODUCTIONS, Finding, Reproduction, Result, Table, budget
from .datasets import BookTaskOptions, counts
from .plots import draw_seeds, seeds_note
from .significance import alike, better
from .spread import Spread, alike_reason, comparison, equivalence_phrase, evidence_of, permuted, spreads
from .texts import texts
from .training import (
    PlateauOptions,
    compare_variants,
    curve,
    first_reaching,
    run_records,
    step_budget,
    steps_to,
    value_at,
)
from .wording import Phrase

TEXT = texts("placement")
SAME = {True: "alike", False: "differ", None: "undecided"}  # the texts of alike(t, margin)
ORDER = {1: "first", -1: "second", 0: "cannot_tell", None: "untested"}  # the texts of better(t)

# label, decoder design, where the context goes, which state attends
VARIANTS = (
    ("book", "book", "output layer only (the book's model)", "current h_t"),
    (
        "book-input",
        "{name: book, context_into_input: true}",
        "output layer and the next step's input (§4.2)",
        "current h_t",
    ),
    ("bahdanau", "bahdanau", "this step's input and the readout", "previous s_{t-1}"),
    (
        "luong",
        "{name: luong, input_feeding: true}",
        "attentional state h~_t: output layer and the next step's input (input feeding)",
        "current h_t",
    ),
)
OBSERVED = ("bahdanau", "luong")  # designs no document ranks: they feed no core finding
ALIKE = 5.0  # points of test exact match within which two designs count as doing as well
COLORS = {"book": "tab:red", "book-input": "tab:orange", "bahdanau": "tab:green", "luong": "tab:blue"}


@dataclass
class PlacementOptions(BookTaskOptions, PlateauOptions):
    steps: int = budget(6000)  # the cap of updates of every run (batch 128; at 2,400 all 12 runs were still improving)
    eval_every: int = 150  # updates between dev evaluations (the curves)
    hidden_size: int = 128  # LSTM units (the book: 256; halved so 4 designs x 5 seeds fit the budget)


@REPRODUCTIONS.register("placement", options=PlacementOptions)
class Placement(Reproduction):
    title, claim, quotes, source = TEXT.title, TEXT.claim, TEXT.quotes, TEXT.source
    default_seeds = 5
    nominal_minutes = 90.0

    def run(self) -> Result:
        o, ctx = self.options, self.context
        data = o.split(ctx.run_dir("data"))
        common = [f"model.hidden_size={o.hidden_size}", *step_budget(o.steps, o.eval_every, o.dev_sentences, o)]
        variants = [(label, "book-attention", [f"model.decoder={decoder}"]) for label, decoder, _, _ in VARIANTS]
        rows = compare_variants(ctx, variants, data, common)
        curves = {label: [curve(r["run_dir"], "dev_exact_match") for r in rs] for label, rs in rows.items()}
        half = max(o.eval_every, (o.steps // 2) // o.eval_every * o.eval_every)
        at_half = {label: Spread([100 * (value_at(c, half) or 0.0) for c in cs]) for label, cs in curves.items()}
        test = {label: Spread([100 * v for v in spreads(rs, "test_exact_match").values]) for label, rs in rows.items()}
        reach = {label: [first_reaching(c, 0.9) for c in cs] for label, cs in curves.items()}
        table = Table(
            [
                "design",
                "context goes into",
                "attending state",
                "parameters",
                "tokens/s",
                f"dev exact match at step {half}",
                "test exact match",
                "steps to 90% dev",
            ],
            [
                [
                    label,
                    where,
                    state,
                    f"{rows[label][0]['parameters']:,}",
                    f"{Spread([r['tokens_per_second'] for r in rows[label]]).mean:,.0f}",
                    at_half[label].format(unit="%"),
                    test[label].format(unit="%"),
                    steps_to(reach[label]),
                ]
                for label, _, where, state in VARIANTS
            ],
            caption=TEXT.format("caption", steps=o.steps, seeds_note=seeds_note(ctx.seeds)),
        )
        figure = self._figure(curves)
        summary = TEXT.format(
            "summary",
            scores=", ".join(f"{label} {test[label].mean:.1f}%" for label, *_ in VARIANTS),
            seeds=ctx.seeds,
            plural="s" if ctx.seeds > 1 else "",
            steps=o.steps,
        )
        return Result(
            summary=summary,
            tables=[table],
            figures=[figure],
            setup=TEXT.paragraphs(
                "setup",
                counts=counts(data),
                hidden_size=o.hidden_size,
                dev_sentences=o.dev_sentences,
                eval_every=o.eval_every,
                plateau=o.plateau_words(),
                steps=o.steps,
                margin=ALIKE,
            ),
            budget=TEXT.format(
                "budget", steps=o.steps, epochs=o.steps / 348, plateau=o.plateau_words(), seeds=ctx.seeds
            ),
            runs=run_records(rows, o.steps, ctx.seed_list, observed=OBSERVED),
            data={
                "test_exact_match": {k: v.values for k, v in test.items()},
                "dev_at_half": {k: v.values for k, v in at_half.items()},
                "half": half,
                "margin": ALIKE,
            },
        )

    def _figure(self, curves):
        plt = pyplot()
        fig, ax = plt.subplots(figsize=(7.5, 4.3), dpi=110)
        for label, _, _where, state in VARIANTS:
            draw_seeds(ax, curves[label], f"{label}: {state}", color=COLORS[label], scale=100)
        ax.set_xlabel("update (batch of 128 dates)")
        ax.set_ylabel("dev exact match (%)")
        ax.set_ylim(-2, 102)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8, loc="upper left")
        ax.set_title(f"Context placement on the book's date task ({seeds_note(self.context.seeds)})", fontsize=10)
        return save_figure(fig, self.context.figure("curves")), TEXT.format("figure")

    @staticmethod
    def judge(data: dict) -> tuple[list[Finding], list[Phrase]]:
        """Core, the book's one point: the context into the next step's input as well, or into the
        output layer only, makes little difference (alike within the margin by Welch's two
        one-sided tests). Bahdanau's and Luong's designs: observed (no document claims one is
        better), by the exact permutation test over the seeds."""
        test = {k: Spread(v) for k, v in data["test_exact_match"].items()}
        at_half = {k: Spread(v) for k, v in data["dev_at_half"].items()}
        margin, half = data["margin"], data["half"]

        t, words = comparison("book-input", test["book-input"], "book", test["book"], unit="%")
        words += TEXT.phrase("at_half", half=half, a=at_half["book-input"].mean, b=at_half["book"].mean)
        same = alike(t, margin)
        finding = Finding(
            same,
            TEXT.phrase("input.start") + words + equivalence_phrase(t, margin) + TEXT.phrase("input." + SAME[same]),
            reason=alike_reason(t) if same is None else Phrase(),
            evidence=evidence_of(
                [(("book-input",), "test exact match"), (("book",), "test exact match")],
                (test["book-input"].mean, test["book"].mean),
                {True: "alike", False: "apart", None: ""}[same],
                margin,
            ),
        )
        observations = []
        for a, b, what in (("luong", "bahdanau", "luong_bahdanau"), ("luong", "book", "luong_book")):
            t, words = permuted(a, test[a], b, test[b], unit="%")
            words += TEXT.phrase("at_half", half=half, a=at_half[a].mean, b=at_half[b].mean)
            order = better(t)
            observations.append(TEXT.phrase(what) + words + TEXT.phrase("order." + ORDER[order], first=a, second=b))
        return [finding], observations
