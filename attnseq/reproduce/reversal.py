"""reversal: Sutskever et al.'s source reversal, on and off, without and with attention, on the
book's addition task (where the book's chapter 7 tries the same trick)."""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..viz import pyplot, save_figure
from .base import REPRODUCTIONS, Finding, Reproduction, Result, Table, budget
from .datasets import BookTaskOptions, counts
from .plots import draw_seeds, seeds_note
from .significance import better
from .spread import Spread, better_finding, permuted, spreads
from .texts import texts
from .training import PlateauOptions, best_dev_loss, compare_variants, curve, run_records, step_budget
from .wording import Phrase

# label, preset, reversed source
VARIANTS = (
    ("plain", "book-baseline", False),
    ("plain-reversed", "book-baseline", True),
    ("attention", "book-attention", False),
    ("attention-reversed", "book-attention", True),
)
STYLE = {
    "plain": ("tab:gray", "--"),
    "plain-reversed": ("tab:gray", "-"),
    "attention": ("tab:red", "--"),
    "attention-reversed": ("tab:red", "-"),
}
OBSERVED = ("attention", "attention-reversed")  # arms no document makes a claim of: they feed no core finding
STEPS_PER_EPOCH = 348  # the book's 44,500 training questions in batches of 128

TEXT = texts("reversal")
ORDER = {1: "helps", -1: "hurts", 0: "cannot_tell", None: "untested"}  # the texts of better(t)
COLUMNS = ("model", "source", "parameters", "tokens/s", "dev perplexity", "test exact match")  # the table's
SOURCE = {False: "as written", True: "reversed"}  # the table's source column


@dataclass
class ReversalOptions(BookTaskOptions, PlateauOptions):
    file_name = "addition.txt"
    steps: int = budget(20000)  # the cap of updates of every run (about 57 epochs of addition.txt; the book: 25)
    eval_every: int = 350  # updates between dev evaluations (about an epoch)
    hidden_size: int = 128  # LSTM units (the book's chapter-7 addition experiment: 128)
    lr: float = 0.003  # Adam's rate (at the book's 0.001, 9 of 12 runs were still climbing at 6,000 updates)
    masked_padding: bool = True  # the questions' padding spaces stripped (the book keeps them as tokens)


@REPRODUCTIONS.register("reversal", options=ReversalOptions)
class Reversal(Reproduction):
    title, claim, quotes, source = TEXT.title, TEXT.claim, TEXT.quotes, TEXT.source
    default_seeds = 5
    nominal_minutes = 33.0

    def run(self) -> Result:
        o, ctx = self.options, self.context
        data = o.split(ctx.run_dir("data"))
        common = [
            f"model.hidden_size={o.hidden_size}",
            f"train.lr={o.lr}",
            f"data.strip={'true' if o.masked_padding else 'false'}",
            *step_budget(o.steps, o.eval_every, o.dev_sentences, o),
            "decode.max_len=6",
        ]
        variants = [
            (label, name, [f"data.reverse_source={'true' if rev else 'false'}"]) for label, name, rev in VARIANTS
        ]
        rows = compare_variants(ctx, variants, data, common)
        curves = {label: [curve(r["run_dir"], "dev_exact_match") for r in rs] for label, rs in rows.items()}
        test = {label: Spread([100 * v for v in spreads(rs, "test_exact_match").values]) for label, rs in rows.items()}
        perplexity = {label: Spread([math.exp(best_dev_loss(r["run_dir"])) for r in rs]) for label, rs in rows.items()}
        table = Table(
            list(COLUMNS),
            [
                [
                    label.split("-")[0],
                    SOURCE[rev],
                    f"{rows[label][0]['parameters']:,}",
                    f"{Spread([r['tokens_per_second'] for r in rows[label]]).mean:,.0f}",
                    perplexity[label].format(digits=3, unit=""),
                    test[label].format(unit="%"),
                ]
                for label, _, rev in VARIANTS
            ],
            caption=TEXT.format("caption", steps=o.steps, seeds_note=seeds_note(ctx.seeds)),
        )
        figure = self._figure(curves)
        gain = {m: test[f"{m}-reversed"].mean - test[m].mean for m in ("plain", "attention")}
        summary = TEXT.format(
            "summary",
            plain_gain=gain["plain"],
            plain=test["plain"].mean,
            plain_reversed=test["plain-reversed"].mean,
            attention_gain=gain["attention"],
            attention=test["attention"].mean,
            attention_reversed=test["attention-reversed"].mean,
            seeds=ctx.seeds,
            plural="s" if ctx.seeds > 1 else "",
        )
        return Result(
            summary=summary,
            tables=[table],
            figures=[figure],
            runs=run_records(rows, o.steps, ctx.seed_list, observed=OBSERVED),  # the attention arms: observed
            setup=TEXT.paragraphs(
                "setup",
                counts=counts(data),
                hidden_size=o.hidden_size,
                lr=o.lr,
                padding=TEXT.format("masked" if o.masked_padding else "kept"),
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
                "dev_perplexity": {k: v.values for k, v in perplexity.items()},
            },
        )

    def _figure(self, curves):
        plt = pyplot()
        fig, ax = plt.subplots(figsize=(7.5, 4.3), dpi=110)
        for label, _, rev in VARIANTS:
            color, style = STYLE[label]
            draw_seeds(
                ax,
                curves[label],
                f"{label.split('-')[0]}, source {'reversed' if rev else 'as written'}",
                color=color,
                linestyle=style,
                scale=100,
            )
        ax.set_xlabel("update (batch of 128 questions)")
        ax.set_ylabel("dev exact match (%)")
        ax.set_ylim(-2, 102)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8, loc="upper left")
        ax.set_title(f"Source reversal on the book's addition task ({seeds_note(self.context.seeds)})", fontsize=10)
        return save_figure(fig, self.context.figure("curves")), TEXT.format("figure")

    @staticmethod
    def judge(data: dict) -> tuple[list[Finding], list[Phrase]]:
        """Core, on the plain model (the paper's): reversal raises its test exact match, and lowers
        its dev perplexity (the paper's own measure), each by the exact permutation test over the
        seeds. With attention: observed (no document claims it)."""
        test = {k: Spread(v) for k, v in data["test_exact_match"].items()}
        perplexity = {k: Spread(v) for k, v in data["dev_perplexity"].items()}
        rows = {"plain": ("plain", SOURCE[False]), "plain-reversed": ("plain", SOURCE[True])}
        findings = [
            better_finding(
                TEXT.phrase("plain.start"),
                "reversed",
                test["plain-reversed"],
                "as written",
                test["plain"],
                where=[(rows["plain-reversed"], COLUMNS[5]), (rows["plain"], COLUMNS[5])],
                outcomes={
                    1: TEXT.phrase("plain.helps"),
                    -1: TEXT.phrase("plain.hurts"),
                    0: TEXT.phrase("plain.cannot_tell"),
                    None: TEXT.phrase("plain.untested"),
                },
            ),
            better_finding(
                TEXT.phrase("plain_perplexity.start"),
                "reversed",
                perplexity["plain-reversed"],
                "as written",
                perplexity["plain"],
                unit="",
                digits=3,
                lower=True,
                where=[(rows["plain-reversed"], COLUMNS[4]), (rows["plain"], COLUMNS[4])],
                outcomes={
                    1: TEXT.phrase("plain_perplexity.helps"),
                    -1: TEXT.phrase("plain_perplexity.hurts"),
                    0: TEXT.phrase("plain.cannot_tell"),
                    None: TEXT.phrase("plain.untested"),
                },
            ),
        ]
        t, words = permuted("reversed", test["attention-reversed"], "as written", test["attention"])
        order = better(t)
        gains = [test[f"{m}-reversed"].mean - test[m].mean for m in ("plain", "attention")]
        _, perplexity_words = permuted(
            "reversed",
            perplexity["attention-reversed"],
            "as written",
            perplexity["attention"],
            unit="",
            digits=3,
            lower=True,
        )
        observations = [
            TEXT.phrase("attention.start")
            + words
            + TEXT.phrase("attention." + ORDER[order])
            + TEXT.phrase("attention.gain", attention=gains[1], plain=gains[0]),
            TEXT.phrase("perplexity") + perplexity_words + TEXT.phrase("stop"),
        ]
        return findings, observations
