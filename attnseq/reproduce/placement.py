"""placement: where the attention's context goes and which decoder state attends. The book's
section 4.2 question (context into the output layer only, or also into the next step's input)
and Bahdanau's previous state against Luong's current state, on the book's date task."""
from __future__ import annotations

from dataclasses import dataclass

from ..viz import pyplot, save_figure
from .base import REPRODUCTIONS, Finding, Reproduction, Result, Table, budget, verdict_of
from .datasets import BookTaskOptions, counts
from .plots import draw_seeds, seeds_note
from .spread import Spread, alike, contrast, spreads
from .training import compare_variants, curve, first_reaching, step_budget, steps_to, value_at

# label, decoder design, where the context goes, which state attends
VARIANTS = (
    ("book", "book", "output layer only (the book's model)", "current h_t"),
    ("book-input", "{name: book, context_into_input: true}", "output layer and the next step's input (§4.2)",
     "current h_t"),
    ("bahdanau", "bahdanau", "this step's input and the readout", "previous s_{t-1}"),
    ("luong", "{name: luong, input_feeding: true}", "attentional state h~_t: output layer and the next step's "
     "input (input feeding)", "current h_t"),
)
ALIKE = 5.0  # points of test exact match within which two designs count as doing as well
COLORS = {"book": "tab:red", "book-input": "tab:orange", "bahdanau": "tab:green", "luong": "tab:blue"}


@dataclass
class PlacementOptions(BookTaskOptions):
    steps: int = budget(1200)  # updates of every run (batch 128; an epoch of the book's data is 348)
    eval_every: int = 150  # updates between dev evaluations (the curves)
    hidden_size: int = 128  # LSTM units (the book: 256; halved so 4 designs x 3 seeds fit the budget)


@REPRODUCTIONS.register("placement", options=PlacementOptions)
class Placement(Reproduction):
    title = "Where the context goes and which state attends"
    claim = ("The book (§4.2) feeds the context only into the output layer; Bahdanau et al. and GNMT feed it into "
             "the next step's recurrent input. Which is more accurate \"can only be known by trying it\", and since "
             "both designs use the context well the book expects little difference in accuracy. Luong et al. attend "
             "with the current state h_t where Bahdanau et al. use the previous state s_{t-1}: a simpler "
             "computation path (h_t → a_t → c_t → h~_t), made as good with input feeding, which gives the next "
             "step the previous attentional state.")
    source = ("*Deep Learning from Scratch 2*, §8.4.2 (seed document 000); Luong, Pham & Manning 2015, §3.1 and "
              "§3.3 (input feeding); Bahdanau, Cho & Bengio 2014, §3.1 (seed documents 001, 002).")
    default_seeds = 3
    nominal_minutes = 25.0

    def run(self) -> Result:
        o, ctx = self.options, self.context
        data = o.split(ctx.run_dir("data"))
        common = [f"model.hidden_size={o.hidden_size}", *step_budget(o.steps, o.eval_every, o.dev_sentences)]
        variants = [(label, "book-attention", [f"model.decoder={decoder}"]) for label, decoder, _, _ in VARIANTS]
        rows = compare_variants(ctx, variants, data, common)
        curves = {label: [curve(r["run_dir"], "dev_exact_match") for r in rs] for label, rs in rows.items()}
        half = max(o.eval_every, (o.steps // 2) // o.eval_every * o.eval_every)
        at_half = {label: Spread([100 * (value_at(c, half) or 0.0) for c in cs]) for label, cs in curves.items()}
        test = {label: Spread([100 * v for v in spreads(rs, "test_exact_match").values]) for label, rs in rows.items()}
        reach = {label: [first_reaching(c, 0.9) for c in cs] for label, cs in curves.items()}
        table = Table(
            ["design", "context goes into", "attending state", "parameters", "tokens/s",
             f"dev exact match at step {half}", "test exact match", "steps to 90% dev"],
            [[label, where, state, f"{rows[label][0]['parameters']:,}",
              f"{Spread([r['tokens_per_second'] for r in rows[label]]).mean:,.0f}",
              at_half[label].format(unit="%"), test[label].format(unit="%"), steps_to(reach[label])]
             for label, _, where, state in VARIANTS],
            caption=(f"The book's date task after {o.steps} updates ({seeds_note(ctx.seeds)}); test: the best dev "
                     "checkpoint of each run on the book's test dates; 'steps to 90% dev': the first evaluation at "
                     "90% or more (mean over the seeds that got there)."))
        figure = self._figure(curves)
        findings, observations = self._findings(test, at_half, half)
        summary = ("test exact match " + ", ".join(f"{label} {test[label].mean:.1f}%" for label, *_ in VARIANTS)
                   + f" after {o.steps} updates ({ctx.seeds} seed{'s' if ctx.seeds > 1 else ''})")
        return Result(
            verdict=verdict_of(findings, ctx.seeds), summary=summary, tables=[table], figures=[figure],
            findings=findings,
            observations=observations,
            setup=["Data: the book's date.txt split as `attnseq data book` splits it (500 dev dates from its training "
                   f"part, its test dates): {counts(data)}; padding spaces kept, the question reversed.",
                   f"Every design is `configs/book-attention.yaml` (embeddings 16, one LSTM layer, dot attention, the "
                   f"book's initialisation, batch 128, Adam 1e-3, clip 5) with `model.decoder` set and "
                   f"`model.hidden_size={o.hidden_size}` (the book has 256; halved so that 4 designs x 3 seeds fit the "
                   "budget). Designs: `book`, `{name: book, context_into_input: true}`, `bahdanau` (its readout "
                   "tanh(W [s_t; c_t; y_{t-1}])), `{name: luong, input_feeding: true}`.",
                   f"Trained with `attnseq.compare` (its train-and-evaluate of one config): {o.steps} updates, dev "
                   f"exact match on {o.dev_sentences} dates every {o.eval_every} updates, the best dev checkpoint "
                   "scored on the test set; greedy decoding."],
            budget=f"{o.steps} updates per run (about {o.steps / 348:.1f} epochs), 4 designs x {ctx.seeds} seeds",
            longer=("The book's model has 256 units: `attnseq reproduce placement --set hidden_size=256 "
                    "--budget-minutes 60` trains the four designs at that size for 2,880 updates a run."),
            data={"test_exact_match": {k: v.values for k, v in test.items()},
                  "dev_at_half": {k: v.values for k, v in at_half.items()}})

    def _figure(self, curves):
        plt = pyplot()
        fig, ax = plt.subplots(figsize=(7.5, 4.3), dpi=110)
        for label, _, where, state in VARIANTS:
            draw_seeds(ax, curves[label], f"{label}: {state}", color=COLORS[label], scale=100)
        ax.set_xlabel("update (batch of 128 dates)")
        ax.set_ylabel("dev exact match (%)")
        ax.set_ylim(-2, 102)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8, loc="upper left")
        ax.set_title(f"Context placement on the book's date task ({seeds_note(self.context.seeds)})", fontsize=10)
        return save_figure(fig, self.context.figure("curves")), (
            "Dev exact match during training of the four designs; the curves show how soon each leaves the loss "
            "plateau.")

    def _findings(self, test, at_half, half):
        findings = []

        def compare(a: str, b: str) -> tuple[int | None, str]:
            order, text = contrast(a, test[a], b, test[b])
            return order, f"{text}; at step {half}: {at_half[a].mean:.1f}% against {at_half[b].mean:.1f}%"

        wide = (f" The seed ranges overlap, but the means or the seeds lie more than {ALIKE:g} points apart: they "
                "spread too widely to call the two alike (the runs leave the loss plateau at different steps); a "
                "longer budget tells.")
        same = alike(test["book-input"], test["book"], ALIKE)
        _, text = compare("book-input", "book")
        findings.append(Finding(same, "context into the next step's input too, or into the output layer only: " + text
                                + {True: f". Alike (means and seeds within {ALIKE:g} points), as the book expects.",
                                   False: ". The book expected little difference; here one placement is ahead in "
                                          "every seed.", None: "." + wide}[same]))
        order, text = compare("luong", "bahdanau")
        same = alike(test["luong"], test["bahdanau"], ALIKE)
        matched = True if order == 1 else same
        findings.append(Finding(
            matched,
            "attending with the current state (Luong, with input feeding) or the previous one (Bahdanau): " + text
            + (". Luong's simpler path does better here." if order == 1 else
               {True: f". Luong's simpler path does as well as Bahdanau's (means and seeds within {ALIKE:g} points).",
                False: ". Bahdanau's previous-state attention does better here: Luong's simpler path is not as "
                       "good on this task and budget.", None: "." + wide}[same])))
        _, text = compare("luong", "book")
        observations = ["the attentional state with input feeding (Luong) against the book's output-only context "
                        "(both attend with h_t): " + text + "."]
        return findings, observations
