"""reversal: Sutskever et al.'s source reversal, on and off, without and with attention, on the
book's addition task (where the book's chapter 7 tries the same trick)."""
from __future__ import annotations

import math
from dataclasses import dataclass

from ..runs import read_metrics
from ..viz import pyplot, save_figure
from .base import REPRODUCTIONS, Finding, Reproduction, Result, Table, budget, verdict_of
from .datasets import BookTaskOptions, counts
from .plots import draw_seeds, seeds_note
from .spread import Spread, contrast, spreads
from .training import compare_variants, curve, step_budget

# label, preset, reversed source
VARIANTS = (
    ("plain", "book-baseline", False),
    ("plain-reversed", "book-baseline", True),
    ("attention", "book-attention", False),
    ("attention-reversed", "book-attention", True),
)
STYLE = {"plain": ("tab:gray", "--"), "plain-reversed": ("tab:gray", "-"),
         "attention": ("tab:red", "--"), "attention-reversed": ("tab:red", "-")}
STEPS_PER_EPOCH = 348  # the book's 44,500 training questions in batches of 128


@dataclass
class ReversalOptions(BookTaskOptions):
    file_name = "addition.txt"
    steps: int = budget(2800)  # updates of every run (about 8 epochs of the book's addition.txt)
    eval_every: int = 350  # updates between dev evaluations (about an epoch)
    hidden_size: int = 128  # LSTM units (the book's chapter-7 addition experiment: 128)


@REPRODUCTIONS.register("reversal", options=ReversalOptions)
class Reversal(Reproduction):
    title = "Reversing the source: a large help without attention, little with it"
    claim = ("Reversing the words of the source sentence (not the target) made Sutskever et al.'s LSTM encoder-decoder "
             "much better (test perplexity 5.8 -> 4.7, BLEU 25.9 -> 30.6): the first words of the source come close "
             "to the first words of the target, which shortens the minimal time lag the model must bridge. The book "
             "(chapter 7) tries the same trick on its addition task with the same effect. With attention, every "
             "decoder step reaches every source position directly, so the reversal should matter little.")
    source = ("Sutskever, Vinyals & Le 2014, \"Sequence to Sequence Learning with Neural Networks\", §3.3; *Deep "
              "Learning from Scratch 2*, §7.5.1 (reversing the input on addition.txt); seed documents 000 and 001; "
              "the presets `configs/book-baseline.yaml` and `configs/book-attention.yaml`.")
    default_seeds = 3
    nominal_minutes = 25.0

    def run(self) -> Result:
        o, ctx = self.options, self.context
        data = o.split(ctx.run_dir("data"))
        common = [f"model.hidden_size={o.hidden_size}", *step_budget(o.steps, o.eval_every, o.dev_sentences),
                  "decode.max_len=6"]
        variants = [(label, name, [f"data.reverse_source={'true' if rev else 'false'}"])
                    for label, name, rev in VARIANTS]
        rows = compare_variants(ctx, variants, data, common)
        curves = {label: [curve(r["run_dir"], "dev_exact_match") for r in rs] for label, rs in rows.items()}
        test = {label: Spread([100 * v for v in spreads(rs, "test_exact_match").values]) for label, rs in rows.items()}
        perplexity = {label: Spread([self._perplexity(r["run_dir"]) for r in rs]) for label, rs in rows.items()}
        table = Table(
            ["model", "source", "parameters", "tokens/s", "dev perplexity", "test exact match"],
            [[label.split("-")[0], "reversed" if rev else "as written", f"{rows[label][0]['parameters']:,}",
              f"{Spread([r['tokens_per_second'] for r in rows[label]]).mean:,.0f}",
              perplexity[label].format(digits=3, unit=""), test[label].format(unit="%")]
             for label, _, rev in VARIANTS],
            caption=(f"The book's addition task after {o.steps} updates ({seeds_note(ctx.seeds)}); dev perplexity: "
                     "exp of the dev loss per answer token at the best dev checkpoint; test: that checkpoint's exact "
                     "match on the book's test questions."))
        figure = self._figure(curves)
        findings = self._findings(test)
        gain = {m: test[f"{m}-reversed"].mean - test[m].mean for m in ("plain", "attention")}
        summary = (f"reversal moves test exact match by {gain['plain']:+.1f} points without attention "
                   f"({test['plain'].mean:.1f}% -> {test['plain-reversed'].mean:.1f}%) and {gain['attention']:+.1f} "
                   f"with it ({test['attention'].mean:.1f}% -> {test['attention-reversed'].mean:.1f}%), "
                   f"{ctx.seeds} seed{'s' if ctx.seeds > 1 else ''}")
        return Result(
            verdict=verdict_of(findings, ctx.seeds), summary=summary, tables=[table], figures=[figure],
            findings=findings,
            observations=["dev perplexity, reversed against as written: " + "; ".join(
                f"{m} {perplexity[m + '-reversed'].mean:.3f} against {perplexity[m].mean:.3f}"
                for m in ("plain", "attention")) + " (Sutskever et al.: 4.7 against 5.8 on WMT'14)."],
            setup=["Data: the book's addition.txt (\"16+75\" -> \"91\", questions padded to 7 characters, answers to "
                   f"4) split as `attnseq data book` splits it (500 dev questions from its training part, its test "
                   f"questions): {counts(data)}; characters, padding spaces kept.",
                   f"Models: `configs/book-baseline.yaml` (the plain seq2seq: the encoder's last state starts the "
                   f"decoder) and `configs/book-attention.yaml` (the book's attention decoder), both with "
                   f"`model.hidden_size={o.hidden_size}` as in the book's addition experiment, and "
                   "`data.reverse_source` true or false; embeddings 16, batch 128, Adam 1e-3, clip 5, the book's "
                   "initialisation. With the source as written, the padding comes last, right before the decoder "
                   "starts; reversed, it comes first, as in the book.",
                   f"Trained with `attnseq.compare` (its train-and-evaluate of one config): {o.steps} updates, dev "
                   f"exact match on {o.dev_sentences} questions every {o.eval_every} updates; the best dev checkpoint "
                   "scored on the test questions, greedy.",
                   "Sutskever et al. measured reversal on WMT'14 English-French with 4-layer LSTMs of 1000 units; "
                   "the book and this page use its arithmetic task."],
            budget=f"{o.steps} updates per run (about {o.steps / STEPS_PER_EPOCH:.0f} epochs), 4 configurations x "
                   f"{ctx.seeds} seeds",
            longer=("The book trains 25 epochs: `attnseq reproduce reversal --budget-minutes 78` (8,736 updates a "
                    "run)."),
            data={"test_exact_match": {k: v.values for k, v in test.items()},
                  "dev_perplexity": {k: v.values for k, v in perplexity.items()}})

    @staticmethod
    def _perplexity(run_dir) -> float:
        """exp(dev loss) of the run's best evaluation."""
        best = [r for r in read_metrics(run_dir) if r.get("type") == "eval" and r.get("best") and "dev_loss" in r]
        return math.exp(best[-1]["dev_loss"]) if best else float("nan")

    def _figure(self, curves):
        plt = pyplot()
        fig, ax = plt.subplots(figsize=(7.5, 4.3), dpi=110)
        for label, _, rev in VARIANTS:
            color, style = STYLE[label]
            draw_seeds(ax, curves[label], f"{label.split('-')[0]}, source {'reversed' if rev else 'as written'}",
                       color=color, linestyle=style, scale=100)
        ax.set_xlabel("update (batch of 128 questions)")
        ax.set_ylabel("dev exact match (%)")
        ax.set_ylim(-2, 102)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8, loc="upper left")
        ax.set_title(f"Source reversal on the book's addition task ({seeds_note(self.context.seeds)})", fontsize=10)
        return save_figure(fig, self.context.figure("curves")), (
            "Dev exact match during training, the source as written (dashed) and reversed (solid), with and "
            "without attention.")

    def _findings(self, test) -> list[Finding]:
        order, text = contrast("reversed", test["plain-reversed"], "as written", test["plain"])
        gain_plain = test["plain-reversed"].mean - test["plain"].mean
        findings = [Finding(
            None if order in (None, 0) else order > 0,
            f"without attention: {text}, {gain_plain:+.1f} points"
            + {1: ": reversal helps the plain model, as Sutskever et al. and the book found.",
               -1: ": reversal hurts the plain model here.", 0: ": within the spread of the seeds.",
               None: "."}[order])]
        order, text = contrast("reversed", test["attention-reversed"], "as written", test["attention"])
        gain_att = test["attention-reversed"].mean - test["attention"].mean
        little = abs(gain_att) < max(abs(gain_plain) / 2, 1e-9)
        findings.append(Finding(
            little if gain_plain > 0 else None,
            f"with attention: {text}, {gain_att:+.1f} points, against {gain_plain:+.1f} without"
            + (": without a gain for the plain model there is no contrast to judge." if gain_plain <= 0 else
               ": reversal matters far less once every step can attend to every position." if little else
               ": reversal matters about as much with attention as without it here.")))
        return findings
