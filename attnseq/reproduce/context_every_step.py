"""context-every-step: an encoder-decoder without attention whose context C only starts the
decoder (Sutskever et al. 2014) against one that feeds C at every decoder step (Cho et al. 2014),
scored by token accuracy at each output position of a copy task long enough to need C late."""

from __future__ import annotations

from dataclasses import dataclass

from ..eval.metrics import exact_match
from ..viz import pyplot, save_figure
from .base import REPRODUCTIONS, Finding, Reproduction, Result, Table, budget
from .datasets import CopyTaskOptions, counts, read_split
from .spread import Spread, paired_finding
from .texts import texts
from .training import PlateauOptions, fit_seeds, step_budget
from .wording import Phrase

# label, model.decoder
VARIANTS = (("initial-state", "none"), ("every-step", "cho2014"))
COLORS = {"initial-state": "tab:gray", "every-step": "tab:orange"}
DECLINE = "early minus late accuracy"  # the table's column the core finding compares
RATIO = "late over early errors"  # the column of the relative check


def error_ratio(early: float, late: float) -> float:
    """How many times more errors (100 - accuracy, in %) the late positions make than the early
    ones; each error share floored at 0.1% so that a perfect position gives a finite ratio."""
    return max(100 - late, 0.1) / max(100 - early, 0.1)


TEXT = texts("context-every-step")


def position_accuracy(outputs: list[str], references: list[str], length: int) -> list[float]:
    """Character accuracy (%) at each output position 1..``length``, over the references that
    reach that position (a missing output character counts wrong)."""
    right, total = [0] * length, [0] * length
    for hyp, ref in zip(outputs, references):
        for i, char in enumerate(ref[:length]):
            total[i] += 1
            right[i] += i < len(hyp) and hyp[i] == char
    return [100 * a / n if n else 0.0 for a, n in zip(right, total)]


@dataclass
class ContextEveryStepOptions(CopyTaskOptions, PlateauOptions):
    steps: int = budget(8000)  # the cap of updates of every run (batch 128; at 3,000 the runs still improved)
    eval_every: int = 100  # updates between dev evaluations
    hidden_size: int = 64  # LSTM units of encoder and decoder (at 10-16 digits both sat near the floor)
    lr: float = 0.003  # Adam's rate (the book's 0.001 left the runs climbing at the cap)
    early: int = 5  # output positions 1..early are "early", the last `early` up to max_length "late"


@REPRODUCTIONS.register("context-every-step", options=ContextEveryStepOptions)
class ContextEveryStep(Reproduction):
    title, claim, quotes, source = TEXT.title, TEXT.claim, TEXT.quotes, TEXT.source
    default_seeds = 5
    nominal_minutes = 5.0

    def run(self) -> Result:
        from ..api import load
        from .scoring import translate

        o, ctx = self.options, self.context
        data = o.split(ctx.run_dir("data"))
        test = read_split(data, "test")
        settings = [
            f"model.hidden_size={o.hidden_size}",
            f"train.lr={o.lr}",
            *step_budget(o.steps, o.eval_every, o.dev_sentences, o),
            f"decode.max_len={o.max_length + 1}",
        ]
        arms = [(label, "book-baseline", [f"model.decoder={decoder}"]) for label, decoder in VARIANTS]
        runs, records = fit_seeds(ctx, arms, data, settings, o.steps)
        accuracy: dict[str, list[list[float]]] = {}
        exact: dict[str, list[float]] = {}
        for _, label, run_dir in runs:
            hyps, refs = translate(load(run_dir), test, 1)
            accuracy.setdefault(label, []).append(position_accuracy(hyps, refs, o.max_length))
            exact.setdefault(label, []).append(100 * exact_match(hyps, refs))
        early = {k: [sum(a[: o.early]) / o.early for a in v] for k, v in accuracy.items()}
        late = {k: [sum(a[-o.early :]) / o.early for a in v] for k, v in accuracy.items()}
        decline = {k: [e - lt for e, lt in zip(early[k], late[k])] for k in accuracy}
        ratio = {k: [error_ratio(e, lt) for e, lt in zip(early[k], late[k])] for k in accuracy}
        late_from = o.max_length - o.early + 1
        table = Table(
            [
                "model",
                "decoder",
                "test exact match",
                f"accuracy at positions 1-{o.early}",
                f"accuracy at positions {late_from}-{o.max_length}",
                DECLINE,
                RATIO,
            ],
            [
                [
                    label,
                    decoder,
                    Spread(exact[label]).format(unit="%"),
                    Spread(early[label]).format(unit="%"),
                    Spread(late[label]).format(unit="%"),
                    Spread(decline[label]).format(unit=" points"),
                    Spread(ratio[label]).format(unit="x"),
                ]
                for label, decoder in VARIANTS
            ],
            caption=TEXT.format("caption", steps=o.steps, seeds=ctx.seeds),
        )
        return Result(
            summary=TEXT.format(
                "summary",
                **{k.replace("-", "_"): Spread(v).mean for k, v in decline.items()},
                **{f"{k.replace('-', '_')}_ratio": Spread(v).mean for k, v in ratio.items()},
                seeds=ctx.seeds,
                early=o.early,
                late_from=o.max_length - o.early + 1,
                max_length=o.max_length,
            ),
            tables=[table],
            figures=[self._figure(accuracy)],
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
                early=o.early,
                late_from=late_from,
            ),
            budget=TEXT.format("budget", steps=o.steps, seeds=ctx.seeds, plateau=o.plateau_words()),
            data={"decline": decline, "ratio": ratio, "accuracy": accuracy, "exact_match": exact},
        )

    def _figure(self, accuracy):
        plt = pyplot()
        fig, ax = plt.subplots(figsize=(7.5, 4.3), dpi=110)
        for label, decoder in VARIANTS:
            for i, a in enumerate(accuracy[label]):
                name = f"{label} (model.decoder: {decoder})" if i == 0 else None
                ax.plot(range(1, len(a) + 1), a, color=COLORS[label], alpha=0.6, marker=".", label=name)
        ax.set_xlabel("output position (digit of the copied string)")
        ax.set_ylabel("test accuracy at that position (%)")
        ax.set_ylim(-2, 102)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8, loc="lower left")
        o = self.options
        ax.set_title(
            f"Copying {o.min_length}-{o.max_length} digits without attention: C at the start only, or at every step",
            fontsize=10,
        )
        return save_figure(fig, self.context.figure("positions")), TEXT.format("figure")

    @staticmethod
    def judge(data: dict) -> tuple[list[Finding], list[Phrase]]:
        """Core: C's effect weakens as decoding goes on, so the initial-state model's errors grow
        more from early to late output positions than the every-step model's, relative to each
        model's own errors (late over early error share), by the paired t test over the seeds (the
        two models of a seed share its data order). Observed: the drop in accuracy points, which a
        model that errs more everywhere shows larger without any weakening over time."""
        findings = []
        for key, column, unit, core in (("ratio", RATIO, "x", True), ("decline", DECLINE, " points", False)):
            a, b = data[key]["initial-state"], data[key]["every-step"]
            where = [(("initial-state",), column), (("every-step",), column)]
            findings.append(
                paired_finding(TEXT.phrase(key), "initial-state", a, "every-step", b, unit, core=core, where=where)
            )
        return findings, []
