"""ntm: the Neural Turing Machine's programs (Graves, Wayne & Danihelka 2014, §4.1 copy, §4.2
repeat copy, §4.5 priority sort). configs/ntm-copy.yaml learns each task from examples; copy is
tested on longer sequences than trained on, and its heads' weightings are checked against the
copy program (writes to one location after another, reads back in the written order)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..errors import ConfigError
from ..schema import choice, number
from ..viz import pyplot, save_figure
from .base import REPRODUCTIONS, Finding, Reproduction, Result, Table, budget
from .datasets import count, long_sequences, read_split
from .plots import draw_seeds, seeds_note
from .spread import Spread, count_finding
from .texts import texts
from .training import PlateauOptions, compare_preset, curve, run_records, step_budget
from .wording import Phrase, joined

TASKS = ("copy", "repeat-copy", "sort")
COLORS = {"copy": "tab:blue", "repeat-copy": "tab:orange", "sort": "tab:green"}
PRESET = "ntm-copy"
TEXT = texts("ntm")
MOST = 0.5  # the share of seeds a finding holds "learn": above one half, most of them


def learned(values: list[float], at_least: float) -> tuple[int, int]:
    """(how many seeds of ``values``, one score each, reach ``at_least``, how many seeds)."""
    return sum(v >= at_least for v in values), len(values)


def worst_longer(copy: dict[str, list[float]], longer: list[str]) -> list[float]:
    """Each seed's copy exact match at its worst longer length (``copy``: test set -> seeds)."""
    return [min(copy[n][i] for n in longer) for i in range(len(copy[longer[0]]))]


@dataclass
class NTMOptions(PlateauOptions):
    # the caps of updates (batch 64): copy and repeat copy above the preset's 6,000, where a seed
    # that learns late was still rising (copy seed 4: 17% -> 69% dev exact match over 4,500 updates);
    # copy's doubled again where that seed was still rising at 10,000 (85.5%, the dev loss falling),
    # and again where seed 3 crossed over late (dev exact match 36% at 16,250, 84.5% and rising at 20,000);
    # repeat copy's doubled where its seed 2 crossed over at its cap (30% at 7,250, 60.5% and rising at 10,000),
    # and again where seed 1 crept on at 20,000 (28% -> 54% since 8,750, the dev loss 1.69 -> 0.91),
    # and half again where it crept on at 40,000 (70% dev exact match, the dev loss 0.56 -> 0.52 in
    # 3,000 updates; the rule ended it at 40,500); sort's past 6,000, where seed 5 sat at 100% one
    # evaluation short of the rule's end, seed 1 crossed over after it (81.5% -> 97% at 8,750) and
    # seed 4 crept to 58.5% at 12,000 (the rule ended it at 14,750, the latest of the six)
    copy_steps: int = budget(40_000)  # the cap of updates of each copy run
    repeat_steps: int = budget(60_000)  # the cap of updates of each repeat copy run
    sort_steps: int = budget(16_000)  # the cap of updates of each priority sort run
    # the machine creeps for thousands of updates with its dev exact match flat within the noise of
    # 200 sequences before it crosses over (copy seed 3, repeat copy seed 2); with a patience of 4
    # the noise ended repeat copy seeds 3 and 6 in that creep (their dev loss still falling 2-4% an
    # evaluation) where seed 2's went on and crossed: a longer patience, as memory-hops has
    patience: int = 8
    eval_every: int = 250  # updates between dev evaluations (the curves)
    train_pairs: int = 20_000  # generated training sequences of each task
    dev_sentences: int = 200  # dev sequences decoded at each evaluation
    test_sentences: int = 200  # test sequences of each test set
    bits: int = number(8, 1)  # bits of each vector (the paper's copy: 8)
    copy_max: int = number(10, 1)  # copy trains on 1 .. copy_max vectors (the paper: 1-20)
    longer: str = "20,30,40"  # the longer copy lengths tested, each a test set
    repeat_max: int = number(5, 1)  # repeat copy's sequences: 1 .. repeat_max vectors (the paper: 1-10)
    repeats_max: int = number(5, 1)  # and 1 .. repeats_max copies (the paper: 1-10)
    sort_max: int = number(6, 1)  # priority sort's sequences: 1 .. sort_max vectors (the paper: 20 in, 16 out)
    levels: int = number(32, 2)  # the distinct priorities drawn from (the paper: reals in [-1, 1])
    memory_locations: int = number(64, 1)  # N (the preset's 64; the paper's 128)
    # priority sort with the paper's controller: feed-forward, 8 read and 8 write heads (its size
    # scaled from the paper's 512 units)
    sort_controller: str = choice("feedforward", ("lstm", "feedforward"))
    sort_heads: int = number(8, 1)  # read heads, and as many write heads
    sort_hidden: int = number(100, 1)  # the sort controller's units
    bar: float = number(90.0, 0.0, 100.0)  # the exact match (%) that counts as a task learned
    program_bar: float = number(95.0, 0.0, 100.0)  # the share (%) of sequences that counts as following the program

    def __post_init__(self):
        lengths = self.lengths()
        if not lengths or min(lengths) <= self.copy_max:
            raise ConfigError(
                f"ntm.longer: give lengths beyond the trained 1-{self.copy_max}, comma-separated (got {self.longer!r})",
                key="ntm.longer",
            )
        if max(lengths) > self.memory_locations:
            raise ConfigError(
                f"ntm.longer: a copy of {max(lengths)} vectors does not fit in "
                f"{self.memory_locations} memory locations",
                key="ntm.longer",
            )
        if self.sort_max > self.levels:
            raise ConfigError(
                f"ntm.levels: {self.sort_max} items to sort need as many distinct priorities", key="ntm.levels"
            )

    def lengths(self) -> list[int]:
        """The longer copy lengths."""
        try:
            return sorted({int(n) for n in self.longer.split(",") if n.strip()})
        except ValueError:
            raise ConfigError(
                f"ntm.longer: expected whole numbers separated by commas, got {self.longer!r}", key="ntm.longer"
            ) from None

    def steps(self, task: str) -> int:
        return {"copy": self.copy_steps, "repeat-copy": self.repeat_steps, "sort": self.sort_steps}[task]


@REPRODUCTIONS.register("ntm", options=NTMOptions)
class NeuralTuringMachine(Reproduction):
    title, claim, quotes, source = TEXT.title, TEXT.claim, TEXT.quotes, TEXT.source
    default_seeds = 6  # the fewest with which "most seeds learn" can be decided (count_needed(0.5))
    nominal_minutes = 1240.0  # at the caps: copy 0.08 s an update, repeat copy 0.1 s, sort's 16 heads about 0.2 s

    def run(self) -> Result:
        o, ctx = self.options, self.context
        folders = self._data()
        rows = {
            task: [
                compare_preset(ctx, PRESET, f"{task}-seed{seed}", folders[task], self._overrides(task), seed)
                for seed in ctx.seed_list
            ]
            for task in TASKS
        }
        sets = {task: self._sets(task, folders[task]) for task in TASKS}
        exact, tokens, program = self._score(rows, sets)
        curves = {task: [curve(r["run_dir"], "dev_exact_match") for r in rs] for task, rs in rows.items()}
        longest = str(o.lengths()[-1])
        table = Table(
            [
                "task",
                "test set",
                "exact match",
                "token accuracy",
                "written one location after another",
                "read in written order",
            ],
            [
                [
                    task,
                    name,
                    Spread(exact[task][name]).format(unit="%"),
                    Spread(tokens[task][name]).format(unit="%"),
                    *(
                        [Spread(program[name][k]).format(unit="%") for k in ("writes", "reads")]
                        if name in program
                        else ["-", "-"]
                    ),
                ]
                for task in TASKS
                for name in sets[task]
            ],
            caption=TEXT.format(
                "caption", test_sentences=o.test_sentences, seeds_note=seeds_note(ctx.seeds), repeats_max=o.repeats_max
            ),
        )
        figures = [self._curves(curves), self._weightings(rows["copy"][0]["run_dir"], sets["copy"][longest])]
        summary = TEXT.format(
            "summary",
            copy=Spread(exact["copy"][self._trained("copy")]).mean,
            longer=", ".join(f"{Spread(exact['copy'][str(n)]).mean:.1f}% at {n}" for n in o.lengths()),
            repeat_copy=Spread(exact["repeat-copy"][self._trained("repeat-copy")]).mean,
            sort=Spread(exact["sort"][self._trained("sort")]).mean,
            longest=longest,
            copy_learned=learned(worst_longer(exact["copy"], [str(n) for n in o.lengths()]), o.bar)[0],
            repeat_learned=learned(exact["repeat-copy"][self._trained("repeat-copy")], o.bar)[0],
            sort_learned=learned(exact["sort"][self._trained("sort")], o.bar)[0],
            writes_learned=learned(program[longest]["writes"], o.program_bar)[0],
            reads_learned=learned(program[longest]["reads"], o.program_bar)[0],
            seeds=ctx.seeds,
        )
        return Result(
            summary=summary,
            tables=[table],
            figures=figures,
            runs=[r for task in TASKS for r in run_records({task: rows[task]}, o.steps(task), ctx.seed_list)],
            setup=self._setup(folders),
            budget=TEXT.format(
                "budget",
                copy_steps=o.copy_steps,
                repeat_steps=o.repeat_steps,
                sort_steps=o.sort_steps,
                plateau=o.plateau_words(),
                seeds=ctx.seeds,
            ),
            data={
                "exact_match": exact,
                "token_accuracy": tokens,
                "program": program[longest],
                "trained": {task: self._trained(task) for task in TASKS},
                "longer": [str(n) for n in o.lengths()],
                "bar": o.bar,
                "program_bar": o.program_bar,
                "sort_controller": o.sort_controller,
                "sort_heads": o.sort_heads,
            },
        )

    # -- data and training -------------------------------------------------------------------------
    def _data(self) -> dict[str, Path]:
        """Each task's split folder (copy's with its longer test sets)."""
        o, ctx = self.options, self.context
        sizes = (o.train_pairs, o.dev_sentences, o.test_sentences)
        return {
            "copy": long_sequences(ctx.run_dir("data"), *sizes, (1, o.copy_max), o.bits, test_lengths=o.lengths()),
            "repeat-copy": long_sequences(
                ctx.run_dir("data-repeat-copy"),
                *sizes,
                (1, o.repeat_max),
                o.bits,
                task="repeat-copy",
                repeats=(1, o.repeats_max),
            ),
            "sort": long_sequences(
                ctx.run_dir("data-sort"), *sizes, (1, o.sort_max), o.bits, task="sort", levels=o.levels
            ),
        }

    def _overrides(self, task: str) -> list[str]:
        o = self.options
        # repeat copy's output is up to repeats_max times its source (the count token one more)
        ratio = o.repeats_max if task == "repeat-copy" else 1
        sort = (
            [
                f"model.controller={o.sort_controller}",
                f"model.read_heads={o.sort_heads}",
                f"model.write_heads={o.sort_heads}",
                f"model.hidden_size={o.sort_hidden}",
            ]
            if task == "sort"
            else []
        )
        return [
            f"model.memory_locations={o.memory_locations}",
            f"decode.max_len_ratio={ratio}",
            "train.precision=fp32",  # auto would time each run's model and might choose per seed
            *sort,
            *step_budget(o.steps(task), o.eval_every, o.dev_sentences, o),
        ]

    def _trained(self, task: str) -> str:
        """The name of a task's test set of the trained lengths."""
        o = self.options
        return "1-" + str({"copy": o.copy_max, "repeat-copy": o.repeat_max, "sort": o.sort_max}[task])

    def _sets(self, task: str, folder: Path) -> dict[str, list]:
        """A task's test sets: name -> pairs (the trained lengths, then copy's longer ones)."""
        sets = {self._trained(task): read_split(folder, "test")}
        if task == "copy":
            sets.update({str(n): read_split(folder, f"test-len{n}") for n in self.options.lengths()})
        return sets

    def _score(self, rows, sets) -> tuple[dict, dict, dict]:
        """exact match and token accuracy (%) {task: {set: [one per seed]}}, and the copy program's
        shares (%) on each longer copy set {set: {share: [one per seed]}}."""
        from ..api import load
        from ..eval.tape import head_locations, tape_program

        exact = {task: {name: [] for name in sets[task]} for task in TASKS}
        tokens = {task: {name: [] for name in sets[task]} for task in TASKS}
        program: dict = {}
        for task in TASKS:
            for row in rows[task]:
                translator = load(row["run_dir"])
                for name, pairs in sets[task].items():
                    metrics = translator.evaluate(pairs, bleu=False)
                    exact[task][name].append(100 * metrics["exact_match"])
                    tokens[task][name].append(100 * metrics["token_accuracy"])
                    if task == "copy" and name != self._trained(task):
                        writes, reads, focus = head_locations(translator, pairs)
                        shares = tape_program(writes, reads, self.options.memory_locations, focus)
                        for key, value in vars(shares).items():
                            program.setdefault(name, {}).setdefault(key, []).append(100 * value)
        return exact, tokens, program

    def _setup(self, folders) -> list[str]:
        o, ctx = self.options, self.context
        n = {
            task: f"{count(folders[task], 'train'):,} / {count(folders[task], 'dev'):,} / "
            f"{count(folders[task], 'test'):,}"
            for task in TASKS
        }
        return TEXT.paragraphs(
            "setup",
            bits=o.bits,
            vectors=2**o.bits,
            copy=n["copy"],
            copy_max=o.copy_max,
            test_sentences=o.test_sentences,
            longer=o.longer,
            repeat_copy=n["repeat-copy"],
            repeat_max=o.repeat_max,
            repeats_max=o.repeats_max,
            sort=n["sort"],
            sort_max=o.sort_max,
            sort_controller=o.sort_controller,
            sort_hidden=o.sort_hidden,
            sort_heads=o.sort_heads,
            last_level=o.levels - 1,
            preset=PRESET,
            memory_locations=o.memory_locations,
            dev_sentences=o.dev_sentences,
            eval_every=o.eval_every,
            plateau=o.plateau_words(),
            seeds=ctx.seeds,
            bar=o.bar,
            program_bar=o.program_bar,
            longest=o.lengths()[-1],
        )

    # -- figures -----------------------------------------------------------------------------------
    def _curves(self, curves):
        plt = pyplot()
        fig, ax = plt.subplots(figsize=(7.5, 4.3), dpi=110)
        for task in TASKS:
            draw_seeds(ax, curves[task], task, color=COLORS[task], scale=100)
        ax.set_xlabel("update (batch of 64 sequences)")
        ax.set_ylabel("dev exact match (%)")
        ax.set_ylim(-2, 102)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8, loc="lower right")
        ax.set_title(f"The NTM learning its three tasks ({seeds_note(self.context.seeds)})", fontsize=10)
        return save_figure(fig, self.context.figure("curves")), TEXT.format("figure.curves")

    def _weightings(self, run_dir: Path, pairs):
        from ..api import load
        from ..viz.memory import plot_memory

        path = plot_memory(load(run_dir), pairs[0][0], self.context.figure("weightings"))
        length = len(pairs[0][0].split())
        return path, TEXT.format("figure.weightings", seed=self.context.seed_list[0], length=length)

    # -- findings ----------------------------------------------------------------------------------
    @staticmethod
    def judge(data: dict) -> tuple[list[Finding], list[Phrase]]:
        """A seed learns a task or it does not (the outcomes are bimodal): each finding counts the
        seeds that reach the bar and tests that count by the exact binomial test, the claim held
        when the 95% interval of their share lies above one half (most seeds learn), failed when
        below. Core: copy beyond the trained lengths, repeat copy, priority sort (with the paper's
        feed-forward controller and 8 heads of each kind; a page made before it ran sort with the
        copy preset's controller, and reports it only), and the copy program's writes and reads."""
        exact, tokens, program = data["exact_match"], data["token_accuracy"], data["program"]
        trained, longer, bar, program_bar = data["trained"], data["longer"], data["bar"], data["program_bar"]
        copy = exact["copy"]
        seeds = range(len(copy[trained["copy"]]))
        lowest = worst_longer(copy, longer)
        faithful_sort = data.get("sort_controller") == "feedforward"  # pages made before it: the copy preset's

        findings = [
            count_finding(
                TEXT.phrase("longer.start", trained=trained["copy"], bar=bar)
                + joined([Phrase("{}", n) for n in longer])
                + TEXT.phrase("longer.end"),
                *learned(lowest, bar),
                MOST,
            ),
            count_finding(
                TEXT.phrase("repeat_copy", trained=trained["repeat-copy"], bar=bar),
                *learned(exact["repeat-copy"][trained["repeat-copy"]], bar),
                MOST,
            ),
            count_finding(
                TEXT.phrase("sort" if faithful_sort else "sort_copy_preset", trained=trained["sort"], bar=bar),
                *learned(exact["sort"][trained["sort"]], bar),
                MOST,
                core=faithful_sort,
            ),
            count_finding(
                TEXT.phrase("writes", length=longer[-1], bar=program_bar),
                *learned(program["writes"], program_bar),
                MOST,
            ),
            count_finding(
                TEXT.phrase("reads", length=longer[-1], bar=program_bar), *learned(program["reads"], program_bar), MOST
            ),
        ]
        observations = [
            TEXT.phrase(
                "trained",
                trained=trained["copy"],
                exact=Spread(copy[trained["copy"]]).mean,
                tokens=Spread(tokens["copy"][trained["copy"]]).mean,
                seeds=len(seeds),
            )
        ]
        observations += [
            TEXT.phrase(
                "at_length",
                length=n,
                exact=Spread(copy[n]).mean,
                tokens=Spread(tokens["copy"][n]).mean,
                low=Spread(copy[n]).low,
                high=Spread(copy[n]).high,
            )
            for n in longer
        ]
        observations.append(
            TEXT.phrase(
                "apart",
                length=longer[-1],
                apart=Spread(program["first_two_apart"]).mean,
                low=Spread(program["first_two_apart"]).low,
                high=Spread(program["first_two_apart"]).high,
                focus=Spread(program["focus"]).mean,
            )
        )
        return findings, observations
