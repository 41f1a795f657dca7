"""book-ch8: the book's chapter-8 experiment. Its plain seq2seq, Peeky and attention seq2seq on
its date.txt, test accuracy after every epoch, on the NumPy engine (the book's own run) and
the torch engine side by side, and the attention of one test date as the book draws it."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..viz import pyplot, save_figure
from ..viz.attention import plot_attention
from .base import REPRODUCTIONS, Finding, Reproduction, Result, Table, budget, verdict_of
from .datasets import book_file, book_pairs
from .plots import draw_seeds, seeds_note
from .spread import Spread
from .training import Curve, curve, fit_preset

MODELS = ("baseline", "peeky", "attention")  # configs/book-NAME.yaml
LABELS = {"baseline": "plain seq2seq", "peeky": "Peeky", "attention": "attention"}
COLORS = {"baseline": "tab:gray", "peeky": "tab:blue", "attention": "tab:red"}
# the book's code on this machine, test exact match (%) by epoch (../shared/notes/book-reference.md)
BOOK = {"attention": [0.000, 51.760, 99.900], "peeky": [0.020, 0.460], "baseline": [0.000, 0.020]}
TOLERANCE = 3.0  # points of accuracy within which an epoch's score matches the book's


@dataclass
class BookCh8Options:
    epochs: int = budget(4)  # epochs of every model (the book's figure runs 10)
    max_steps: int = 0  # stop every run after this many updates (0: whole epochs; for quick checks)
    eval_sentences: int = 5000  # test dates scored after every epoch (the book: all 5,000)
    book_dir: str = ""  # the folder of the book's date.txt (default: ../shared/data/book beside the checkout)


@REPRODUCTIONS.register("book-ch8", options=BookCh8Options)
class BookCh8(Reproduction):
    title = "The book's plain, Peeky and attention seq2seq on its date task"
    claim = ("On the book's date-format task (45,000 training dates, its 5,000 test dates scored after every "
             "epoch) the attention seq2seq is right on almost every test date after 2-3 epochs (the book's code, "
             "measured on this machine: 0.00% / 51.76% / 99.90% exact match after epochs 1-3) while the plain "
             "seq2seq and Peeky are still near zero (0.02% and 0.46% after epoch 2); over 10 epochs Peeky "
             "catches up in final accuracy, attention having learned fastest. Its heatmap aligns the output's "
             "year, month and day with the matching characters of the input (\"AUGUST\" with 08).")
    source = ("*Deep Learning from Scratch 2* (Saito), chapter 8.3 (the accuracy-by-epoch comparison of the three "
              "models, and the attention heatmap of 8.3.3); seed document 000; the book's code as measured here in "
              "`../shared/notes/book-reference.md`.")
    default_seeds = 1
    nominal_minutes = 25.0

    def run(self) -> Result:
        o, ctx = self.options, self.context
        path = book_file("date.txt", o.book_dir)
        common = [f"train.epochs={o.epochs}", f"train.max_steps={o.max_steps}",
                  f"train.eval_max_sentences={o.eval_sentences}"]
        runs: dict[tuple[str, str], list[Path]] = {}
        summaries: dict[tuple[str, str], list[dict]] = {}
        for model in MODELS:
            folder = ctx.run_dir(f"numpy-{model}")
            summaries[model, "numpy"] = [fit_preset(ctx, f"book-{model}", folder, path, ["engine=numpy", *common])]
            runs[model, "numpy"] = [folder]
            for seed in ctx.seed_list:
                folder = ctx.run_dir(f"torch-{model}-seed{seed}")
                summaries.setdefault((model, "torch"), []).append(
                    fit_preset(ctx, f"book-{model}", folder, path, common, seed=seed))
                runs.setdefault((model, "torch"), []).append(folder)
        curves = {key: [curve(d, "dev_exact_match", "epoch") for d in dirs] for key, dirs in runs.items()}
        by_epoch = {key: self._by_epoch(cs) for key, cs in curves.items()}
        figures = [self._accuracy_figure(curves)] + self._heatmaps(runs)
        table = self._table(by_epoch, summaries)
        findings, verdict = self._findings(by_epoch)
        last = max(len(v) for v in by_epoch.values())
        att = {e: by_epoch["attention", e] for e in ("numpy", "torch")}
        summary = ("attention's test accuracy after epochs 1-3: NumPy engine "
                   + " / ".join(f"{s.mean:.2f}%" for s in att["numpy"][:3])
                   + ", torch " + " / ".join(f"{s.mean:.2f}%" for s in att["torch"][:3])
                   + " (book: 0.00% / 51.76% / 99.90%); after epoch "
                   + f"{last}: Peeky {by_epoch['peeky', 'numpy'][-1].mean:.2f}%, plain "
                   + f"{by_epoch['baseline', 'numpy'][-1].mean:.2f}% (NumPy engine)")
        return Result(
            verdict=verdict, summary=summary, tables=[table], figures=figures, findings=findings,
            setup=[f"Data: `{path.name}` from `../shared/data/book/`, read as `attnseq train --data date.txt` reads it "
                   "(data.format book): the book's split (45,000 training, 5,000 test dates; seed 1984), the padding "
                   "spaces kept, the question reversed; the test dates are scored after every epoch, as the book "
                   "does (no model is selected on them: every epoch's score is shown).",
                   "Models: `configs/book-baseline.yaml`, `book-peeky.yaml`, `book-attention.yaml` unchanged "
                   "(embeddings 16, LSTM 256, batch 128, Adam 1e-3, clip 5, the book's initialisation).",
                   "NumPy engine (`--set engine=numpy`): the book's own run, its vocabulary, arrays, fixed-width "
                   "answers without an end token and its random stream, so it has one seed. Torch engine: the "
                   "same models and data with attnseq's usual targets (start and end tokens) and torch's random "
                   "stream, seeds " + ", ".join(map(str, ctx.seed_list)) + ".",
                   f"Scores: exact match of the whole answer on the first {o.eval_sentences:,} test dates, greedy."],
            budget=(f"{o.epochs} epoch{'s' if o.epochs > 1 else ''} per model and engine (the default: 4; the book's "
                    "figure has 10)"
                    + (f", each run stopped after {o.max_steps} updates" if o.max_steps else "")),
            longer=("The book trains 10 epochs; Peeky catching up with attention shows only there: "
                    "`attnseq reproduce book-ch8 --budget-minutes 63` trains 10 epochs of each model on both "
                    "engines."),
            data={f"{m}/{e}": [s.values for s in v] for (m, e), v in by_epoch.items()})

    @staticmethod
    def _by_epoch(curves: list[Curve]) -> list[Spread]:
        """The test accuracy (%) after epoch 1, 2, ... over the seeds (epochs all seeds have)."""
        epochs = min(len(c.y) for c in curves)
        return [Spread([100 * c.y[i] for c in curves]) for i in range(epochs)]

    def _table(self, by_epoch, summaries) -> Table:
        epochs = max(len(v) for v in by_epoch.values())
        rows = []
        for model in MODELS:
            for engine in ("numpy", "torch"):
                scores = by_epoch[model, engine]
                seconds = Spread([s["train_seconds"] / max(s["epoch"], 1e-9) for s in summaries[model, engine]])
                rows.append([LABELS[model], engine, *[s.format(digits=2, unit="%") for s in scores],
                             *["–"] * (epochs - len(scores)),
                             " / ".join(f"{b:.2f}%" for b in BOOK[model]) if engine == "numpy" else "",
                             f"{seconds.mean:.0f}"])
        return Table(["model", "engine", *[f"epoch {e}" for e in range(1, epochs + 1)], "book (epochs 1, 2, 3)",
                      "training s/epoch"], rows,
                     caption=f"Test exact match after each epoch ({seeds_note(self.context.seeds)} for torch; "
                             "the NumPy engine is the book's one random stream).")

    def _accuracy_figure(self, curves) -> tuple[Path, str]:
        from matplotlib.ticker import MaxNLocator

        plt = pyplot()
        fig, axes = plt.subplots(1, 2, figsize=(11, 4.2), dpi=110, sharey=True)
        for ax, engine, name in zip(axes, ("numpy", "torch"), ("NumPy engine (the book's run)", "torch engine")):
            for model in MODELS:
                draw_seeds(ax, curves[model, engine], LABELS[model], color=COLORS[model], scale=100)
                ax.plot(range(1, len(BOOK[model]) + 1), BOOK[model], "x", color=COLORS[model], markersize=9,
                        markeredgewidth=2, label=f"{LABELS[model]}, the book's code")
            seeds = 1 if engine == "numpy" else self.context.seeds
            ax.set_title(f"{name}, {seeds_note(seeds)}", fontsize=10)
            ax.set_xlabel("epoch")
            ax.xaxis.set_major_locator(MaxNLocator(integer=True))
            ax.set_ylim(-2, 102)
            ax.grid(alpha=0.3)
        axes[0].set_ylabel("test exact match (%)")
        axes[1].legend(fontsize=8, loc="center right")
        fig.suptitle("The book's date task: test accuracy after each epoch", fontsize=11)
        path = save_figure(fig, self.context.figure("accuracy"))
        return path, ("Test exact match by epoch of the three models on both engines; crosses: the book's code on "
                      "this machine (book-reference.md).")

    def _heatmaps(self, runs) -> list[tuple[Path, str]]:
        """The attention of one test date as the book draws it (input across, output down), from
        the attention model of each engine (seed 1 for torch)."""
        from ..api import load

        _, test = book_pairs("date.txt", self.options.book_dir)
        question = next((q for q, _ in test if len(q.split()) >= 3 and any(c.isalpha() for c in q)), test[0][0])
        figures = []
        for engine in ("numpy", "torch"):
            translator = load(runs["attention", engine][0])
            r = translator.search([question], keep_attention=True)[0]
            path = plot_attention(r.attention[0], r.source_tokens, r.output_tokens[0],
                                  self.context.figure(f"attention-{engine}"),
                                  title=f"{engine} engine: {question.strip()} → {r.outputs[0]}")
            figures.append((path, f"What the {engine} engine's attention model attends to for the test date "
                                  f"\"{question.strip()}\" (input across in reading order, padding spaces ␣, "
                                  "output down)."))
        return figures

    def _findings(self, by_epoch):
        epochs = len(by_epoch["attention", "numpy"])
        findings = []
        numpy_att = [s.mean for s in by_epoch["attention", "numpy"]]
        compared = min(3, epochs)
        gaps = [abs(a - b) for a, b in zip(numpy_att, BOOK["attention"])]
        findings.append(Finding(
            all(g <= TOLERANCE for g in gaps),
            "NumPy engine, attention, epochs 1-" + f"{compared}: "
            + ", ".join(f"{a:.2f}% (book {b:.2f}%)" for a, b in zip(numpy_att, BOOK["attention"]))
            + (f": within {TOLERANCE:g} points of the book's code every epoch (the engine does the book's arithmetic "
               "in fewer, larger products, so it matches within tolerance, not bit for bit)."
               if all(g <= TOLERANCE for g in gaps) else
               f": more than {TOLERANCE:g} points from the book's code in some epoch. Epoch 2 falls in the middle "
               "of the climb from the loss plateau, where small numerical differences (BLAS threads, the order "
               "of sums) move the score most.")))
        for engine in ("numpy", "torch"):
            scores = by_epoch["attention", engine]
            reached = next((i + 1 for i, s in enumerate(scores) if s.mean >= 99.0), None)
            text = (f"{engine} engine: attention is right on {scores[-1].format(digits=2, unit='%')} of the test "
                    f"dates after epoch {epochs}")
            text += f", on 99% or more from epoch {reached}" if reached else ", below 99% throughout"
            if reached and reached <= 3:
                text += " (the book: from epoch 3)."
            elif epochs < 3:
                text += "; this budget stops before epoch 3, where the book reaches 99.9%."
            elif engine == "torch":
                text += ("; the book reaches 99.9% after epoch 3. Torch's random stream and start/end tokens make "
                         "a different run, whose climb from the loss plateau can come later.")
            else:
                text += "; the book reaches 99.9% after epoch 3."
            findings.append(Finding(reached is not None and reached <= 3, text))
        # the book measured the plain model and Peeky for epochs 1-2 only: they are compared there
        measured = min(len(BOOK["peeky"]), epochs)
        last = measured - 1
        near = all(abs(by_epoch[m, "numpy"][i].mean - BOOK[m][i]) <= TOLERANCE and by_epoch[m, "numpy"][i].mean < 10.0
                   for m in ("baseline", "peeky") for i in range(measured))
        findings.append(Finding(
            near,
            f"the plain seq2seq and Peeky are still near zero while attention climbs: after epoch {measured}, plain "
            f"{by_epoch['baseline', 'numpy'][last].mean:.2f}% and Peeky {by_epoch['peeky', 'numpy'][last].mean:.2f}% "
            f"against attention's {by_epoch['attention', 'numpy'][last].mean:.2f}% (NumPy engine; the book's code: "
            f"{BOOK['baseline'][last]:.2f}% and {BOOK['peeky'][last]:.2f}% against {BOOK['attention'][last]:.2f}%), "
            f"{by_epoch['baseline', 'torch'][last].mean:.2f}% and "
            f"{by_epoch['peeky', 'torch'][last].mean:.2f}% against {by_epoch['attention', 'torch'][last].mean:.2f}% "
            "(torch)" + ("." if near else f"; the NumPy engine is more than {TOLERANCE:g} points from the book's "
                         "code or above 10% in some epoch the book measured.")))
        # attention learns fastest: ahead of both others after every epoch in which any model is above 1%
        behind = []
        for engine in ("numpy", "torch"):
            for i in range(epochs):
                best = max(by_epoch[m, engine][i].mean for m in MODELS)
                if best > 1.0 and by_epoch["attention", engine][i].mean < best:
                    behind.append(f"{engine} epoch {i + 1}")
        findings.append(Finding(
            not behind,
            "attention learns fastest: from the first epoch in which any model is right on more than 1% of the "
            "test dates, attention is ahead of Peeky and the plain model after every epoch, on both engines"
            + ("." if not behind else f", except after {', '.join(behind)}.")))
        if epochs >= 10:
            gap = by_epoch["attention", "numpy"][-1].mean - by_epoch["peeky", "numpy"][-1].mean
            findings.append(Finding(abs(gap) <= 5.0, f"after epoch {epochs} Peeky is {gap:.2f} points below attention "
                                                     "(the book: about the same final accuracy)."))
        else:
            findings.append(Finding(None, f"Peeky catching up by epoch 10 is not checked: this budget trains {epochs} "
                                          f"epochs (Peeky at {by_epoch['peeky', 'numpy'][-1].mean:.2f}% after epoch "
                                          f"{epochs} on the NumPy engine)."))
        return findings, verdict_of(findings)
