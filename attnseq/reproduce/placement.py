"""placement: where the attention's context goes and which decoder state attends. The book's
section 4.2 question (context into the output layer only, or also into the next step's input)
and Bahdanau's previous state against Luong's current state, on the book's date task."""

from __future__ import annotations

from dataclasses import dataclass

from ..viz import pyplot, save_figure
from .base import REPRODUCTIONS, Finding, Quote, Reproduction, Result, Table, budget
from .datasets import BookTaskOptions, counts
from .plots import draw_seeds, seeds_note
from .significance import alike, better
from .spread import Spread, comparison, equivalence_phrase, spreads
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

# label, decoder design, where the context goes, which state attends
VARIANTS = (
    ("book", "book", "output layer only (the book's model)", "current h_t"),
    (
        "book-input",
        "{name: book, context_into_input: true}",
        "output layer and the next step's input (§4.2)",
        "current h_t",
    ),
    ("bahdanau", "bahdanau", "this step's input and the readout", "previous s_{t-1}"),
    (
        "luong",
        "{name: luong, input_feeding: true}",
        "attentional state h~_t: output layer and the next step's input (input feeding)",
        "current h_t",
    ),
)
ALIKE = 5.0  # points of test exact match within which two designs count as doing as well
COLORS = {"book": "tab:red", "book-input": "tab:orange", "bahdanau": "tab:green", "luong": "tab:blue"}


@dataclass
class PlacementOptions(BookTaskOptions, PlateauOptions):
    steps: int = budget(2400)  # the cap of updates of every run (batch 128; an epoch of the book's data is 348)
    eval_every: int = 150  # updates between dev evaluations (the curves)
    hidden_size: int = 128  # LSTM units (the book: 256; halved so 4 designs x 3 seeds fit the budget)


@REPRODUCTIONS.register("placement", options=PlacementOptions)
class Placement(Reproduction):
    title = "Where the context goes and which state attends"
    claim = (
        "Feeding the context into the next step's LSTM input as well, or into the output layer only (the "
        "book's model), should make little difference to accuracy."
    )
    quotes = (
        Quote(
            "Attention 层的位置的不同对最终精度有何影响呢？答案要试一下才知道。实际上，这只能使用真实数据来验证。"
            "不过，在上面的两个模型中，上下文向量都得到了很好的应用。因此，在这两个模型之间，我们可能看不到太大的精度差异。",
            "seed document 000 (*Deep Learning from Scratch 2*, chapter 8), §4.2",
            "How does the position of the Attention layer affect the final accuracy? The answer is only known "
            "by trying it; in fact, only real data can verify it. But in both models the context vector is "
            "used well, so between the two we may not see a large difference in accuracy.",
        ),
    )
    source = (
        "*Deep Learning from Scratch 2*, §8.4.2, as seed document 000 gives it; the designs of Bahdanau, Cho & "
        "Bengio 2014 (previous state s_{t-1}) and Luong, Pham & Manning 2015 (current state h_t, input "
        "feeding) as seed document 001 (§5.2) describes them, compared as an observation: no document "
        "claims one is more accurate."
    )
    default_seeds = 3
    nominal_minutes = 36.0

    def run(self) -> Result:
        o, ctx = self.options, self.context
        data = o.split(ctx.run_dir("data"))
        common = [f"model.hidden_size={o.hidden_size}", *step_budget(o.steps, o.eval_every, o.dev_sentences, o)]
        variants = [(label, "book-attention", [f"model.decoder={decoder}"]) for label, decoder, _, _ in VARIANTS]
        rows = compare_variants(ctx, variants, data, common)
        curves = {label: [curve(r["run_dir"], "dev_exact_match") for r in rs] for label, rs in rows.items()}
        half = max(o.eval_every, (o.steps // 2) // o.eval_every * o.eval_every)
        at_half = {label: Spread([100 * (value_at(c, half) or 0.0) for c in cs]) for label, cs in curves.items()}
        test = {label: Spread([100 * v for v in spreads(rs, "test_exact_match").values]) for label, rs in rows.items()}
        reach = {label: [first_reaching(c, 0.9) for c in cs] for label, cs in curves.items()}
        table = Table(
            [
                "design",
                "context goes into",
                "attending state",
                "parameters",
                "tokens/s",
                f"dev exact match at step {half}",
                "test exact match",
                "steps to 90% dev",
            ],
            [
                [
                    label,
                    where,
                    state,
                    f"{rows[label][0]['parameters']:,}",
                    f"{Spread([r['tokens_per_second'] for r in rows[label]]).mean:,.0f}",
                    at_half[label].format(unit="%"),
                    test[label].format(unit="%"),
                    steps_to(reach[label]),
                ]
                for label, _, where, state in VARIANTS
            ],
            caption=(
                f"The book's date task after {o.steps} updates ({seeds_note(ctx.seeds)}); test: the best dev "
                "checkpoint of each run on the book's test dates; 'steps to 90% dev': the first evaluation at "
                "90% or more (mean over the seeds that got there)."
            ),
        )
        figure = self._figure(curves)
        summary = (
            "test exact match "
            + ", ".join(f"{label} {test[label].mean:.1f}%" for label, *_ in VARIANTS)
            + f" ({ctx.seeds} seed{'s' if ctx.seeds > 1 else ''}, each trained to its plateau or "
            f"{o.steps} updates)"
        )
        return Result(
            summary=summary,
            tables=[table],
            figures=[figure],
            setup=[
                "Data: the book's date.txt split as `attnseq data book` splits it (500 dev dates from its training "
                f"part, its test dates): {counts(data)}; padding spaces kept, the question reversed.",
                f"Every design is `configs/book-attention.yaml` (embeddings 16, one LSTM layer, dot attention, the "
                f"book's initialisation, batch 128, Adam 1e-3, clip 5) with `model.decoder` set and "
                f"`model.hidden_size={o.hidden_size}` (the book has 256). Designs: `book`, `{{name: book, "
                "context_into_input: true}`, `bahdanau` (its readout tanh(W [s_t; c_t; y_{t-1}])), `{name: luong, "
                "input_feeding: true}`.",
                f"Trained with `attnseq.compare` (its train-and-evaluate of one config): dev exact match on "
                f"{o.dev_sentences} dates every {o.eval_every} updates, {o.plateau_words()}, at most {o.steps} "
                "updates; the best dev checkpoint scored on the test set; greedy decoding.",
                f'Tests: Welch\'s t over the seeds; "alike" by the two one-sided tests with a margin of '
                f"{ALIKE:g} points (the 90% interval of the difference inside ±{ALIKE:g}).",
            ],
            budget=f"at most {o.steps} updates per run (about {o.steps / 348:.1f} epochs), {o.plateau_words()}; "
            f"4 designs x {ctx.seeds} seeds",
            runs=run_records(rows, o.steps, ctx.seed_list),
            data={
                "test_exact_match": {k: v.values for k, v in test.items()},
                "dev_at_half": {k: v.values for k, v in at_half.items()},
                "half": half,
                "margin": ALIKE,
            },
        )

    def _figure(self, curves):
        plt = pyplot()
        fig, ax = plt.subplots(figsize=(7.5, 4.3), dpi=110)
        for label, _, _where, state in VARIANTS:
            draw_seeds(ax, curves[label], f"{label}: {state}", color=COLORS[label], scale=100)
        ax.set_xlabel("update (batch of 128 dates)")
        ax.set_ylabel("dev exact match (%)")
        ax.set_ylim(-2, 102)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8, loc="upper left")
        ax.set_title(f"Context placement on the book's date task ({seeds_note(self.context.seeds)})", fontsize=10)
        return save_figure(fig, self.context.figure("curves")), (
            "Dev exact match during training of the four designs; the curves show how soon each leaves the loss "
            "plateau."
        )

    @staticmethod
    def judge(data: dict) -> tuple[list[Finding], list[Phrase]]:
        test = {k: Spread(v) for k, v in data["test_exact_match"].items()}
        at_half = {k: Spread(v) for k, v in data["dev_at_half"].items()}
        margin, half = data["margin"], data["half"]

        def compare(a: str, b: str):
            t, words = comparison(a, test[a], b, test[b], unit="%")
            return t, words + Phrase(
                "; dev exact match at update {}: {:.1f}% against {:.1f}%", half, at_half[a].mean, at_half[b].mean
            )

        t, words = compare("book-input", "book")
        same = alike(t, margin)
        finding = Finding(
            same,
            Phrase("context into the next step's input too, or into the output layer only: ")
            + words
            + equivalence_phrase(t, margin)
            + {
                True: Phrase(": alike within the margin, as the book expects."),
                False: Phrase(": they differ by more than the margin."),
                None: Phrase(": the test cannot decide whether they are alike within the margin."),
            }[same],
        )
        observations = []
        for a, b, what in (
            (
                "luong",
                "bahdanau",
                "attending with the current state (Luong, input feeding) or the previous one (Bahdanau): ",
            ),
            ("luong", "book", "the attentional state with input feeding against the book's output-only context: "),
        ):
            t, words = compare(a, b)
            order = better(t)
            observations.append(
                Phrase(what)
                + words
                + {
                    1: Phrase(f": {a} is better."),
                    -1: Phrase(f": {b} is better."),
                    0: Phrase(": the test cannot tell them apart."),
                    None: Phrase("."),
                }[order]
            )
        return [finding], observations
