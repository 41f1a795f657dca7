"""ntm: the Neural Turing Machine's programs (Graves, Wayne & Danihelka 2014, §4.1 copy, §4.2
repeat copy, §4.5 priority sort). configs/ntm-copy.yaml learns each task from examples; copy is
tested on longer sequences than trained on, and its heads' weightings are checked against the
copy program (writes to one location after another, reads back in the written order)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..errors import ConfigError
from ..schema import number
from ..viz import pyplot, save_figure
from .base import REPRODUCTIONS, Finding, Quote, Reproduction, Result, Table, budget
from .datasets import count, long_sequences, read_split
from .plots import draw_seeds, seeds_note
from .spread import Spread, bar_finding
from .training import PlateauOptions, compare_preset, curve, run_records, step_budget
from .wording import Phrase, joined

TASKS = ("copy", "repeat-copy", "sort")
COLORS = {"copy": "tab:blue", "repeat-copy": "tab:orange", "sort": "tab:green"}
PRESET = "ntm-copy"


@dataclass
class NTMOptions(PlateauOptions):
    copy_steps: int = budget(3000)  # the cap of updates of each copy run (batch 64)
    repeat_steps: int = budget(2500)  # the cap of updates of each repeat copy run
    sort_steps: int = budget(2500)  # the cap of updates of each priority sort run
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
    title = "The Neural Turing Machine's copy, repeat copy and priority sort"
    claim = (
        "A Neural Turing Machine learns simple programs from examples: it copies sequences longer than any it "
        "was trained on, writing each vector to the next location and reading them back in order; it learns to "
        "repeat a sequence a given number of times, and to sort vectors by priority."
    )
    quotes = (
        Quote(
            "除此之外, 神经图灵机但具有更复杂的寻址类型，既可以使用基于内容的寻址（如上下文），也可以使用基于位置的寻址，从而使网络可以"
            "学习寻址模式以执行简单的计算机程序，例如排序算法。",
            'seed document 002, "Attention和Memory对比"',
            "beyond that, the Neural Turing Machine has more complex kinds of addressing, by content (like a "
            "context) and by location, so that the network can learn addressing patterns to carry out simple "
            "computer programs, such as sorting algorithms.",
        ),
        Quote(
            "可见计算机的内存操作可以通过神经网络复现。我们可以立刻想到一个方法：在 RNN 的外部配置一个存储信息的存储装置，并使用 "
            "Attention 向这个存储装置读写必要的信息。实际上，这样的研究有好几个，NTM （Neural Turing Machine，神经图灵机）"
            "就是其中比较有名的一个。",
            "seed document 000 (*Deep Learning from Scratch 2*, chapter 8), §5.3",
            "so a computer's memory operations can be reproduced by a neural network: put a storage device "
            "outside the RNN and read and write what is needed with attention. There are several such "
            "studies; the NTM (Neural Turing Machine) is one of the best known.",
        ),
    )
    source = (
        'Graves, Wayne & Danihelka 2014, "Neural Turing Machines" (arXiv:1410.5401), in paraphrase (its text '
        "is not in the repository): §4.1, an NTM trained to copy sequences of 1-20 random 8-bit vectors copies "
        "longer ones (up to 120 in its figures) well where an LSTM does not, its write head writing to "
        "consecutive locations and its read head reading them in the same order; §4.2, it learns repeat copy "
        "(1-10 vectors, 1-10 repeats, the count on its own input channel); §4.5, it learns priority sort (20 "
        "vectors with priorities in [-1, 1], the 16 of highest priority out, sorted). Seed documents 002 and "
        "000; `configs/ntm-copy.yaml` on `attnseq data copy|repeat-copy|sort`."
    )
    default_seeds = 3
    nominal_minutes = 25.0

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
            caption=(
                f"The best dev checkpoint of each run on {o.test_sentences} test sequences of each set "
                f"({seeds_note(ctx.seeds)}), greedy; the test sets' lengths in vectors (repeat copy: "
                f"1-{o.repeats_max} repeats; sort: items). Written one location after another: the "
                "share of sequences in which the write head's most weighted location at every input "
                "step is next to the one before; read in written order: the share in which the read "
                "head's most weighted location at every output step is where that output's vector was "
                "written."
            ),
        )
        figures = [self._curves(curves), self._weightings(rows["copy"][0]["run_dir"], sets["copy"][longest])]
        summary = (
            f"copy exact match {Spread(exact['copy'][self._trained('copy')]).mean:.1f}% on the trained lengths, "
            + ", ".join(f"{Spread(exact['copy'][str(n)]).mean:.1f}% at {n}" for n in o.lengths())
            + f"; repeat copy {Spread(exact['repeat-copy'][self._trained('repeat-copy')]).mean:.1f}%; sort "
            f"{Spread(exact['sort'][self._trained('sort')]).mean:.1f}%; at length {longest} "
            f"{Spread(program[longest]['writes']).mean:.1f}% of the sequences written one location after "
            f"another and {Spread(program[longest]['reads']).mean:.1f}% read in written order ({ctx.seeds} "
            "seeds)"
        )
        return Result(
            summary=summary,
            tables=[table],
            figures=figures,
            runs=[r for task in TASKS for r in run_records({task: rows[task]}, o.steps(task), ctx.seed_list)],
            setup=self._setup(folders),
            budget=(
                f"at most {o.copy_steps} updates per copy run, {o.repeat_steps} per repeat copy run and "
                f"{o.sort_steps} per sort run (batch 64), {o.plateau_words()}; 3 tasks x {ctx.seeds} seeds"
            ),
            data={
                "exact_match": exact,
                "token_accuracy": tokens,
                "program": program[longest],
                "trained": {task: self._trained(task) for task in TASKS},
                "longer": [str(n) for n in o.lengths()],
                "bar": o.bar,
                "program_bar": o.program_bar,
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
        return [
            f"model.memory_locations={o.memory_locations}",
            f"decode.max_len_ratio={ratio}",
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
        return [
            f"Data (`attnseq data copy|repeat-copy|sort`; train / dev / test sequences): each {o.bits}-bit vector is "
            f"one token, entering as its bits beside a learned embedding and predicted by one softmax over the "
            f"{2**o.bits} vectors; the machine ends its output with eos (the paper predicts each bit with a sigmoid "
            "and is told when to stop, except in repeat copy).",
            f"Copy ({n['copy']}): 1-{o.copy_max} vectors (the paper: 1-20), and {o.test_sentences} test sequences of "
            f"each longer length {o.longer}.",
            f"Repeat copy ({n['repeat-copy']}): 1-{o.repeat_max} vectors and a count token x1-x{o.repeats_max} "
            f"after them, the output the sequence that many times (the paper: 1-10 vectors, 1-10 repeats, the count "
            "a normalised number on its own input channel).",
            f"Priority sort ({n['sort']}): 1-{o.sort_max} items, each a vector token followed by a priority token "
            f"p0-p{o.levels - 1} (distinct within a sequence), the output every vector from the highest priority to "
            "the lowest (the paper: 20 vectors each with a real priority in [-1, 1] in the same input step, the 16 "
            "highest out).",
            f"Model: `configs/{PRESET}.yaml` for every task (an LSTM controller of 32 units, one read and one write "
            f"head, shifts -1..1, {o.memory_locations} locations of width 20; the paper: 100 units, 128 locations; "
            "sort in the paper had a feed-forward controller and 8 heads of each kind), Adam 3e-3 (the paper: "
            "RMSProp 1e-4).",
            f"Trained with `attnseq.compare`'s train-and-evaluate: dev exact match on {o.dev_sentences} sequences "
            f"every {o.eval_every} updates, {o.plateau_words()}, at most the task's cap of updates; the best dev "
            "checkpoint decodes every test set (greedy).",
            f"Tests: a task counts as learned when the 95% t interval of its mean exact match over the {ctx.seeds} "
            f"seeds lies at or above {o.bar:g}%, and not when it lies wholly below; the copy program is followed when "
            f"both shares of sequences lie at or above {o.program_bar:g}% at the longest length ({o.lengths()[-1]}).",
        ]

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
        return save_figure(fig, self.context.figure("curves")), "Dev exact match during training of each task."

    def _weightings(self, run_dir: Path, pairs):
        from ..api import load
        from ..viz.memory import plot_memory

        path = plot_memory(load(run_dir), pairs[0][0], self.context.figure("weightings"))
        length = len(pairs[0][0].split())
        return path, (
            f"The copy run of seed {self.context.seed_list[0]} on a test sequence of {length} vectors: the "
            "inputs and outputs over time, and the write and read weightings over the memory locations the "
            "heads visit (the red line: where the output begins)."
        )

    # -- findings ----------------------------------------------------------------------------------
    @staticmethod
    def judge(data: dict) -> tuple[list[Finding], list[Phrase]]:
        exact, tokens, program = data["exact_match"], data["token_accuracy"], data["program"]
        trained, longer, bar, program_bar = data["trained"], data["longer"], data["bar"], data["program_bar"]
        copy = exact["copy"]
        seeds = range(len(copy[trained["copy"]]))
        lowest = [min(copy[n][i] for n in longer) for i in seeds]  # each seed's worst longer length
        findings = [
            bar_finding(
                Phrase(
                    "copy beyond the trained lengths {}: each seed's lowest exact match over lengths ", trained["copy"]
                )
                + joined([Phrase("{}", n) for n in longer])
                + ": ",
                lowest,
                bar,
            ),
            bar_finding(
                Phrase("repeat copy on its trained lengths {}: exact match ", trained["repeat-copy"]),
                exact["repeat-copy"][trained["repeat-copy"]],
                bar,
            ),
            bar_finding(
                Phrase("priority sort on its trained lengths {}: exact match ", trained["sort"]),
                exact["sort"][trained["sort"]],
                bar,
            ),
            bar_finding(
                Phrase(
                    "the copy program's writes at length {}: sequences whose every vector goes to the "
                    "location next to the one before: ",
                    longer[-1],
                ),
                program["writes"],
                program_bar,
            ),
            bar_finding(
                Phrase(
                    "the copy program's reads at length {}: sequences whose every output step reads where "
                    "its vector was written: ",
                    longer[-1],
                ),
                program["reads"],
                program_bar,
            ),
        ]
        observations = [
            Phrase(
                "copy on the trained lengths {}: exact match {:.1f}%, token accuracy {:.1f}% (the mean "
                "over the seeds, n = {}).",
                trained["copy"],
                Spread(copy[trained["copy"]]).mean,
                Spread(tokens["copy"][trained["copy"]]).mean,
                len(seeds),
            )
        ]
        observations += [
            Phrase(
                "copy at length {}: exact match {:.1f}%, token accuracy {:.1f}%, seeds from {:.1f}% to {:.1f}% exact.",
                n,
                Spread(copy[n]).mean,
                Spread(tokens["copy"][n]).mean,
                Spread(copy[n]).low,
                Spread(copy[n]).high,
            )
            for n in longer
        ]
        observations.append(
            Phrase(
                "at length {}: the first two vectors written to distinct locations in {:.1f}% of "
                "the sequences (the seeds from {:.1f}% to {:.1f}%); the heads' most weighted "
                "location holds {:.1f}% of their weight on average.",
                longer[-1],
                Spread(program["first_two_apart"]).mean,
                Spread(program["first_two_apart"]).low,
                Spread(program["first_two_apart"]).high,
                Spread(program["focus"]).mean,
            )
        )
        learned = sum(v >= bar for v in lowest)
        observations.append(
            Phrase("{} of {} copy runs reach {:g}% exact match at every longer length.", learned, len(lowest), bar)
        )
        return findings, observations
