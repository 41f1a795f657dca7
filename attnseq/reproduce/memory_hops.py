"""memory-hops: an end-to-end memory network (Sukhbaatar et al. 2015) reading its memory once
against three times, on generated stories whose questions need one supporting fact or two (the
second found only through the first): several hops should matter on two facts, not on one."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..eval.metrics import exact_match
from ..viz import pyplot, save_figure
from .base import REPRODUCTIONS, Finding, Reproduction, Result, Table, budget
from .datasets import counts, read_split, write_folder
from .plots import draw_seed_dots
from .significance import alike
from .spread import Spread, alike_reason, better_finding, comparison, equivalence_phrase, evidence_of
from .texts import texts
from .training import PlateauOptions, fit_seeds, step_budget
from .wording import Phrase

HOPS = (3, 1)  # model.hops of the two arms
KINDS = ("single", "two")  # the generated stories' kinds of question (attnseq data stories)
COLORS = {3: "tab:blue", 1: "tab:gray"}
TEST = "test exact match"
MARGIN = 1.0  # points of exact match within which one and three hops count as alike (the control)

TEXT = texts("memory-hops")


def arm(hops: int) -> str:
    return f"{hops} hop" + ("s" if hops > 1 else "")


@dataclass
class MemoryHopsOptions(PlateauOptions):
    steps: int = budget(10_000)  # the cap of updates of every run (batch 32)
    eval_every: int = 200  # updates between dev evaluations
    patience: int = 8  # memory networks sit on plateaus before they learn: a longer patience
    train_stories: int = 10_000  # of each kind, trained together (the paper's joint setting)
    dev_stories: int = 300  # of each kind
    test_stories: int = 1_000  # of each kind

    def split(self, folder: Path) -> Path:
        from ..data.corpora.stories import make_story_splits

        splits = make_story_splits(KINDS, self.train_stories, self.dev_stories, self.test_stories, seed=1)
        pairs = {name: [s.pair() for s in stories] for name, stories in splits.items()}
        by_kind = {f"test-{k}": [s.pair() for s in splits["test"] if s.kind == k] for k in KINDS}
        return write_folder(folder, pairs["train"], pairs["dev"], pairs["test"], extra=by_kind)


@REPRODUCTIONS.register("memory-hops", options=MemoryHopsOptions)
class MemoryHops(Reproduction):
    title, claim, quotes, source = TEXT.title, TEXT.claim, TEXT.quotes, TEXT.source
    default_seeds = 5
    nominal_minutes = 4.0

    def run(self) -> Result:
        from ..api import load
        from .scoring import translate

        o, ctx = self.options, self.context
        data = o.split(ctx.run_dir("data"))
        tests = {k: read_split(data, f"test-{k}") for k in KINDS}
        settings = [*step_budget(o.steps, o.eval_every, 2 * o.dev_stories, o)]
        # str(hops) -> kind -> one exact match (%) per seed
        exact: dict[str, dict[str, list[float]]] = {str(h): {k: [] for k in KINDS} for h in HOPS}
        arms = [(f"hops{h}", "memn2n", [f"model.hops={h}"]) for h in HOPS]
        runs, records = fit_seeds(ctx, arms, data, settings, o.steps)
        for _, label, run_dir in runs:
            translator = load(run_dir)
            for kind in KINDS:
                hyps, refs = translate(translator, tests[kind], 1)
                exact[label.removeprefix("hops")][kind].append(100 * exact_match(hyps, refs))
        table = Table(
            ["question", "supporting facts", *(f"{arm(h)}: {TEST}" for h in HOPS)],
            [
                [
                    kind,
                    "one" if kind == "single" else "two",
                    *(Spread(exact[str(h)][kind]).format(unit="%") for h in HOPS),
                ]
                for kind in KINDS
            ],
            caption=TEXT.format("caption", steps=o.steps, seeds=ctx.seeds, n=o.test_stories),
        )
        return Result(
            summary=TEXT.format(
                "summary",
                two_many=Spread(exact["3"]["two"]).mean,
                two_one=Spread(exact["1"]["two"]).mean,
                single_many=Spread(exact["3"]["single"]).mean,
                single_one=Spread(exact["1"]["single"]).mean,
                seeds=ctx.seeds,
            ),
            tables=[table],
            figures=[self._figure(exact)],
            runs=records,
            setup=TEXT.paragraphs(
                "setup",
                counts=counts(data),
                train=o.train_stories,
                steps=o.steps,
                plateau=o.plateau_words(),
                eval_every=o.eval_every,
            ),
            budget=TEXT.format("budget", steps=o.steps, seeds=ctx.seeds, plateau=o.plateau_words()),
            data={"exact_match": exact, "margin": MARGIN},
        )

    def _figure(self, exact):
        plt = pyplot()
        fig, ax = plt.subplots(figsize=(7, 4.2), dpi=110)
        draw_seed_dots(
            ax,
            ["one supporting fact (single)", "two supporting facts (two)"],
            {arm(hops): [exact[str(hops)][kind] for kind in KINDS] for hops in HOPS},
            {arm(hops): COLORS[hops] for hops in HOPS},
        )
        ax.set_ylabel("test exact match (%), one dot per seed")
        ax.set_ylim(-2, 102)
        ax.grid(alpha=0.3, axis="y")
        ax.legend(fontsize=8, loc="lower left")
        ax.set_title("End-to-end memory network on generated stories: 1 hop against 3", fontsize=10)
        return save_figure(fig, self.context.figure("hops")), TEXT.format("figure")

    @staticmethod
    def judge(data: dict) -> tuple[list[Finding], list[Phrase]]:
        """Core: on two-fact questions three hops beat one (the exact permutation test over the
        seeds). Not core, the control: on one-fact questions one hop is as good as three, alike
        within the margin by Welch's two one-sided tests."""
        exact, margin = data["exact_match"], data["margin"]
        column = {h: f"{arm(h)}: {TEST}" for h in HOPS}
        many, one = Spread(exact["3"]["two"]), Spread(exact["1"]["two"])
        chains = better_finding(
            TEXT.phrase("two"), "three hops", many, "one hop", one, where=[(("two",), column[3]), (("two",), column[1])]
        )
        many, one = Spread(exact["3"]["single"]), Spread(exact["1"]["single"])
        test, words = comparison("three hops", many, "one hop", one)
        same = alike(test, margin)
        control = Finding(
            same,
            TEXT.phrase("single") + words + equivalence_phrase(test, margin),
            False,
            alike_reason(test) if same is None else Phrase(),
            evidence_of(
                [(("single",), column[3]), (("single",), column[1])],
                (many.mean, one.mean),
                {True: "alike", False: "apart", None: ""}[same],
                margin,
            ),
        )
        return [chains, control], []
