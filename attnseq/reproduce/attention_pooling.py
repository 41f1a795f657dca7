"""attention-pooling: attention as weighted pooling (seed document 002) in a hierarchical
attention network (Yang et al. 2016), against the same network averaging its annotations, on
generated reviews whose label rests on one sentence; trained on short reviews and tested on
reviews several times longer, where an average is mostly the sentences that do not decide."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..data.corpora.documents import NEUTRAL
from ..eval.metrics import exact_match
from ..viz import pyplot, save_figure
from .base import REPRODUCTIONS, Finding, Reproduction, Result, Table, budget
from .datasets import counts, write_folder
from .plots import draw_seed_dots
from .spread import Spread, better_finding, permuted
from .texts import texts
from .training import PlateauOptions, fit_seeds, step_budget
from .wording import Phrase

POOLINGS = ("attention", "mean")  # model.pooling of the two arms: HAN-ATT and HAN-AVE
COLORS = {"attention": "tab:blue", "mean": "tab:gray"}
TEXT = texts("attention-pooling")


def sentence_range(text: str) -> tuple[int, int]:
    """ "16-24" -> (16, 24): a review's sentences, inclusive."""
    low, _, high = text.partition("-")
    return int(low), int(high or low)


@dataclass
class AttentionPoolingOptions(PlateauOptions):
    steps: int = budget(4000)  # the cap of updates of every run (batches of 64 reviews)
    eval_every: int = 200  # updates between dev evaluations
    train_docs: int = 10_000  # training reviews (of the trained lengths)
    dev_docs: int = 500  # dev reviews (of the trained lengths)
    test_docs: int = 1_000  # test reviews of each length range
    trained: str = "3-8"  # sentences of the training, dev and first test reviews (the generator's)
    longer: str = (
        "16-24,40-48,80-100"  # sentences of the longer test reviews, each range a test set (100: about 600 words)
    )
    neutral: float = 1 / 3  # the share of reviews without a verdict (label neutral): three even classes

    def ranges(self) -> list[str]:
        """The test sets' sentence ranges, the trained one first."""
        return [self.trained, *self.longer.split(",")]

    def split(self, folder: Path) -> tuple[Path, dict[str, list]]:
        """``folder`` with the reviews (train, dev, and one test set ``test-A-B`` per range, test
        the trained range's), and the test documents of each range (they know their deciding
        sentence)."""
        from ..data.corpora.documents import make_document_splits

        splits = make_document_splits(
            self.train_docs, self.dev_docs, self.test_docs, 1, sentence_range(self.trained), self.neutral
        )
        tests = {self.trained: splits["test"]}
        for i, text in enumerate(self.ranges()[1:], start=2):
            tests[text] = make_document_splits(0, 0, self.test_docs, i, sentence_range(text), self.neutral)["test"]
        pairs = {name: [d.pair() for d in docs] for name, docs in splits.items()}
        extra = {f"test-{text}": [d.pair() for d in docs] for text, docs in tests.items()}
        return write_folder(folder, pairs["train"], pairs["dev"], pairs["test"], extra=extra), tests


def key_weight(tokens: list[str], weights, key: int) -> float:
    """The share of a review's attention (one weight per source token) on the tokens of its
    sentence ``key`` (sentences end at "."), the full stop included."""
    sentence, on_key, total = 0, 0.0, 0.0
    for token, weight in zip(tokens, weights):
        total += float(weight)
        if sentence == key:
            on_key += float(weight)
        if token == ".":
            sentence += 1
    return on_key / total if total > 0 else 0.0


@REPRODUCTIONS.register("attention-pooling", options=AttentionPoolingOptions)
class AttentionPooling(Reproduction):
    title, claim, quotes, source = TEXT.title, TEXT.claim, TEXT.quotes, TEXT.source
    default_seeds = 5
    nominal_minutes = 20.0

    def run(self) -> Result:
        from ..api import load

        o, ctx = self.options, self.context
        data, tests = o.split(ctx.run_dir("data"))
        ranges = o.ranges()
        # mean pooling has no attention to size: the preset's attention_size goes (0: unset)
        arms = [
            (p, "han", [f"model.pooling={p}", *(["model.attention_size=0"] if p == "mean" else [])]) for p in POOLINGS
        ]
        # fp32: train.precision auto times each run's model at start and might choose per seed or CPU
        settings = [*step_budget(o.steps, o.eval_every, o.dev_docs, o), "train.precision=fp32"]
        runs, records = fit_seeds(ctx, arms, data, settings, o.steps)
        accuracy = {p: {r: [] for r in ranges} for p in POOLINGS}  # pooling -> range -> % per seed
        on_key = {r: [] for r in ranges}  # the attention runs' mean weight on the deciding sentence, per seed
        # pooling -> range -> % of the reviews with a verdict labelled neutral, per seed (the verdict unseen)
        unseen = {p: {r: [] for r in ranges} for p in POOLINGS}
        for _, pooling, run_dir in runs:
            translator = load(run_dir)
            for r in ranges:
                docs = tests[r]
                results = translator.search([d.pair()[0] for d in docs], keep_attention=pooling == "attention")
                outputs = [x.outputs[0] for x in results]
                accuracy[pooling][r].append(100 * exact_match(outputs, [d.label for d in docs]))
                verdicts = [o for o, d in zip(outputs, docs) if d.key >= 0]
                unseen[pooling][r].append(100 * sum(o == NEUTRAL for o in verdicts) / max(1, len(verdicts)))
                if pooling == "attention":  # the reviews with a verdict
                    shares = [
                        key_weight(x.source_tokens, x.attention[0][0], d.key)
                        for x, d in zip(results, docs)
                        if d.key >= 0
                    ]
                    on_key[r].append(100 * sum(shares) / max(1, len(shares)))
        table = Table(
            [
                "review sentences",
                "test reviews",
                *(f"{p} pooling: test accuracy" for p in POOLINGS),
                "attention on the deciding sentence",
                "a sentence's share if spread evenly",
            ],
            [
                [
                    r,
                    f"{len(tests[r]):,}",
                    *(Spread(accuracy[p][r]).format(unit="%") for p in POOLINGS),
                    Spread(on_key[r]).format(unit="%"),
                    f"{100 * self._even_share(tests[r]):.1f}%",
                ]
                for r in ranges
            ],
            caption=TEXT.format("caption", steps=o.steps, seeds=ctx.seeds, trained=o.trained),
        )
        longest = ranges[-1]
        return Result(
            summary=TEXT.format(
                "summary",
                longest=longest,
                attention=Spread(accuracy["attention"][longest]).mean,
                mean=Spread(accuracy["mean"][longest]).mean,
                trained=o.trained,
                attention_trained=Spread(accuracy["attention"][o.trained]).mean,
                mean_trained=Spread(accuracy["mean"][o.trained]).mean,
                seeds=ctx.seeds,
            ),
            tables=[table],
            figures=[self._figure(accuracy, ranges)],
            runs=records,
            setup=TEXT.paragraphs(
                "setup",
                counts=counts(data),
                trained=o.trained,
                neutral=o.neutral,
                longer=", ".join(ranges[1:]),
                test=o.test_docs,
                steps=o.steps,
                plateau=o.plateau_words(),
                eval_every=o.eval_every,
            ),
            budget=TEXT.format("budget", steps=o.steps, seeds=ctx.seeds, plateau=o.plateau_words()),
            data={"accuracy": accuracy, "on_key": on_key, "unseen": unseen, "ranges": ranges},
        )

    @staticmethod
    def _even_share(docs) -> float:
        """The mean over the reviews of ``docs`` with a verdict of 1 / (its sentences): the deciding
        sentence's share of an attention spread evenly over the sentences."""
        verdicts = [d for d in docs if d.key >= 0]
        return sum(1 / len(d.sentences) for d in verdicts) / max(1, len(verdicts))

    def _figure(self, accuracy, ranges):
        plt = pyplot()
        fig, ax = plt.subplots(figsize=(7, 4.2), dpi=110)
        draw_seed_dots(
            ax,
            [f"{r} sentences" + (" (trained)" if i == 0 else "") for i, r in enumerate(ranges)],
            {p: [accuracy[p][r] for r in ranges] for p in POOLINGS},
            COLORS,
        )
        ax.set_ylabel("test accuracy (%), one dot per seed")
        ax.set_ylim(-2, 102)
        ax.axhline(100 / 3, color="k", linewidth=0.6, linestyle=":")
        ax.grid(alpha=0.3, axis="y")
        ax.legend(fontsize=8, loc="lower left", title="pooling")
        ax.set_title("HAN on generated reviews: attention against mean pooling, by review length", fontsize=10)
        return save_figure(fig, self.context.figure("by-length")), TEXT.format("figure")

    @staticmethod
    def judge(data: dict) -> tuple[list[Finding], list[Phrase]]:
        """Core: on the longest reviews, attention pooling's test accuracy above mean pooling's
        (the exact permutation test over the seeds). Observed: each range's comparison, and the
        attention's weight on the deciding sentence against an even spread."""
        accuracy, ranges = data["accuracy"], data["ranges"]
        column = {p: f"{p} pooling: test accuracy" for p in POOLINGS}
        longest = ranges[-1]
        finding = better_finding(
            TEXT.phrase("longest", sentences=longest),
            "attention",
            Spread(accuracy["attention"][longest]),
            "mean",
            Spread(accuracy["mean"][longest]),
            where=[((longest,), column["attention"]), ((longest,), column["mean"])],
        )
        observations = []
        for r in ranges[:-1]:
            _, words = permuted("attention", Spread(accuracy["attention"][r]), "mean", Spread(accuracy["mean"][r]))
            observations.append(TEXT.phrase("range", sentences=r) + words + Phrase("."))
        if "unseen" in data:  # pages before it was counted lack it
            observations.append(
                TEXT.phrase(
                    "unseen",
                    sentences=longest,
                    mean=Spread(data["unseen"]["mean"][longest]).mean,
                    attention=Spread(data["unseen"]["attention"][longest]).mean,
                )
            )
        for r in ranges:
            values = data["on_key"][r]
            if values:
                observations.append(TEXT.phrase("on_key", sentences=r, share=Spread(values).mean))
        return [finding], observations
