"""luong-scorers: Luong et al.'s attention designs, each trained to its plateau on one task whose
alignment is not the diagonal: fields of random symbols written out in another order. Global
attention with the dot, general and concat scores, local-m and local-p windows, and input feeding
on and off: exact match, dev perplexity, tokens/s and parameters as their table, and one heatmap
per scorer of the same test sequence (local windows outlined)."""

from __future__ import annotations

import math
import random
from dataclasses import dataclass
from pathlib import Path

from ..errors import ConfigError
from ..viz import pyplot, save_figure
from .base import REPRODUCTIONS, Finding, Reproduction, Result, Table, budget
from .datasets import counts, read_split, write_folder
from .plots import draw_seeds, seeds_note
from .significance import alike, better
from .spread import Spread, better_finding, comparison, equivalence_phrase, evidence_of, permuted, spreads
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
SYMBOLS = "abcdefghijklmnopqrstuvwxyz"  # a field's symbols: the first `symbols` letters
SEPARATOR = "|"  # between two fields, in the source and in the target


def field_pairs(
    rng: random.Random, n: int, order: tuple[int, ...], lengths: tuple[int, int], symbols: int
) -> list[tuple[str, str]]:
    """``n`` pairs: a source of len(order) fields of ``lengths`` (inclusive) random symbols each,
    separated by "|", and the target that writes the same fields in ``order`` (1-based: (3, 1, 4,
    2) writes the third field first)."""
    alphabet = SYMBOLS[:symbols]
    pairs = []
    for _ in range(n):
        fields = [" ".join(rng.choice(alphabet) for _ in range(rng.randint(*lengths))) for _ in order]
        pairs.append((f" {SEPARATOR} ".join(fields), f" {SEPARATOR} ".join(fields[i - 1] for i in order)))
    return pairs


@dataclass
class LuongScorersOptions(PlateauOptions):
    steps: int = budget(6000)  # the cap of updates of every run (batch 128); the runs end by the rule near 2,000
    eval_every: int = 100  # updates between dev evaluations (the curves)
    hidden_size: int = 128  # LSTM units (the presets: 256)
    layers: int = 1  # encoder and decoder layers (the presets: 2)
    dev_sentences: int = 300  # dev sequences decoded at each evaluation
    train_pairs: int = 20_000  # generated training sequences
    test_sentences: int = 1_000  # generated dev and test sequences each
    order: tuple[int, ...] = (3, 1, 4, 2)  # the target's fields, by their place in the source
    min_length: int = 3  # symbols per field, uniform in [min_length, max_length]
    max_length: int = 6
    symbols: int = 16  # distinct symbols (the first letters of the alphabet)

    def __post_init__(self):
        if sorted(self.order) != list(range(1, len(self.order) + 1)) or len(self.order) < 2:
            raise ConfigError(
                f"luong-scorers.order: expected the numbers 1 to K (K >= 2) in some order, got {list(self.order)}",
                key="luong-scorers.order",
            )
        if not 1 <= self.min_length <= self.max_length:
            raise ConfigError(
                f"luong-scorers.min_length: expected 1 <= min_length <= max_length, got "
                f"{self.min_length} and {self.max_length}",
                key="luong-scorers.min_length",
            )
        if not 2 <= self.symbols <= len(SYMBOLS):
            raise ConfigError(
                f"luong-scorers.symbols: expected 2 to {len(SYMBOLS)}, got {self.symbols}", key="luong-scorers.symbols"
            )

    def split(self, folder: Path) -> Path:
        """The task's train, dev and test splits in ``folder`` (seed 1)."""
        rng = random.Random(1)
        make = lambda n: field_pairs(rng, n, self.order, (self.min_length, self.max_length), self.symbols)  # noqa: E731
        return write_folder(folder, make(self.train_pairs), make(self.test_sentences), make(self.test_sentences))

    def source_lengths(self) -> tuple[int, int]:
        """The shortest and longest source, separators included."""
        k = len(self.order)
        return k * self.min_length + k - 1, k * self.max_length + k - 1


@REPRODUCTIONS.register("luong-scorers", options=LuongScorersOptions)
class LuongScorers(Reproduction):
    title, claim, quotes, source = TEXT.title, TEXT.claim, TEXT.quotes, TEXT.source
    default_seeds = 5
    nominal_minutes = 100.0  # 30 runs ending by the rule, one thread each

    def run(self) -> Result:
        o, ctx = self.options, self.context
        data = o.split(ctx.run_dir("data"))
        common = [
            f"model.hidden_size={o.hidden_size}",
            f"model.encoder_layers={o.layers}",
            f"model.decoder_layers={o.layers}",
            "data.tokenizer=word",
            f"decode.max_len={o.source_lengths()[1] + 1}",
            *step_budget(o.steps, o.eval_every, o.dev_sentences, o),
        ]
        rows = compare_variants(ctx, [(label, name, extra) for label, name, extra, _, _ in VARIANTS], data, common)
        curves = {label: [curve(r["run_dir"], "dev_exact_match") for r in rs] for label, rs in rows.items()}
        half = max(o.eval_every, (o.steps // 2) // o.eval_every * o.eval_every)
        at_half = {label: Spread([100 * (value_at(c, half) or 0.0) for c in cs]) for label, cs in curves.items()}
        test = {label: Spread([100 * v for v in spreads(rs, "test_exact_match").values]) for label, rs in rows.items()}
        dev = {label: Spread([100 * v for v in spreads(rs, "dev_exact_match").values]) for label, rs in rows.items()}
        perplexity = {label: Spread([math.exp(best_dev_loss(r["run_dir"])) for r in rs]) for label, rs in rows.items()}
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
                "dev perplexity",
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
                    perplexity[label].format(digits=3, unit=""),
                    test[label].format(unit="%"),
                    steps_to(reach[label]),
                ]
                for label, _, _, score, feed in VARIANTS
            ],
            caption=TEXT.format(
                "caption",
                fields=len(o.order),
                min_length=o.min_length,
                max_length=o.max_length,
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
                fields=len(o.order),
                order=", ".join(map(str, o.order)),
                symbols=o.symbols,
                min_length=o.min_length,
                max_length=o.max_length,
                shortest=o.source_lengths()[0],
                longest=o.source_lengths()[1],
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
                "dev_perplexity": {k: v.values for k, v in perplexity.items()},
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
            f"Luong's attention designs writing {len(o.order)} fields in the order "
            f"{', '.join(map(str, o.order))}\n({seeds_note(self.context.seeds)})",
            fontsize=10,
        )
        return save_figure(fig, self.context.figure("curves")), TEXT.format("figure.curves")

    def _heatmaps(self, rows, data):
        """One heatmap per scorer (seed 1's run) of the same test sequence, the local windows outlined."""
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
        best (against global dot), each by test exact match. "Better" by the exact permutation
        test over the seeds, "alike" by Welch's two one-sided tests. The other pairs, and local-p
        against dot by dev perplexity (the paper's other measure): observed."""
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

        def perplexity() -> list[Phrase]:
            """Local-p against global dot by dev perplexity (lower is better), when the page has it."""
            if "dev_perplexity" not in data:  # pages made before the perplexity was kept
                return []
            ppl = {k: Spread(v) for k, v in data["dev_perplexity"].items()}
            return [
                better_finding(
                    TEXT.phrase("perplexity"),
                    "local-p",
                    ppl["local-p"],
                    "dot",
                    ppl["dot"],
                    unit="",
                    digits=3,
                    lower=True,
                    core=False,
                    outcomes=outcomes(),
                ).text
            ]

        observations = [
            observed("general", "general-no-feed", "input_feeding"),
            observed("local-m", "local-p", "local_m"),
            observed("local-p", "general", "local_global"),
            *perplexity(),
            TEXT.phrase("at_half", half=data["half"])
            + Phrase(", ".join(f"{k} {{:.1f}}%" for k in at_half), *(v.mean for v in at_half.values()))
            + TEXT.phrase("stop"),
        ]
        return findings, observations
