"""reversal: Sutskever et al.'s source reversal, on and off, without and with attention, on the
book's addition task (where the book's chapter 7 tries the same trick)."""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..viz import pyplot, save_figure
from .base import REPRODUCTIONS, Finding, Quote, Reproduction, Result, Table, budget
from .datasets import BookTaskOptions, counts
from .plots import draw_seeds, seeds_note
from .significance import better
from .spread import Spread, comparison, spreads
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
STEPS_PER_EPOCH = 348  # the book's 44,500 training questions in batches of 128


@dataclass
class ReversalOptions(BookTaskOptions, PlateauOptions):
    file_name = "addition.txt"
    steps: int = budget(6000)  # the cap of updates of every run (about 17 epochs of addition.txt; the book: 25)
    eval_every: int = 350  # updates between dev evaluations (about an epoch)
    hidden_size: int = 128  # LSTM units (the book's chapter-7 addition experiment: 128)


@REPRODUCTIONS.register("reversal", options=ReversalOptions)
class Reversal(Reproduction):
    title = "Reversing the source sentence, without and with attention"
    claim = "Reversing the source (not the target) makes a plain LSTM encoder-decoder markedly better."
    quotes = (
        Quote(
            "we found that reversing the order of the words in all source sentences (but not target sentences) "
            "improved the LSTM's performance markedly, because doing so introduced many short term "
            "dependencies between the source and the target sentence which made the optimization problem "
            "easier.",
            'Sutskever, Vinyals & Le 2014, "Sequence to Sequence Learning with Neural Networks", abstract',
        ),
        Quote(
            "在学习数据的过程中还使用了反转输入语句的技巧",
            "seed document 000 (*Deep Learning from Scratch 2*, chapter 8), §3.1",
            "in training, the trick of reversing the input sentence was also used",
        ),
    )
    source = (
        "Sutskever, Vinyals & Le 2014, abstract and §3.3; *Deep Learning from Scratch 2* §7.5.1 (reversing the "
        "input on addition.txt) and §8.3.1 (seed document 000); the presets `configs/book-baseline.yaml` and "
        "`configs/book-attention.yaml`. No document claims what reversal does with attention: the page "
        "reports it as an observation."
    )
    default_seeds = 3
    nominal_minutes = 29.0

    def run(self) -> Result:
        o, ctx = self.options, self.context
        data = o.split(ctx.run_dir("data"))
        common = [
            f"model.hidden_size={o.hidden_size}",
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
            ["model", "source", "parameters", "tokens/s", "dev perplexity", "test exact match"],
            [
                [
                    label.split("-")[0],
                    "reversed" if rev else "as written",
                    f"{rows[label][0]['parameters']:,}",
                    f"{Spread([r['tokens_per_second'] for r in rows[label]]).mean:,.0f}",
                    perplexity[label].format(digits=3, unit=""),
                    test[label].format(unit="%"),
                ]
                for label, _, rev in VARIANTS
            ],
            caption=(
                f"The book's addition task, each run to its plateau or {o.steps} updates ({seeds_note(ctx.seeds)}); dev perplexity: "
                "exp of the dev loss per answer token at the best dev checkpoint; test: that checkpoint's exact "
                "match on the book's test questions."
            ),
        )
        figure = self._figure(curves)
        gain = {m: test[f"{m}-reversed"].mean - test[m].mean for m in ("plain", "attention")}
        summary = (
            f"reversal moves test exact match by {gain['plain']:+.1f} points without attention "
            f"({test['plain'].mean:.1f}% -> {test['plain-reversed'].mean:.1f}%) and {gain['attention']:+.1f} "
            f"with it ({test['attention'].mean:.1f}% -> {test['attention-reversed'].mean:.1f}%), "
            f"{ctx.seeds} seed{'s' if ctx.seeds > 1 else ''}"
        )
        return Result(
            summary=summary,
            tables=[table],
            figures=[figure],
            runs=run_records(rows, o.steps, ctx.seed_list),
            setup=[
                'Data: the book\'s addition.txt ("16+75" -> "91", questions padded to 7 characters, answers to '
                f"4) split as `attnseq data book` splits it (500 dev questions from its training part, its test "
                f"questions): {counts(data)}; characters, padding spaces kept.",
                f"Models: `configs/book-baseline.yaml` (the plain seq2seq: the encoder's last state starts the "
                f"decoder) and `configs/book-attention.yaml` (the book's attention decoder), both with "
                f"`model.hidden_size={o.hidden_size}` as in the book's addition experiment, and "
                "`data.reverse_source` true or false; embeddings 16, batch 128, Adam 1e-3, clip 5, the book's "
                "initialisation. With the source as written, the padding comes last, right before the decoder "
                "starts; reversed, it comes first, as in the book.",
                f"Trained with `attnseq.compare` (its train-and-evaluate of one config): dev exact match on "
                f"{o.dev_sentences} questions every {o.eval_every} updates, {o.plateau_words()}, at most {o.steps} "
                "updates; the best dev checkpoint scored on the test questions, greedy. Welch's t over the seeds.",
                "Sutskever et al. measured reversal on WMT'14 English-French with 4-layer LSTMs of 1000 units; "
                "the book and this page use its arithmetic task.",
            ],
            budget=f"at most {o.steps} updates per run (about {o.steps / STEPS_PER_EPOCH:.0f} epochs), "
            f"{o.plateau_words()}; 4 configurations x {ctx.seeds} seeds",
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
        return save_figure(fig, self.context.figure("curves")), (
            "Dev exact match during training, the source as written (dashed) and reversed (solid), with and "
            "without attention."
        )

    @staticmethod
    def judge(data: dict) -> tuple[list[Finding], list[Phrase]]:
        test = {k: Spread(v) for k, v in data["test_exact_match"].items()}
        perplexity = {k: Spread(v) for k, v in data["dev_perplexity"].items()}
        t, words = comparison("reversed", test["plain-reversed"], "as written", test["plain"])
        order = better(t)
        finding = Finding(
            None if not order else order > 0,
            Phrase("without attention: ")
            + words
            + {
                1: Phrase(": reversal helps the plain model, as Sutskever et al. found."),
                -1: Phrase(": reversal hurts the plain model here."),
                0: Phrase(": the test cannot tell them apart."),
                None: Phrase("."),
            }[order],
        )
        t, words = comparison("reversed", test["attention-reversed"], "as written", test["attention"])
        order = better(t)
        gains = [test[f"{m}-reversed"].mean - test[m].mean for m in ("plain", "attention")]
        observations = [
            Phrase("with attention: ")
            + words
            + {
                1: Phrase(": reversal helps"),
                -1: Phrase(": reversal hurts"),
                0: Phrase(": the test cannot tell them apart"),
                None: Phrase(""),
            }[order]
            + Phrase("; the gain is {:+.1f} points with attention against {:+.1f} without.", gains[1], gains[0]),
            Phrase(
                "dev perplexity, reversed against as written: plain {:.3f} against {:.3f}, attention "
                "{:.3f} against {:.3f}.",
                perplexity["plain-reversed"].mean,
                perplexity["plain"].mean,
                perplexity["attention-reversed"].mean,
                perplexity["attention"].mean,
            ),
        ]
        return [finding], observations
