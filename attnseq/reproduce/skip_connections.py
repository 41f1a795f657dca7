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
from .training import PlateauOptions, compare_variants, curve, first_reaching, run_records, step_budget
from .wording import Phrase

# label, model.encoder
VARIANTS = (("skip", "residual"), ("plain", "stacked"))
COLORS = {"skip": "tab:green", "plain": "tab:gray"}
STEPS_PER_EPOCH = 348  # the book's 44,500 training dates in batches of 128

TEXT = texts("skip-connections")


@dataclass
class SkipConnectionsOptions(BookTaskOptions, PlateauOptions):
    steps: int = budget(12000)  # the cap of updates of every run (batch 128; at 4,500 all 6 runs were still climbing)
    eval_every: int = 150  # updates between dev evaluations (the curves)
    layers: int = 3  # LSTM layers of the encoder and of the decoder (the book's figure: 3)
    hidden_size: int = 64  # LSTM units (the book: 256; a quarter, so 2 designs x 5 seeds x 3 layers fit the budget)
    dev_sentences: int = 300  # dev dates held out of the book's training part, decoded at each evaluation
    level: float = 0.9  # the dev exact match whose first reaching times how smoothly a model learns


@REPRODUCTIONS.register("skip-connections", options=SkipConnectionsOptions)
class SkipConnections(Reproduction):
    title, claim, quotes, source = TEXT.title, TEXT.claim, TEXT.quotes, TEXT.source
    default_seeds = 5
    nominal_minutes = 57.0

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
            ctx,
            # the name alone: the preset's encoder stays unidirectional (both encoders default to bidirectional)
            [(label, "book-attention", [f"model.encoder.name={encoder}"]) for label, encoder in VARIANTS],
            data,
            common,
        )
        curves = {label: [curve(r["run_dir"], "dev_exact_match") for r in rs] for label, rs in rows.items()}
        test = {label: Spread([100 * v for v in spreads(rs, "test_exact_match").values]) for label, rs in rows.items()}
        reach = {label: [first_reaching(c, o.level) for c in cs] for label, cs in curves.items()}
        # updates to the level, a run that never got there counted at its last update (in its favour)
        to_level = {
            label: Spread([x if x is not None else c.x[-1] for x, c in zip(reach[label], curves[label])])
            for label in reach
        }
        column = level_column(o.level)
        table = Table(
            ["model", "encoder", "parameters", "tokens/s", column, "test exact match"],
            [
                [
                    label,
                    f"{o.layers} unidirectional LSTM layers, {encoder}",
                    f"{rows[label][0]['parameters']:,}",
                    f"{Spread([r['tokens_per_second'] for r in rows[label]]).mean:,.0f}",
                    to_level[label].format(digits=0) + reached_note(reach[label]),
                    test[label].format(unit="%"),
                ]
                for label, encoder in VARIANTS
            ],
            caption=TEXT.format("caption", layers=o.layers, steps=o.steps, seeds_note=seeds_note(ctx.seeds)),
        )
        summary = TEXT.format(
            "summary",
            level=o.level,
            to_level=", ".join(f"{label} {to_level[label].mean:,.0f}" for label, _ in VARIANTS),
            test=", ".join(f"{label} {test[label].mean:.1f}%" for label, _ in VARIANTS),
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
                level=o.level,
            ),
            budget=TEXT.format(
                "budget", steps=o.steps, epochs=o.steps / STEPS_PER_EPOCH, plateau=o.plateau_words(), seeds=ctx.seeds
            ),
            data={
                "test_exact_match": {k: v.values for k, v in test.items()},
                "updates_to_level": {k: v.values for k, v in to_level.items()},
                "level": o.level,
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
        """Core, the book's "learning proceeds smoothly": with skip connections the deep model
        reaches the level of dev exact match in fewer updates, by the exact permutation test over
        the seeds. Its test exact match at the plateau is observed (the book claims nothing of it)."""
        test = {k: Spread(v) for k, v in data["test_exact_match"].items()}
        to_level = {k: Spread(v) for k, v in data["updates_to_level"].items()}
        column = level_column(data["level"])
        return [
            better_finding(
                TEXT.phrase("to_level", layers=data["layers"], level=data["level"]),
                "skip",
                to_level["skip"],
                "plain",
                to_level["plain"],
                unit="",
                digits=0,
                lower=True,
                where=[(("skip",), column), (("plain",), column)],
                outcomes={
                    1: TEXT.phrase("skip_faster"),
                    -1: TEXT.phrase("plain_faster"),
                    0: TEXT.phrase("cannot_tell"),
                    None: TEXT.phrase("stop"),
                },
            ),
            better_finding(
                TEXT.phrase("test"),
                "skip",
                test["skip"],
                "plain",
                test["plain"],
                core=False,
                where=[(("skip",), "test exact match"), (("plain",), "test exact match")],
            ),
        ], []


def level_column(level: float) -> str:
    """The table's column of the updates to ``level`` (the page's and its judge's)."""
    return f"updates to {level:.0%} dev"


def reached_note(reached) -> str:
    """The table's note " (N of K seeds; ...)" when not every run reached the level, else nothing."""
    got = sum(x is not None for x in reached)
    return "" if got == len(reached) else f" ({got} of {len(reached)} seeds; the others at their last update)"
