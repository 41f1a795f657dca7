"""positions: learned against sinusoidal position encodings on inputs longer than any in
training (the Transformer paper's reason for the sinusoid). The same small Transformer copies
sequences of random vectors of lengths 1 to L; it is tested on that range and on longer ones."""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import ConfigError
from ..schema import number
from ..viz import pyplot, save_figure
from .base import REPRODUCTIONS, Finding, Quote, Reproduction, Result, Table, budget
from .datasets import counts, long_sequences, read_split
from .plots import seeds_note
from .significance import alike
from .spread import Spread, better_finding, comparison, equivalence_phrase
from .training import PlateauOptions, compare_variants, run_records, step_budget
from .wording import Phrase

KINDS = ("sinusoidal", "learned")  # model.positional of the two runs
COLORS = {"sinusoidal": "tab:blue", "learned": "tab:orange"}
ALIKE = 5.0  # points of exact match within which a longer length counts as copied as well as the trained ones


@dataclass
class PositionsOptions(PlateauOptions):
    steps: int = budget(4000)  # the cap of updates of every run (batch 64; at 2,000 learned positions still climbed)
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
    title = "Learned or sinusoidal positions on inputs longer than any in training"
    claim = (
        "The sinusoidal position encoding lets a Transformer handle sequences longer than those it was trained "
        "on; learned positions give nearly identical results on the lengths trained."
    )
    quotes = (
        Quote(
            "We also experimented with using learned positional embeddings instead, and found that the two "
            "versions produced nearly identical results. We chose the sinusoidal version because it may allow "
            "the model to extrapolate to sequence lengths longer than the ones encountered during training.",
            'Vaswani et al. 2017, "Attention Is All You Need", §3.5',
        ),
        Quote(
            "这种方法的优点是：可以扩展到未知的序列长度。例如：当我们的模型需要翻译一个句子，而这个句子的长度大于训练集中所有"
            "句子的长度，这时，这种位置编码的方法也可以生成一样长的位置编码向量。",
            "seed document 003, the positional encoding section",
            "the advantage of this method: it extends to unseen sequence lengths. For example, when the model "
            "must translate a sentence longer than every sentence of the training set, this encoding can still "
            "generate position vectors of that length.",
        ),
    )
    source = (
        "Vaswani et al. 2017, §3.5 (and Table 3 row (E): learned positions within 0.1 BLEU of the sinusoid); "
        "seed documents 001 (§6) and 003; `configs/transformer-tiny.yaml` with `model.positional` "
        "sinusoidal or learned, on attnseq's copy task (`attnseq data copy`)."
    )
    default_seeds = 3
    nominal_minutes = 26.0

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
            ["positions", "test length", "exact match", "token accuracy"],
            [
                [kind, name, Spread(exact[kind][name]).format(unit="%"), Spread(tokens[kind][name]).format(unit="%")]
                for kind in KINDS
                for name in names
            ],
            caption=(
                f"Copies of random {o.bits}-bit vectors by the best dev checkpoint of each run "
                f"({seeds_note(ctx.seeds)}); trained on lengths 1-{o.max_length}; {o.test_sentences} "
                "test sequences of each length; greedy."
            ),
        )
        figure = self._figure(exact, names)
        longer = names[1:]
        summary = (
            f"exact match on lengths 1-{o.max_length} (trained) and {longer[0]}-{longer[-1]} (longer): "
            + ", ".join(
                f"{kind} {Spread(exact[kind][names[0]]).mean:.1f}% and "
                f"{Spread(self._pooled(exact[kind], longer)).mean:.1f}%"
                for kind in KINDS
            )
            + f" ({ctx.seeds} seeds)"
        )
        return Result(
            summary=summary,
            tables=[table],
            figures=[figure],
            runs=run_records(rows, o.steps, ctx.seed_list),
            setup=[
                f"Data: `attnseq data copy` sequences of random {o.bits}-bit vectors (one token each) copied in "
                f"order: {counts(data)} of lengths 1-{o.max_length}, and {o.test_sentences} test sequences of "
                "each longer length " + ", ".join(longer) + "; the target is as long as the source, so the "
                "decoder's positions go beyond the trained ones too.",
                f"Model: `configs/transformer-tiny.yaml` (2+2 pre-norm layers, noam schedule, label smoothing "
                f"0.1) with d_model {o.hidden_size}, {o.heads} heads, feed-forward {o.ff_size}, and "
                "`model.positional` sinusoidal or learned (one trained vector per position up to 1,024: those "
                "beyond the training lengths keep their initial values).",
                f"Trained with `attnseq.compare`'s train-and-evaluate: dev exact match on {o.dev_sentences} "
                f"sequences every {o.eval_every} updates, {o.plateau_words()}, at most {o.steps} updates; the best "
                "dev checkpoint decodes every test set (greedy, at most the source's length + 5 tokens).",
                'Tests: "better" by Welch\'s t over the seeds on the token accuracy of the longer lengths pooled '
                "(each seed's mean over them); "
                f'"alike" by the two one-sided tests with a margin of {ALIKE:g} points.',
            ],
            budget=f"at most {o.steps} updates per run, {o.plateau_words()}; 2 encodings x {ctx.seeds} seeds",
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
        return save_figure(fig, self.context.figure("by-length")), (
            "Exact match of whole copies by test length, left of the dotted line the lengths trained on."
        )

    @staticmethod
    def judge(data: dict) -> tuple[list[Finding], list[Phrase]]:
        exact, margin = data["exact_match"], data["margin"]
        trained, longer = data["trained"], data["longer"]
        # token accuracy: a copy one vector short is wrong as a whole but right up to its slip
        pooled = {kind: Spread(Positions._pooled(data["token_accuracy"][kind], longer)) for kind in KINDS}
        beyond = Phrase("token accuracy on the longer lengths {} to {} pooled: ", longer[0], longer[-1])
        findings = [better_finding(beyond, "sinusoidal", pooled["sinusoidal"], "learned", pooled["learned"])]
        t, words = comparison(
            "sinusoidal", Spread(exact["sinusoidal"][trained]), "learned", Spread(exact["learned"][trained])
        )
        same = alike(t, margin)
        findings.append(
            Finding(
                same,
                Phrase("on the trained lengths {}: ", trained)
                + words
                + equivalence_phrase(t, margin)
                + {
                    True: Phrase(": alike within the margin, as the paper found."),
                    False: Phrase(": they differ by more than the margin."),
                    None: Phrase(": the test cannot decide whether they are alike."),
                }[same],
            )
        )
        observations = []
        for kind in KINDS:
            t, words = comparison("longer", Spread(exact[kind][longer[0]]), "trained", Spread(exact[kind][trained]))
            same = alike(t, margin)
            observations.append(
                Phrase("{} positions at length {} against the trained lengths: ", kind, longer[0])
                + words
                + equivalence_phrase(t, margin)
                + {
                    True: Phrase(": copied as well as the trained lengths."),
                    False: Phrase(": copied worse than the trained lengths by more than the margin."),
                    None: Phrase(": the test cannot decide."),
                }[same]
            )
        return findings, observations
