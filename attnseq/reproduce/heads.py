"""heads: multi-head attention against one head of the same total size (the Transformer
paper's Table 3, rows (A)), on generated dates with a small Transformer: h heads of d_model/h
dimensions each, or one head of d_model, every other size the same."""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..schema import number
from ..viz import pyplot, save_figure
from .base import REPRODUCTIONS, Finding, Quote, Reproduction, Result, Table, budget
from .datasets import counts, dates
from .plots import draw_seeds, seeds_note
from .significance import better
from .spread import Spread, better_finding, comparison, spreads
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

COLORS = {"multi-head": "tab:blue", "one head": "tab:gray"}


@dataclass
class HeadsOptions(PlateauOptions):
    steps: int = budget(4000)  # the cap of updates of every run (batch 64; at 1,200 all still climbed, at 65%)
    eval_every: int = 100  # updates between dev evaluations (the curves)
    hidden_size: int = 64  # d_model, the total size of the heads (transformer-tiny: 128)
    ff_size: int = 128  # the feed-forward layer's width (transformer-tiny: 256)
    heads: int = number(4, 2)  # heads of the multi-head model (d_model / heads dimensions each); the other has one
    train_pairs: int = 20_000  # generated dates for training (attnseq data dates)
    dev_sentences: int = 300  # dev dates decoded at each evaluation
    test_sentences: int = 1_000  # test dates scored at the end


@REPRODUCTIONS.register("heads", options=HeadsOptions)
class Heads(Reproduction):
    title = "Several attention heads against one head of the same total size"
    claim = "Multi-head attention does better than a single head of the same total size."
    quotes = (
        Quote(
            "Multi-head attention allows the model to jointly attend to information from different "
            "representation subspaces at different positions. With a single attention head, averaging "
            "inhibits this.",
            'Vaswani et al. 2017, "Attention Is All You Need", §3.2.2 (and Table 3 row '
            "(A): single-head attention is 0.9 BLEU worse than the best setting)",
        ),
        Quote(
            "具体来讲这样做有两点好处: 1. 这是为了增加模型对于其他位置的词的注意力能力。因为如果只是一个self-attention,很容易使得"
            "某个词的注意力大部分集中在它自身。 2. 为attention层提供多个“表征子空间”。",
            "seed document 001, §5.2.4",
            "concretely this has two benefits: 1. it increases the model's ability to attend to words at other "
            "positions, since with a single self-attention a word's attention easily concentrates mostly on "
            "itself; 2. it gives the attention layer several 'representation subspaces'.",
        ),
    )
    source = (
        "Vaswani et al. 2017, §3.2.2 and Table 3 (A); seed documents 001 (§5.2.4) and 003; "
        "`configs/transformer-tiny.yaml` with `model.heads` set, on attnseq's generated dates "
        "(`attnseq data dates`)."
    )
    default_seeds = 3
    nominal_minutes = 25.0

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
            caption=(
                f"Generated dates -> ISO, each run to its plateau or {o.steps} updates ({seeds_note(ctx.seeds)}); "
                "dev perplexity: exp of the dev cross-entropy per target character at the best dev checkpoint; "
                "test: that checkpoint's exact match, greedy."
            ),
        )
        summary = (
            "test exact match "
            + ", ".join(f"{label} {test[label].mean:.1f}%" for label in heads)
            + "; dev perplexity "
            + ", ".join(f"{label} {perplexity[label].mean:.4f}" for label in heads)
            + f" ({ctx.seeds} seeds)"
        )
        return Result(
            summary=summary,
            tables=[table],
            figures=[self._figure(curves)],
            runs=run_records(rows, o.steps, ctx.seed_list),
            setup=[
                f"Data: `attnseq data dates` (English dates in many formats -> ISO, characters): {counts(data)}.",
                f"Models: `configs/transformer-tiny.yaml` (2+2 pre-norm layers, noam schedule, label smoothing "
                f"0.1) with d_model {o.hidden_size}, feed-forward {o.ff_size}, and `model.heads` {o.heads} (heads "
                f"of {o.hidden_size // o.heads} dimensions) or 1 (one head of {o.hidden_size}): the projections "
                "W_q, W_k, W_v, W_o are the same size in both, so the parameter counts are equal.",
                f"Trained with `attnseq.compare`'s train-and-evaluate: dev exact match on {o.dev_sentences} dates "
                f"every {o.eval_every} updates, {o.plateau_words()}, at most {o.steps} updates; the best dev "
                "checkpoint scored on the test dates.",
                'Tests: "better" by Welch\'s t over the seeds. The paper measured English-German BLEU and '
                "perplexity with d_model 512 (1 head of 512 against 8 of 64).",
            ],
            budget=f"at most {o.steps} updates per run, {o.plateau_words()}; 2 models x {ctx.seeds} seeds",
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
        return save_figure(fig, self.context.figure("curves")), (
            "Dev exact match during training of the multi-head and the one-head model."
        )

    @staticmethod
    def judge(data: dict) -> tuple[list[Finding], list[Phrase]]:
        test = {k: Spread(v) for k, v in data["test_exact_match"].items()}
        perplexity = {k: Spread(v) for k, v in data["dev_perplexity"].items()}
        findings = [
            better_finding(Phrase("test exact match: "), "multi-head", test["multi-head"], "one head", test["one head"])
        ]
        t, words = comparison(
            "one head", perplexity["one head"], "multi-head", perplexity["multi-head"], unit="", digits=4
        )
        order = better(t)  # one head's perplexity above multi-head's: multi-head is better
        findings.append(
            Finding(
                None if not order else order > 0,
                Phrase("dev perplexity: ")
                + words
                + {
                    1: Phrase(": multi-head's is lower."),
                    -1: Phrase(": one head's is lower."),
                    0: Phrase(": the test cannot tell them apart."),
                    None: Phrase("."),
                }[order],
            )
        )
        return findings, []
