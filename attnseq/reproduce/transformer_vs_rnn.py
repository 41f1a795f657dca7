"""transformer-vs-rnn: the Transformer against a recurrent model of the same size on
English->German gettext messages, as a CPU can test the claim's two parts: the accuracy of each
trained to its plateau at equal epochs (test BLEU over seeds), and the parallelism the claim rests
on (each model's training speed-up from a second thread, in timed runs on a quiet machine)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from ..runs import read_metrics
from ..schema import number
from ..viz import pyplot, save_figure
from .base import REPRODUCTIONS, Finding, Reproduction, Result, Table, budget
from .datasets import count, gettext, read_split
from .plots import draw_seed_dots, draw_seeds
from .scoring import paired_bleu, translate
from .significance import ALPHA
from .spread import Spread, better_finding
from .texts import texts
from .training import PlateauOptions, curve, fit_preset, fit_seeds, parameters, step_budget
from .wording import Phrase, PValue

ARMS = ("rnn", "transformer")  # the baseline first
PRESETS = {"rnn": "recommended-subword", "transformer": "transformer-gettext-de"}
LABELS = {"rnn": "RNN", "transformer": "Transformer"}
COLORS = {"rnn": "tab:blue", "transformer": "tab:purple"}
THREADS = (1, 2)  # the timed runs' thread counts
UNMEASURED = {"part": "part", "one_core": "one_core", "no_runs": "no_runs"}  # why no speed-up was measured
TEXT = texts("transformer-vs-rnn")


@dataclass
class TransformerVsRnnOptions(PlateauOptions):
    steps: int = budget(10_000)  # the cap of updates of each run (batches of 64 sentences: equal updates, equal epochs)
    min_delta: float = 0.5  # the rise of dev BLEU (points) that renews the plateau rule's patience
    eval_every: int = 250  # updates between dev evaluations (greedy BLEU)
    dev_sentences: int = 500  # dev sentences decoded at each evaluation
    train_pairs: int = number(15_000, 1)  # training pairs drawn at random from the catalogs' training split
    test_sentences: int = 0  # test sentences (0: all)
    vocab_size: int = number(4_000, 16)  # the joint sentencepiece vocabulary of both models
    d_model: int = number(128, 8)  # the Transformer's width (its feed-forward layers 4 times that)
    rnn_units: int = number(216, 8)  # the RNN's embeddings and LSTM units (about the Transformer's parameters)
    rnn_patience: int = number(3, 0)  # the RNN's rate halves after this many + 1 evaluations without a better one
    beam_size: int = number(5, 1)  # beam of the test translations
    timed_updates: int = number(100, 4)  # updates of each timed run (its second half measured)
    timed_repeats: int = number(5, 0)  # timed runs of each model at each thread count (0: none)
    share_bar: float = number(0.9, 0.0, 1.0)  # the CPU share below which a timed run ran beside other work
    catalogs: str = ""  # a folder of .po/.mo files instead of this machine's German catalogs


def timed_half(run_dir: Path, threads: int) -> tuple[float, float] | None:
    """(target tokens a second, CPU share of ``threads`` cores) over a timed run's second half:
    its last two training records (logged at the half and at the end; the first half holds the
    set-up and warm-up of one thread alone); None without two."""
    train = [r for r in read_metrics(run_dir) if r.get("type") == "train"]
    if len(train) < 2:
        return None
    half, end = train[-2], train[-1]
    wall = end["wall_seconds"] - half["wall_seconds"]
    cpu = end["cpu_seconds"] - half["cpu_seconds"]
    return end["tokens_per_second"], (cpu / (wall * threads) if wall > 0 else 0.0)


@REPRODUCTIONS.register("transformer-vs-rnn", options=TransformerVsRnnOptions)
class TransformerVsRnn(Reproduction):
    title, claim, quotes, source = TEXT.title, TEXT.claim, TEXT.quotes, TEXT.source
    default_seeds = 5
    nominal_minutes = 250.0  # about 48 minutes a seed for both runs, then about 10 of timed runs

    def run(self) -> Result:
        from ..api import load

        o, ctx = self.options, self.context
        data = gettext(ctx.run_dir("data"), "de", o.catalogs, None, limits=(0, 0, o.test_sentences), draw=o.train_pairs)
        test = read_split(data, "test")
        common = [
            *step_budget(o.steps, o.eval_every, o.dev_sentences, o),
            "train.select_by=bleu",
            "train.precision=fp32",  # auto would time each run's model and might choose per seed
            "decode.beam_size=1",  # dev evaluations greedy, cheap beside the updates
            "decode.n_best=1",
            f"data.tokenizer.vocab_size={o.vocab_size}",
        ]
        runs, records = fit_seeds(ctx, [(a, PRESETS[a], self._arm(a)) for a in ARMS], data, common, o.steps)
        dirs = {a: [d for _, label, d in runs if label == a] for a in ARMS}
        outputs, refs = {}, None
        for _, arm, run_dir in runs:
            hyps, references = translate(load(run_dir), test, o.beam_size)
            refs = refs or references
            outputs.setdefault(arm, []).append(hyps)
        paired = [paired_bleu(r, t, refs) for r, t in zip(outputs["rnn"], outputs["transformer"])]
        bleu = {"rnn": [p.baseline for p in paired], "transformer": [p.system for p in paired]}
        curves = {a: [curve(d, "dev_bleu") for d in dirs[a]] for a in ARMS}
        speed = self._timed(data) if not ctx.part else None
        cores = os.cpu_count() or 1
        data_record = {
            "test_bleu": bleu,
            "paired_p": [p.p_value for p in paired],
            "updates": {a: [r.trained for r in records if r.label == a] for a in ARMS},
            "best_dev_bleu": {a: [max(c.y, default=0.0) for c in curves[a]] for a in ARMS},
            "parameters": {a: parameters(dirs[a][0]) for a in ARMS},
            "speed": speed,
            "cores": cores,
            "part": ctx.part,
            "beam_size": o.beam_size,
            "share_bar": o.share_bar,
        }
        table = self._table(data_record)
        return Result(
            summary=self._summary(data_record),
            tables=[table],
            figures=[self._figure(curves), *([self._speed_figure(speed)] if speed else [])],
            setup=TEXT.paragraphs(
                "setup",
                train=count(data, "train"),
                dev=count(data, "dev"),
                test=len(test),
                vocab=o.vocab_size,
                d_model=o.d_model,
                ff=4 * o.d_model,
                units=o.rnn_units,
                transformer_parameters=data_record["parameters"]["transformer"],
                rnn_parameters=data_record["parameters"]["rnn"],
                rnn_patience=o.rnn_patience,
                eval_every=o.eval_every,
                dev_sentences=o.dev_sentences,
                plateau=o.plateau_words("BLEU", 1.0),
                steps=o.steps,
                beam_size=o.beam_size,
                repeats=o.timed_repeats,
                timed=o.timed_updates,
                share=o.share_bar,
            ),
            budget=TEXT.format(
                "budget",
                steps=o.steps,
                plateau=o.plateau_words("BLEU", 1.0),
                seeds=ctx.seeds,
                repeats=o.timed_repeats,
                timed=o.timed_updates,
            ),
            data=data_record,
            runs=records,
        )

    def _arm(self, arm: str) -> list[str]:
        """The overrides that size ``arm``'s preset to the page's models."""
        o = self.options
        if arm == "transformer":
            return [f"model.hidden_size={o.d_model}", f"model.ff_size={4 * o.d_model}"]
        return [
            f"model.hidden_size={o.rnn_units}",
            f"model.embed_size={o.rnn_units}",
            f"train.schedule={{name: plateau, decay: 0.5, patience: {o.rnn_patience}}}",
        ]

    def _timed(self, data: Path) -> dict | None:
        """Each model's timed runs: ``timed_repeats`` fresh runs of ``timed_updates`` updates at
        1 and at 2 threads, the models and thread counts alternating within each repeat so that a
        drift of the machine falls on all alike; (tokens a second, CPU share) over each run's
        second half. None on a machine of one core (no second thread to give) or with no repeats."""
        o, ctx = self.options, self.context
        if (os.cpu_count() or 1) < 2 or o.timed_repeats == 0:
            return None
        half = max(1, o.timed_updates // 2)
        timed = {a: {str(t): {"tokens_per_second": [], "share": []} for t in THREADS} for a in ARMS}
        for repeat in range(1, o.timed_repeats + 1):
            arms = ARMS if repeat % 2 else ARMS[::-1]
            for arm in arms:
                for threads in THREADS if repeat % 2 else THREADS[::-1]:
                    run_dir = ctx.run_dir(f"speed-{arm}-{threads}t-{repeat}")
                    settings = [
                        f"train.max_steps={o.timed_updates}",
                        "train.epochs=1000",
                        "train.eval_every=0",
                        "train.patience=0",
                        "train.precision=fp32",
                        f"data.tokenizer.vocab_size={o.vocab_size}",
                        *self._arm(arm),
                        f"train.threads={threads}",
                        f"train.log_every={half}",
                    ]
                    fit_preset(ctx, PRESETS[arm], run_dir, data, settings, seed=repeat)
                    measured = timed_half(run_dir, threads)
                    if measured is not None:
                        timed[arm][str(threads)]["tokens_per_second"].append(measured[0])
                        timed[arm][str(threads)]["share"].append(measured[1])
        return timed

    def _table(self, data: dict) -> Table:
        speed = data["speed"]
        rows = []
        for a in ARMS:
            tokens = (
                [Spread(speed[a][str(t)]["tokens_per_second"]) for t in THREADS]
                if speed and all(speed[a][str(t)]["tokens_per_second"] for t in THREADS)
                else None
            )
            rows.append(
                [
                    LABELS[a],
                    f"{data['parameters'][a]:,}",
                    Spread(data["updates"][a]).format(digits=0),
                    Spread(data["best_dev_bleu"][a]).format(),
                    Spread(data["test_bleu"][a]).format(),
                    *(
                        [tokens[0].format(digits=0), tokens[1].format(digits=0), speedups(speed[a]).format(digits=2)]
                        if tokens
                        else ["-", "-", "-"]
                    ),
                ]
            )
        return Table(
            [
                "model",
                "parameters",
                "updates to the plateau",
                "best dev BLEU (greedy)",
                bleu_column(data["beam_size"]),
                "tokens/s, 1 thread",
                "tokens/s, 2 threads",
                "speed-up from a second thread",
            ],
            rows,
            caption=TEXT.format("caption", beam_size=data["beam_size"], seeds=len(data["test_bleu"]["rnn"])),
        )

    def _summary(self, data: dict) -> str:
        bleu = {a: Spread(data["test_bleu"][a]).mean for a in ARMS}
        speed = data["speed"]
        up = {a: speedups(speed[a]).mean for a in ARMS} if measured(speed) else None
        return TEXT.format(
            "summary",
            transformer=bleu["transformer"],
            rnn=bleu["rnn"],
            seeds=len(data["test_bleu"]["rnn"]),
            speed=TEXT.format("speed_summary", transformer=up["transformer"], rnn=up["rnn"])
            if up
            else TEXT.format("speed_unmeasured"),
        )

    def _figure(self, curves):
        plt = pyplot()
        fig, ax = plt.subplots(figsize=(7.5, 4.3), dpi=110)
        for a in ARMS:
            draw_seeds(ax, curves[a], LABELS[a], color=COLORS[a])
        ax.set_xlabel("updates (batches of 64 sentences)")
        ax.set_ylabel("dev BLEU (greedy)")
        ax.set_ylim(bottom=0)
        ax.grid(alpha=0.3)
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=9, loc="lower right")
        ax.set_title(f"English->German gettext: dev BLEU by update ({self.context.seeds} seeds)", fontsize=10)
        return save_figure(fig, self.context.figure("curves")), TEXT.format("figure")

    def _speed_figure(self, speed):
        plt = pyplot()
        fig, ax = plt.subplots(figsize=(6.5, 4.0), dpi=110)
        draw_seed_dots(
            ax,
            [f"{t} thread{'s' if t > 1 else ''}" for t in THREADS],
            {LABELS[a]: [speed[a][str(t)]["tokens_per_second"] for t in THREADS] for a in ARMS},
            {LABELS[a]: COLORS[a] for a in ARMS},
        )
        ax.set_ylabel("target tokens a second, one dot per timed run")
        ax.set_ylim(bottom=0)
        ax.grid(alpha=0.3, axis="y")
        ax.legend(fontsize=8, loc="best")
        ax.set_title("Training speed on this CPU by threads (second half of each timed run)", fontsize=10)
        return save_figure(fig, self.context.figure("threads")), TEXT.format("speed_figure")

    @staticmethod
    def judge(data: dict) -> tuple[list[Finding], list[Phrase]]:
        """Core: (1) at their plateau, the Transformer's test BLEU above the RNN's (the exact
        permutation test over the seeds); (2) the Transformer's training speed-up from a second
        thread above the RNN's (the permutation test over the timed repeats), undecided where no
        timed runs were made (a machine of one core, a part of the page's seeds) or any ran
        beside other work (a CPU share below the bar). Observed: each seed's paired bootstrap, the
        tokens a second, and what a GPU would add."""
        column = bleu_column(data["beam_size"])
        bleu = {a: Spread(data["test_bleu"][a]) for a in ARMS}
        accuracy = better_finding(
            TEXT.phrase("bleu"),
            "the Transformer",
            bleu["transformer"],
            "the RNN",
            bleu["rnn"],
            unit="",
            where=[((LABELS["transformer"],), column), ((LABELS["rnn"],), column)],
        )
        speed = data["speed"]
        what = TEXT.phrase("speedup")
        if not measured(speed):
            why = "part" if data.get("part") else "one_core" if data["cores"] < 2 else "no_runs"
            parallel = Finding(
                None,
                what + TEXT.phrase("unmeasured." + UNMEASURED[why]),
                reason=TEXT.phrase("reason." + UNMEASURED[why]),
            )
        else:
            up = {a: speedups(speed[a]) for a in ARMS}
            shares = [s for a in ARMS for t in THREADS for s in speed[a][str(t)]["share"]]
            if min(shares) < data["share_bar"]:
                parallel = Finding(
                    None,
                    what
                    + TEXT.phrase(
                        "busy",
                        transformer=up["transformer"].mean,
                        rnn=up["rnn"].mean,
                        lowest=100 * min(shares),
                        bar=100 * data["share_bar"],
                    ),
                    reason=TEXT.phrase("reason.busy", bar=100 * data["share_bar"]),
                )
            else:
                parallel = better_finding(
                    what + TEXT.phrase("measured"),
                    "the Transformer",
                    up["transformer"],
                    "the RNN",
                    up["rnn"],
                    unit="x",
                    digits=2,
                    where=[
                        ((LABELS["transformer"],), "speed-up from a second thread"),
                        ((LABELS["rnn"],), "speed-up from a second thread"),
                    ],
                )
        observations = []
        ps = [p for p in data["paired_p"] if p is not None]
        if ps:
            ahead = [t > r for t, r in zip(data["test_bleu"]["transformer"], data["test_bleu"]["rnn"])]
            observations.append(
                TEXT.phrase(
                    "paired",
                    apart=sum(p < ALPHA for p in ps),
                    seeds=len(ps),
                    transformer=sum(ahead),
                    highest=PValue(max(ps)),
                )
            )
        if measured(speed):
            tokens = {a: {t: Spread(speed[a][str(t)]["tokens_per_second"]).mean for t in THREADS} for a in ARMS}
            observations.append(
                TEXT.phrase(
                    "tokens",
                    rnn_one=tokens["rnn"][1],
                    rnn_two=tokens["rnn"][2],
                    transformer_one=tokens["transformer"][1],
                    transformer_two=tokens["transformer"][2],
                )
            )
        observations.append(TEXT.phrase("gpu"))
        return [accuracy, parallel], observations


def bleu_column(beam_size: int) -> str:
    """The table's column of test BLEU."""
    return f"test BLEU (beam {beam_size})"


def speedups(speed: dict) -> Spread:
    """One model's speed-up from a second thread, one per timed repeat (tokens a second at 2
    threads over 1 thread, repeat by repeat)."""
    one, two = (speed[str(t)]["tokens_per_second"] for t in THREADS)
    return Spread([b / a for a, b in zip(one, two) if a > 0])


def measured(speed: dict | None) -> bool:
    """Whether timed runs were made and each model has at least one at each thread count."""
    return bool(speed) and all(speed[a][str(t)]["tokens_per_second"] for a in ARMS for t in THREADS)
