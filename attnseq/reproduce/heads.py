"""heads: multi-head attention against one head of the same total size (the Transformer
paper's Table 3, rows (A)), on generated dates with a small Transformer: h heads of d_model/h
dimensions each, or one head of d_model, every other size the same."""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..schema import number
from ..viz import pyplot, save_figure
from .base import REPRODUCTIONS, Finding, Reproduction, Result, Table, budget
from .datasets import counts, dates
from .plots import draw_seeds, seeds_note
from .spread import Spread, better_finding, spreads
from .texts import texts
from .training import (
    PlateauOptions,
    best_dev_loss,
    compare_variants,
    curve,
    first_reaching,
    run_records,
    step_budget,
    steps_to,
)
from .wording import Phrase

TEXT = texts("heads")
COLORS = {"multi-head": "tab:blue", "one head": "tab:gray"}


@dataclass
class HeadsOptions(PlateauOptions):
    steps: int = budget(6000)  # the cap of updates of every run (batch 64; at 4,000 one run of 6 still climbed)
    eval_every: int = 100  # updates between dev evaluations (the curves)
    hidden_size: int = 64  # d_model, the total size of the heads (transformer-tiny: 128)
    ff_size: int = 128  # the feed-forward layer's width (transformer-tiny: 256)
    heads: int = number(4, 2)  # heads of the multi-head model (d_model / heads dimensions each); the other has one
    train_pairs: int = 20_000  # generated dates for training (attnseq data dates)
    dev_sentences: int = 300  # dev dates decoded at each evaluation
    test_sentences: int = 1_000  # test dates scored at the end


@REPRODUCTIONS.register("heads", options=HeadsOptions)
class Heads(Reproduction):
    title, claim, quotes, source = TEXT.title, TEXT.claim, TEXT.quotes, TEXT.source
    default_seeds = 5
    nominal_minutes = 24.0

    def labels(self) -> dict[str, int]:
        """label -> heads of the two models."""
        return {"multi-head": self.options.heads, "one head": 1}

    def run(self) -> Result:
        o, ctx = self.options, self.context
        data = dates(ctx.run_dir("data"), o.train_pairs, o.dev_sentences, o.test_sentences)
        common = [
            f"model.hidden_size={o.hidden_size}",
            f"model.ff_size={o.ff_size}",
            *step_budget(o.steps, o.eval_every, o.dev_sentences, o),
        ]
        heads = self.labels()
        rows = compare_variants(
            ctx, [(label, "transformer-tiny", [f"model.heads={n}"]) for label, n in heads.items()], data, common
        )
        curves = {label: [curve(r["run_dir"], "dev_exact_match") for r in rs] for label, rs in rows.items()}
        test = {label: Spread([100 * v for v in spreads(rs, "test_exact_match").values]) for label, rs in rows.items()}
        perplexity = {label: Spread([math.exp(best_dev_loss(r["run_dir"])) for r in rs]) for label, rs in rows.items()}
        reach = {label: [first_reaching(c, 0.9) for c in cs] for label, cs in curves.items()}
        table = Table(
            [
                "model",
                "heads x size",
                "parameters",
                "tokens/s",
                "dev perplexity",
                "test exact match",
                "steps to 90% dev",
            ],
            [
                [
                    label,
                    f"{n} x {o.hidden_size // n}",
                    f"{rows[label][0]['parameters']:,}",
                    f"{Spread([r['tokens_per_second'] for r in rows[label]]).mean:,.0f}",
                    perplexity[label].format(digits=4, unit=""),
                    test[label].format(unit="%"),
                    steps_to(reach[label]),
                ]
                for label, n in heads.items()
            ],
            caption=TEXT.format("caption", steps=o.steps, seeds_note=seeds_note(ctx.seeds)),
        )
        summary = TEXT.format(
            "summary",
            test=", ".join(f"{label} {test[label].mean:.1f}%" for label in heads),
            perplexity=", ".join(f"{label} {perplexity[label].mean:.4f}" for label in heads),
            seeds=ctx.seeds,
        )
        return Result(
            summary=summary,
            tables=[table],
            figures=[self._figure(curves)],
            runs=run_records(rows, o.steps, ctx.seed_list),
            setup=TEXT.paragraphs(
                "setup",
                counts=counts(data),
                hidden_size=o.hidden_size,
                ff_size=o.ff_size,
                heads=o.heads,
                head_size=o.hidden_size // o.heads,
                dev_sentences=o.dev_sentences,
                eval_every=o.eval_every,
                plateau=o.plateau_words(),
                steps=o.steps,
            ),
            budget=TEXT.format("budget", steps=o.steps, plateau=o.plateau_words(), seeds=ctx.seeds),
            data={
                "test_exact_match": {k: v.values for k, v in test.items()},
                "dev_perplexity": {k: v.values for k, v in perplexity.items()},
            },
        )

    def _figure(self, curves):
        plt = pyplot()
        fig, ax = plt.subplots(figsize=(7.5, 4.3), dpi=110)
        for label, n in self.labels().items():
            draw_seeds(
                ax, curves[label], f"{label} ({n} x {self.options.hidden_size // n})", color=COLORS[label], scale=100
            )
        ax.set_xlabel("update (batch of 64 dates)")
        ax.set_ylabel("dev exact match (%)")
        ax.set_ylim(-2, 102)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8, loc="lower right")
        ax.set_title(f"Heads of one total size on generated dates ({seeds_note(self.context.seeds)})", fontsize=10)
        return save_figure(fig, self.context.figure("curves")), TEXT.format("figure")

    @staticmethod
    def judge(data: dict) -> tuple[list[Finding], list[Phrase]]:
        """Core, both the paper's (Table 3 (A): BLEU and perplexity): multi-head's test exact match
        is higher and its dev perplexity lower, each by the exact permutation test over the seeds."""
        test = {k: Spread(v) for k, v in data["test_exact_match"].items()}
        perplexity = {k: Spread(v) for k, v in data["dev_perplexity"].items()}
        rows = [(("multi-head",), "test exact match"), (("one head",), "test exact match")]
        findings = [
            better_finding(
                TEXT.phrase("test"), "multi-head", test["multi-head"], "one head", test["one head"], where=rows
            ),
            better_finding(
                TEXT.phrase("perplexity.start"),
                "multi-head",
                perplexity["multi-head"],
                "one head",
                perplexity["one head"],
                unit="",
                digits=4,
                lower=True,
                where=[(("multi-head",), "dev perplexity"), (("one head",), "dev perplexity")],
                outcomes={
                    1: TEXT.phrase("perplexity.multi_head_lower"),
                    -1: TEXT.phrase("perplexity.one_head_lower"),
                    0: TEXT.phrase("perplexity.cannot_tell"),
                    None: TEXT.phrase("perplexity.untested"),
                },
            ),
        ]
        return findings, []
