"""skip-connections: a deep attention seq2seq with skip (residual) connections between its
encoder's LSTM layers against the same depth without them, on the book's date task (the book's
section 4.3 on deeper models)."""

from __future__ import annotations

from dataclasses import dataclass

from ..viz import pyplot, save_figure
from .base import REPRODUCTIONS, Finding, Reproduction, Result, Table, budget
from .datasets import BookTaskOptions, counts
from .plots import draw_seeds, seeds_note
from .spread import Spread, better_finding, spreads
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

# label, model.encoder
VARIANTS = (("skip", "residual"), ("plain", "stacked"))
COLORS = {"skip": "tab:green", "plain": "tab:gray"}
STEPS_PER_EPOCH = 348  # the book's 44,500 training dates in batches of 128

TEXT = texts("skip-connections")


@dataclass
class SkipConnectionsOptions(BookTaskOptions, PlateauOptions):
    steps: int = budget(4500)  # the cap of updates of every run (batch 128; at 1,500 all were still climbing)
    eval_every: int = 150  # updates between dev evaluations (the curves)
    layers: int = 3  # LSTM layers of the encoder and of the decoder (the book's figure: 3)
    hidden_size: int = 64  # LSTM units (the book: 256; a quarter, so 2 designs x 3 seeds x 3 layers fit the budget)
    dev_sentences: int = 300  # dev dates held out of the book's training part, decoded at each evaluation


@REPRODUCTIONS.register("skip-connections", options=SkipConnectionsOptions)
class SkipConnections(Reproduction):
    title, claim, quotes, source = TEXT.title, TEXT.claim, TEXT.quotes, TEXT.source
    default_seeds = 3
    nominal_minutes = 28.0

    def run(self) -> Result:
        o, ctx = self.options, self.context
        data = o.split(ctx.run_dir("data"))
        common = [
            f"model.hidden_size={o.hidden_size}",
            f"model.encoder_layers={o.layers}",
            f"model.decoder_layers={o.layers}",
            *step_budget(o.steps, o.eval_every, o.dev_sentences, o),
        ]
        rows = compare_variants(
            ctx, [(label, "book-attention", [f"model.encoder={encoder}"]) for label, encoder in VARIANTS], data, common
        )
        curves = {label: [curve(r["run_dir"], "dev_exact_match") for r in rs] for label, rs in rows.items()}
        half = max(o.eval_every, (o.steps // 2) // o.eval_every * o.eval_every)
        at_half = {label: Spread([100 * (value_at(c, half) or 0.0) for c in cs]) for label, cs in curves.items()}
        test = {label: Spread([100 * v for v in spreads(rs, "test_exact_match").values]) for label, rs in rows.items()}
        reach = {label: [first_reaching(c, 0.9) for c in cs] for label, cs in curves.items()}
        table = Table(
            [
                "model",
                "encoder",
                "parameters",
                "tokens/s",
                f"dev exact match at step {half}",
                "test exact match",
                "steps to 90% dev",
            ],
            [
                [
                    label,
                    f"{o.layers} LSTM layers, {encoder}",
                    f"{rows[label][0]['parameters']:,}",
                    f"{Spread([r['tokens_per_second'] for r in rows[label]]).mean:,.0f}",
                    at_half[label].format(unit="%"),
                    test[label].format(unit="%"),
                    steps_to(reach[label]),
                ]
                for label, encoder in VARIANTS
            ],
            caption=TEXT.format("caption", layers=o.layers, steps=o.steps, seeds_note=seeds_note(ctx.seeds)),
        )
        summary = TEXT.format(
            "summary",
            test=", ".join(f"{label} {test[label].mean:.1f}%" for label, _ in VARIANTS),
            half=half,
            at_half=", ".join(f"{label} {at_half[label].mean:.1f}%" for label, _ in VARIANTS),
            seeds=ctx.seeds,
            layers=o.layers,
        )
        return Result(
            summary=summary,
            tables=[table],
            figures=[self._figure(curves)],
            runs=run_records(rows, o.steps, ctx.seed_list),
            setup=TEXT.paragraphs(
                "setup",
                counts=counts(data),
                layers=o.layers,
                hidden_size=o.hidden_size,
                dev_sentences=o.dev_sentences,
                eval_every=o.eval_every,
                plateau=o.plateau_words(),
                steps=o.steps,
            ),
            budget=TEXT.format(
                "budget", steps=o.steps, epochs=o.steps / STEPS_PER_EPOCH, plateau=o.plateau_words(), seeds=ctx.seeds
            ),
            data={
                "test_exact_match": {k: v.values for k, v in test.items()},
                "dev_at_half": {k: v.values for k, v in at_half.items()},
                "half": half,
                "layers": o.layers,
            },
        )

    def _figure(self, curves):
        plt = pyplot()
        fig, ax = plt.subplots(figsize=(7.5, 4.3), dpi=110)
        for label, encoder in VARIANTS:
            draw_seeds(ax, curves[label], f"{label}: {encoder} encoder", color=COLORS[label], scale=100)
        ax.set_xlabel("update (batch of 128 dates)")
        ax.set_ylabel("dev exact match (%)")
        ax.set_ylim(-2, 102)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8, loc="upper left")
        ax.set_title(
            f"{self.options.layers}-layer attention seq2seq on the book's dates ({seeds_note(self.context.seeds)})",
            fontsize=10,
        )
        return save_figure(fig, self.context.figure("curves")), TEXT.format("figure")

    @staticmethod
    def judge(data: dict) -> tuple[list[Finding], list[Phrase]]:
        """Core: with skip connections the deep model trains better (its test exact match), by the
        exact permutation test over the seeds. The dev exact match halfway through the cap (how
        fast) is one evaluation of runs still climbing: a proxy, reported."""
        test = {k: Spread(v) for k, v in data["test_exact_match"].items()}
        at_half = {k: Spread(v) for k, v in data["dev_at_half"].items()}
        column = f"dev exact match at step {data['half']}"
        return [
            better_finding(
                TEXT.phrase("test", layers=data["layers"]),
                "skip",
                test["skip"],
                "plain",
                test["plain"],
                where=[(("skip",), "test exact match"), (("plain",), "test exact match")],
            ),
            better_finding(
                TEXT.phrase("at_half", half=data["half"]),
                "skip",
                at_half["skip"],
                "plain",
                at_half["plain"],
                core=False,
                where=[(("skip",), column), (("plain",), column)],
            ),
        ], []
