"""luong-scorers: Luong et al.'s attention designs under one budget on one task. Global attention
with the dot, general and concat scores, local-m and local-p windows, and input feeding on and
off: exact match, tokens/s and parameters as their table, and one heatmap per scorer of the
same sentence (local windows outlined)."""

from __future__ import annotations

from dataclasses import dataclass

from ..viz import pyplot, save_figure
from .base import REPRODUCTIONS, Finding, Reproduction, Result, Table, budget
from .datasets import counts, long_sequences, read_split
from .plots import draw_seeds, seeds_note
from .significance import alike, better
from .spread import Spread, better_finding, comparison, equivalence_phrase, evidence_of, permuted, spreads
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

# label, preset, extra settings, score, input feeding
VARIANTS = (
    ("dot", "luong2015-dot", [], "global, dot: h_t·h_s", True),
    ("general", "luong2015-general", [], "global, general: h_t W_a h_s", True),
    ("concat", "luong2015-concat", [], "global, concat: v_a tanh(W_a [h_t; h_s])", True),
    ("local-m", "luong2015-local-m", [], "local-m (p_t = t, D = 5), general", True),
    ("local-p", "luong2015-local-p", [], "local-p (predicted p_t, Gaussian, D = 5), general", True),
    (
        "general-no-feed",
        "luong2015-general",
        ["model.decoder={name: luong, input_feeding: false}"],
        "global, general",
        False,
    ),
)
SCORERS = ("dot", "general", "concat", "local-m", "local-p")


TEXT = texts("luong-scorers")
SAME = {True: "alike", False: "differ", None: "undecided"}  # the texts of alike(t, margin)
ORDER = {1: "first", -1: "second", 0: "cannot_tell", None: "untested"}  # the texts of better(t)
ALIKE = 5.0  # points of test exact match within which dot "works well" beside general


@dataclass
class LuongScorersOptions(PlateauOptions):
    steps: int = budget(1200)  # the cap of updates of every run (batch 128)
    eval_every: int = 150  # updates between dev evaluations (the curves)
    hidden_size: int = 128  # LSTM units (the presets: 256)
    layers: int = 1  # encoder and decoder layers (the presets: 2)
    dev_sentences: int = 300  # dev sequences decoded at each evaluation
    train_pairs: int = 20_000  # generated training sequences (attnseq data copy)
    test_sentences: int = 1_000  # generated dev and test sequences each
    min_length: int = 20  # the sources' lengths, uniform in [min_length, max_length] vectors
    max_length: int = 40
    bits: int = 4  # bits of each vector (a vocabulary of 2**bits tokens)


@REPRODUCTIONS.register("luong-scorers", options=LuongScorersOptions)
class LuongScorers(Reproduction):
    title, claim, quotes, source = TEXT.title, TEXT.claim, TEXT.quotes, TEXT.source
    default_seeds = 3
    nominal_minutes = 85.0

    def run(self) -> Result:
        o, ctx = self.options, self.context
        data = long_sequences(
            ctx.run_dir("data"), o.train_pairs, o.test_sentences, o.test_sentences, (o.min_length, o.max_length), o.bits
        )
        common = [
            f"model.hidden_size={o.hidden_size}",
            f"model.encoder_layers={o.layers}",
            f"model.decoder_layers={o.layers}",
            "data.tokenizer=word",
            "decode.max_len_ratio=1.5",
            *step_budget(o.steps, o.eval_every, o.dev_sentences, o),
        ]
        rows = compare_variants(ctx, [(label, name, extra) for label, name, extra, _, _ in VARIANTS], data, common)
        curves = {label: [curve(r["run_dir"], "dev_exact_match") for r in rs] for label, rs in rows.items()}
        half = max(o.eval_every, (o.steps // 2) // o.eval_every * o.eval_every)
        at_half = {label: Spread([100 * (value_at(c, half) or 0.0) for c in cs]) for label, cs in curves.items()}
        test = {label: Spread([100 * v for v in spreads(rs, "test_exact_match").values]) for label, rs in rows.items()}
        dev = {label: Spread([100 * v for v in spreads(rs, "dev_exact_match").values]) for label, rs in rows.items()}
        reach = {label: [first_reaching(c, 0.9) for c in cs] for label, cs in curves.items()}
        table = Table(
            [
                "design",
                "score",
                "input feeding",
                "parameters",
                "tokens/s",
                f"dev exact match at step {half}",
                "dev exact match",
                "test exact match",
                "steps to 90% dev",
            ],
            [
                [
                    label,
                    score,
                    "yes" if feed else "no",
                    f"{rows[label][0]['parameters']:,}",
                    f"{Spread([r['tokens_per_second'] for r in rows[label]]).mean:,.0f}",
                    at_half[label].format(unit="%"),
                    dev[label].format(unit="%"),
                    test[label].format(unit="%"),
                    steps_to(reach[label]),
                ]
                for label, _, _, score, feed in VARIANTS
            ],
            caption=TEXT.format(
                "caption",
                min_length=o.min_length,
                max_length=o.max_length,
                bits=o.bits,
                steps=o.steps,
                seeds_note=seeds_note(ctx.seeds),
                test_sentences=o.test_sentences,
            ),
        )
        figures = [self._curves(curves)] + self._heatmaps(rows, data)
        best = max(test, key=lambda k: test[k].mean)
        summary = TEXT.format(
            "summary",
            scores=", ".join(f"{label} {test[label].mean:.1f}%" for label, *_ in VARIANTS),
            seeds=ctx.seeds,
            plural="s" if ctx.seeds > 1 else "",
            best=best,
        )
        return Result(
            summary=summary,
            tables=[table],
            figures=figures,
            runs=run_records(rows, o.steps, ctx.seed_list),
            setup=TEXT.paragraphs(
                "setup",
                bits=o.bits,
                min_length=o.min_length,
                max_length=o.max_length,
                counts=counts(data),
                hidden_size=o.hidden_size,
                layers=o.layers,
                dev_sentences=o.dev_sentences,
                eval_every=o.eval_every,
                plateau=o.plateau_words(),
                steps=o.steps,
                margin=ALIKE,
            ),
            budget=TEXT.format("budget", steps=o.steps, plateau=o.plateau_words(), seeds=ctx.seeds),
            data={
                "test_exact_match": {k: v.values for k, v in test.items()},
                "dev_at_half": {k: v.values for k, v in at_half.items()},
                "half": half,
                "margin": ALIKE,
            },
        )

    def _curves(self, curves):
        plt = pyplot()
        fig, ax = plt.subplots(figsize=(7.5, 4.3), dpi=110)
        for label, _, _, _, feed in VARIANTS:
            draw_seeds(ax, curves[label], label, scale=100, linestyle="-" if feed else "--")
        ax.set_xlabel("update (batch of 128 sequences)")
        ax.set_ylabel("dev exact match (%)")
        ax.set_ylim(-2, 102)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8, loc="lower right")
        o = self.options
        ax.set_title(
            f"Luong's attention designs copying {o.min_length}-{o.max_length} random vectors "
            f"({seeds_note(self.context.seeds)})",
            fontsize=10,
        )
        return save_figure(fig, self.context.figure("curves")), TEXT.format("figure.curves")

    def _heatmaps(self, rows, data):
        """One heatmap per scorer (seed 1's run) of the same test date, the local windows outlined."""
        from ..api import load
        from ..viz.hypothesis import plot_hypothesis

        test = read_split(data, "test")
        sentence = next((s for s, _ in test if len(s.split()) >= 4), test[0][0])
        figures = []
        for label in SCORERS:
            translator = load(rows[label][0]["run_dir"])
            r = translator.search([sentence], keep_attention=True)[0]
            views, encoder = translator.attention_views(r)
            path = plot_hypothesis(r, 0, views[0], encoder, self.context.figure(f"attention-{label}"))
            window = TEXT.format("figure.window") if label.startswith("local") else ""
            figures.append((path, TEXT.format("figure.attention", label=label, sentence=sentence, window=window)))
        return figures

    @staticmethod
    def judge(data: dict) -> tuple[list[Finding], list[Phrase]]:
        """Core, the paper's three points on its Table 4: concat does worse than dot, dot works well
        for global attention (better than general, or alike within the margin), local-p is the
        best (against global dot). "Better" by the exact permutation test over the seeds, "alike"
        by Welch's two one-sided tests. The other pairs: observed."""
        test = {k: Spread(v) for k, v in data["test_exact_match"].items()}
        at_half = {k: Spread(v) for k, v in data["dev_at_half"].items()}
        margin = data["margin"]
        column = "test exact match"

        def where(a: str, b: str):
            return [((a,), column), ((b,), column)]

        def outcomes(stop: bool = True) -> dict:
            end = TEXT.phrase("stop") if stop else Phrase()
            return {
                1: TEXT.phrase("order.first") + end,
                -1: TEXT.phrase("order.second") + end,
                0: TEXT.phrase("order.cannot_tell") + end,
                None: TEXT.phrase("order.untested") + end,
            }

        findings = [
            better_finding(
                TEXT.phrase("concat"),
                "dot",
                test["dot"],
                "concat",
                test["concat"],
                where=where("dot", "concat"),
                outcomes=outcomes(),
            )
        ]
        better_than = better_finding(
            TEXT.phrase("dot.start"), "dot", test["dot"], "general", test["general"], outcomes=outcomes(stop=False)
        )
        t, _ = comparison("dot", test["dot"], "general", test["general"])
        same = alike(t, margin)
        order = better_than.matched
        matched = True if order or same else False if order is False or same is False else None
        relation = (
            {True: "above", False: "below"}[order]
            if order is not None
            else {True: "alike", False: "apart", None: ""}[same]
        )
        findings.append(
            Finding(
                matched,
                better_than.text + equivalence_phrase(t, margin) + TEXT.phrase("dot." + SAME[same]),
                reason=Phrase() if matched is not None else better_than.reason,
                evidence=evidence_of(
                    where("dot", "general"), (test["dot"].mean, test["general"].mean), relation, margin
                ),
            )
        )
        findings.append(
            better_finding(
                TEXT.phrase("local_p"),
                "local-p",
                test["local-p"],
                "dot",
                test["dot"],
                where=where("local-p", "dot"),
                outcomes=outcomes(),
            )
        )

        def observed(a: str, b: str, what: str) -> Phrase:
            t, words = permuted(a, test[a], b, test[b])
            return TEXT.phrase(what) + words + TEXT.phrase("order." + ORDER[better(t)]) + TEXT.phrase("stop")

        observations = [
            observed("general", "general-no-feed", "input_feeding"),
            observed("local-m", "local-p", "local_m"),
            observed("local-p", "general", "local_global"),
            TEXT.phrase("at_half", half=data["half"])
            + Phrase(", ".join(f"{k} {{:.1f}}%" for k in at_half), *(v.mean for v in at_half.values()))
            + TEXT.phrase("stop"),
        ]
        return findings, observations
