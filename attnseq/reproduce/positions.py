"""positions: learned against sinusoidal position encodings on inputs longer than any in
training (the Transformer paper's reason for the sinusoid). The same small Transformer copies
sequences of random vectors of lengths 1 to L; it is tested on that range and on longer ones."""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import ConfigError
from ..schema import number
from ..viz import pyplot, save_figure
from .base import REPRODUCTIONS, Finding, Reproduction, Result, Table, budget
from .datasets import counts, long_sequences, read_split
from .plots import seeds_note
from .significance import alike
from .spread import Spread, alike_reason, better_finding, comparison, equivalence_phrase, evidence_of, paired_comparison
from .texts import texts
from .training import PlateauOptions, compare_variants, run_records, step_budget
from .wording import Phrase

TEXT = texts("positions")
SAME = {True: "alike", False: "differ", None: "undecided"}  # the texts of alike(t, margin)
KINDS = ("sinusoidal", "learned")  # model.positional of the two runs
COLORS = {"sinusoidal": "tab:blue", "learned": "tab:orange"}
RELATION = {True: "alike", False: "apart", None: ""}  # the evidence of alike(t, margin)
COLUMNS = ("positions", "test length", "exact match", "token accuracy")  # the table's
EXACT = COLUMNS[2]
ALIKE = 5.0  # points of exact match within which a longer length counts as copied as well as the trained ones


@dataclass
class PositionsOptions(PlateauOptions):
    steps: int = budget(6000)  # the cap of updates of every run (batch 64; at 4,000 learned positions still climbed)
    eval_every: int = 150  # updates between dev evaluations
    hidden_size: int = 64  # d_model (transformer-tiny: 128)
    ff_size: int = 128  # the feed-forward layer's width (transformer-tiny: 256)
    heads: int = 4  # attention heads
    train_pairs: int = 10_000  # generated training sequences
    dev_sentences: int = 200  # dev sequences decoded at each evaluation
    test_sentences: int = 300  # test sequences of each length set
    max_length: int = number(16, 1)  # training lengths are 1 .. max_length vectors
    longest: int = 32  # the longest test length (longer sets every `stride` vectors beyond max_length)
    stride: int = number(4, 1)  # the step between the longer test lengths
    bits: int = 4  # bits of each vector (a vocabulary of 2**bits tokens)

    def __post_init__(self):
        if not self.lengths():
            raise ConfigError(
                f"positions.longest: no test length beyond the trained ones (max_length "
                f"{self.max_length} + stride {self.stride} > longest {self.longest})",
                key="positions.longest",
            )

    def lengths(self) -> list[int]:
        """The longer test lengths: max_length + stride, + 2 stride, ... up to longest."""
        return list(range(self.max_length + self.stride, self.longest + 1, self.stride))


@REPRODUCTIONS.register("positions", options=PositionsOptions)
class Positions(Reproduction):
    title, claim, quotes, source = TEXT.title, TEXT.claim, TEXT.quotes, TEXT.source
    default_seeds = 5
    nominal_minutes = 20.0

    def run(self) -> Result:
        o, ctx = self.options, self.context
        data = long_sequences(
            ctx.run_dir("data"),
            o.train_pairs,
            o.dev_sentences,
            o.test_sentences,
            (1, o.max_length),
            o.bits,
            test_lengths=o.lengths(),
        )
        common = [
            f"model.hidden_size={o.hidden_size}",
            f"model.ff_size={o.ff_size}",
            f"model.heads={o.heads}",
            "data.tokenizer=word",
            "decode.max_len_ratio=1.0",
            "decode.max_len_offset=5",
            *step_budget(o.steps, o.eval_every, o.dev_sentences, o),
        ]
        variants = [(kind, "transformer-tiny", [f"model.positional={kind}"]) for kind in KINDS]
        rows = compare_variants(ctx, variants, data, common)
        sets = {
            "1-" + str(o.max_length): read_split(data, "test"),
            **{str(n): read_split(data, f"test-len{n}") for n in o.lengths()},
        }
        exact, tokens = self._score(rows, sets)
        names = list(sets)
        table = Table(
            list(COLUMNS),
            [
                [kind, name, Spread(exact[kind][name]).format(unit="%"), Spread(tokens[kind][name]).format(unit="%")]
                for kind in KINDS
                for name in names
            ],
            caption=TEXT.format(
                "caption",
                bits=o.bits,
                seeds_note=seeds_note(ctx.seeds),
                max_length=o.max_length,
                test_sentences=o.test_sentences,
            ),
        )
        figure = self._figure(exact, names)
        longer = names[1:]
        summary = TEXT.format(
            "summary",
            max_length=o.max_length,
            first=longer[0],
            last=longer[-1],
            scores=", ".join(
                TEXT.format(
                    "summary_item",
                    kind=kind,
                    trained=Spread(exact[kind][names[0]]).mean,
                    longer=Spread(self._pooled(exact[kind], longer)).mean,
                )
                for kind in KINDS
            ),
            seeds=ctx.seeds,
        )
        return Result(
            summary=summary,
            tables=[table],
            figures=[figure],
            runs=run_records(rows, o.steps, ctx.seed_list),
            setup=TEXT.paragraphs(
                "setup",
                bits=o.bits,
                counts=counts(data),
                max_length=o.max_length,
                test_sentences=o.test_sentences,
                longer=", ".join(longer),
                hidden_size=o.hidden_size,
                heads=o.heads,
                ff_size=o.ff_size,
                dev_sentences=o.dev_sentences,
                eval_every=o.eval_every,
                plateau=o.plateau_words(),
                steps=o.steps,
                margin=ALIKE,
            ),
            budget=TEXT.format("budget", steps=o.steps, plateau=o.plateau_words(), seeds=ctx.seeds),
            data={
                "exact_match": exact,
                "token_accuracy": tokens,
                "trained": names[0],
                "longer": longer,
                "margin": ALIKE,
            },
        )

    @staticmethod
    def _score(rows, sets) -> tuple[dict, dict]:
        """exact match and token accuracy (%) of every run's best checkpoint on every test set:
        {kind: {set: [one value per seed]}} each."""
        from ..api import load

        exact: dict = {kind: {name: [] for name in sets} for kind in rows}
        tokens: dict = {kind: {name: [] for name in sets} for kind in rows}
        for kind, runs in rows.items():
            for row in runs:
                translator = load(row["run_dir"])
                for name, pairs in sets.items():
                    metrics = translator.evaluate(pairs, bleu=False)
                    exact[kind][name].append(100 * metrics["exact_match"])
                    tokens[kind][name].append(100 * metrics["token_accuracy"])
        return exact, tokens

    @staticmethod
    def _pooled(by_set: dict, names) -> list[float]:
        """Each seed's mean over the sets ``names`` (the longer lengths pooled, equal sizes)."""
        return [sum(by_set[n][i] for n in names) / len(names) for i in range(len(by_set[names[0]]))]

    def _figure(self, exact, names):
        import numpy as np

        plt = pyplot()
        fig, ax = plt.subplots(figsize=(7.5, 4.3), dpi=110)
        xs = list(range(len(names)))
        for kind in KINDS:
            values = np.array([exact[kind][n] for n in names])  # (sets, seeds)
            ax.plot(xs, values.mean(1), marker="o", color=COLORS[kind], label=f"{kind} positions")
            if values.shape[1] > 1:
                ax.fill_between(xs, values.min(1), values.max(1), color=COLORS[kind], alpha=0.18, linewidth=0)
        ax.axvline(0.5, color="gray", linestyle=":")
        ax.set_xticks(xs, [f"{n} (trained)" if i == 0 else n for i, n in enumerate(names)])
        ax.set_xlabel("test sequence length (vectors)")
        ax.set_ylabel("test exact match (%)")
        ax.set_ylim(-2, 102)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
        ax.set_title(f"Copying beyond the trained lengths ({seeds_note(self.context.seeds)})", fontsize=10)
        return save_figure(fig, self.context.figure("by-length")), TEXT.format("figure")

    @staticmethod
    def judge(data: dict) -> tuple[list[Finding], list[Phrase]]:
        """Core: the sinusoid extrapolates (exact match at the nearest longer length as on the
        trained lengths, the same runs paired by seed), better than learned positions there
        (exact match over the longer lengths, the exact permutation test), and the two alike on
        the trained lengths (the paper's "nearly identical"). Token accuracy on the longer lengths
        is a proxy (a copy one vector short is wrong as a whole but right up to its slip): reported."""
        exact, margin = data["exact_match"], data["margin"]
        trained, longer = data["trained"], data["longer"]
        first = longer[0]
        sinusoid = exact["sinusoidal"]
        t, words = paired_comparison("longer", sinusoid[first], "trained", sinusoid[trained])
        same = alike(t, margin)
        findings = [
            Finding(
                same,
                TEXT.phrase("extrapolates.start", length=first)
                + words
                + equivalence_phrase(t, margin)
                + TEXT.phrase("extrapolates." + SAME[same]),
                reason=alike_reason(t) if same is None else Phrase(),
                evidence=evidence_of(
                    [(("sinusoidal", first), EXACT), (("sinusoidal", trained), EXACT)],
                    (Spread(sinusoid[first]).mean, Spread(sinusoid[trained]).mean),
                    RELATION[same],
                    margin,
                ),
            )
        ]
        pooled = {kind: Spread(Positions._pooled(exact[kind], longer)) for kind in KINDS}
        findings.append(
            better_finding(
                TEXT.phrase("beyond_exact", first=first, last=longer[-1]),
                "sinusoidal",
                pooled["sinusoidal"],
                "learned",
                pooled["learned"],
                where=[(("sinusoidal", first), EXACT), (("learned", first), EXACT)] if len(longer) == 1 else None,
            )
        )
        t, words = comparison(
            "sinusoidal", Spread(exact["sinusoidal"][trained]), "learned", Spread(exact["learned"][trained])
        )
        same = alike(t, margin)
        findings.append(
            Finding(
                same,
                TEXT.phrase("trained.start", trained=trained)
                + words
                + equivalence_phrase(t, margin)
                + TEXT.phrase("trained." + SAME[same]),
                reason=alike_reason(t) if same is None else Phrase(),
                evidence=evidence_of(
                    [(("sinusoidal", trained), EXACT), (("learned", trained), EXACT)],
                    (Spread(exact["sinusoidal"][trained]).mean, Spread(exact["learned"][trained]).mean),
                    RELATION[same],
                    margin,
                ),
            )
        )
        # token accuracy: a copy one vector short is wrong as a whole but right up to its slip
        tokens = {kind: Spread(Positions._pooled(data["token_accuracy"][kind], longer)) for kind in KINDS}
        findings.append(
            better_finding(
                TEXT.phrase("beyond", first=first, last=longer[-1]),
                "sinusoidal",
                tokens["sinusoidal"],
                "learned",
                tokens["learned"],
                core=False,
            )
        )
        learned = exact["learned"]
        t, words = paired_comparison("longer", learned[first], "trained", learned[trained])
        same = alike(t, margin)
        observations = [
            TEXT.phrase("longer.start", kind="learned", length=first)
            + words
            + equivalence_phrase(t, margin)
            + TEXT.phrase("longer." + SAME[same])
        ]
        return findings, observations
