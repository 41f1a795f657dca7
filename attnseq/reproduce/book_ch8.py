"""book-ch8: the book's chapter-8 experiment. Its plain seq2seq, Peeky and attention seq2seq on
its date.txt, test accuracy after every epoch, on the NumPy engine (the book's own run) and
the torch engine side by side, and the attention of one test date as the book draws it."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..viz import pyplot, save_figure
from ..viz.attention import plot_attention
from .base import REPRODUCTIONS, Finding, Quote, Reproduction, Result, Table, budget
from .datasets import book_file, book_pairs
from .plots import draw_seeds, seeds_note
from .spread import Spread
from .training import Curve, curve, fit_preset
from .wording import Phrase, joined

MODELS = ("baseline", "peeky", "attention")  # configs/book-NAME.yaml
LABELS = {"baseline": "plain seq2seq", "peeky": "Peeky", "attention": "attention"}
COLORS = {"baseline": "tab:gray", "peeky": "tab:blue", "attention": "tab:red"}
# the book's code on this machine, test exact match (%) by epoch (../shared/notes/book-reference.md)
BOOK = {"attention": [0.000, 51.760, 99.900], "peeky": [0.020, 0.460], "baseline": [0.000, 0.020]}
TOLERANCE = 3.0  # points of accuracy within which an epoch's score matches the book's
SOLVED = 99.0  # test exact match (%) counted as right on almost every date
BOOK_SOLVED = 3  # the epoch after which the book's attention model is at 99.9%
NEAR_ZERO = 10.0  # test exact match (%) below which a model is "near zero"
CLIMBING = 1.0  # test exact match (%) above which a model counts as learning


@dataclass
class BookCh8Options:
    epochs: int = budget(10)  # epochs of every model (the book's figure runs 10; Peeky's final accuracy needs them)
    max_steps: int = 0  # stop every run after this many updates (0: whole epochs; for quick checks)
    eval_sentences: int = 5000  # test dates scored after every epoch (the book: all 5,000)
    book_dir: str = ""  # the folder of the book's date.txt (default: ../shared/data/book beside the checkout)


@REPRODUCTIONS.register("book-ch8", options=BookCh8Options)
class BookCh8(Reproduction):
    title = "The book's plain, Peeky and attention seq2seq on its date task"
    claim = (
        "The attention seq2seq is right on most test dates soon, the plain seq2seq and Peeky still near zero; "
        "in final accuracy Peeky and attention end about the same."
    )
    quotes = (
        Quote(
            "随着学习的深入，带 Attention 的 seq2seq 变聪明了。实际上，没过多久，它就对大多数问题给出了正确答案",
            "seed document 000 (*Deep Learning from Scratch 2*, chapter 8), §3.1",
            "as learning goes on, the seq2seq with Attention becomes clever: in fact, before long it gives "
            "the right answer to most questions",
        ),
        Quote(
            "在这次的实验中，就最终精度来看，Attention 和 Peeky 取得了差不多的结果。",
            "seed document 000, §3.1",
            "in this experiment, in final accuracy, Attention and Peeky reached about the same result.",
        ),
    )
    source = (
        "*Deep Learning from Scratch 2* (Saito), chapter 8.3 (the accuracy-by-epoch comparison of the three "
        "models, and the attention heatmap of 8.3.3); seed document 000; the book's code as measured here in "
        "`../shared/notes/book-reference.md`."
    )
    default_seeds = 1
    nominal_minutes = 45.0

    def run(self) -> Result:
        o, ctx = self.options, self.context
        path = book_file("date.txt", o.book_dir)
        common = [
            f"train.epochs={o.epochs}",
            f"train.max_steps={o.max_steps}",
            f"train.eval_max_sentences={o.eval_sentences}",
        ]
        runs: dict[tuple[str, str], list[Path]] = {}
        summaries: dict[tuple[str, str], list[dict]] = {}
        for model in MODELS:
            folder = ctx.run_dir(f"numpy-{model}")
            summaries[model, "numpy"] = [fit_preset(ctx, f"book-{model}", folder, path, ["engine=numpy", *common])]
            runs[model, "numpy"] = [folder]
            for seed in ctx.seed_list:
                folder = ctx.run_dir(f"torch-{model}-seed{seed}")
                summaries.setdefault((model, "torch"), []).append(
                    fit_preset(ctx, f"book-{model}", folder, path, common, seed=seed)
                )
                runs.setdefault((model, "torch"), []).append(folder)
        curves = {key: [curve(d, "dev_exact_match", "epoch") for d in dirs] for key, dirs in runs.items()}
        by_epoch = {key: self._by_epoch(cs) for key, cs in curves.items()}
        figures = [self._accuracy_figure(curves)] + self._heatmaps(runs)
        table = self._table(by_epoch, summaries)
        last = max(len(v) for v in by_epoch.values())
        att = {e: by_epoch["attention", e] for e in ("numpy", "torch")}
        summary = (
            "attention's test accuracy after epochs 1-3: NumPy engine "
            + " / ".join(f"{s.mean:.2f}%" for s in att["numpy"][:3])
            + ", torch "
            + " / ".join(f"{s.mean:.2f}%" for s in att["torch"][:3])
            + " (book: 0.00% / 51.76% / 99.90%); after epoch "
            + f"{last}: Peeky {by_epoch['peeky', 'numpy'][-1].mean:.2f}%, plain "
            + f"{by_epoch['baseline', 'numpy'][-1].mean:.2f}% (NumPy engine)"
        )
        return Result(
            summary=summary,
            tables=[table],
            figures=figures,
            setup=[
                f"Data: `{path.name}` from `../shared/data/book/`, read as `attnseq train --data date.txt` reads it "
                "(data.format book): the book's split (45,000 training, 5,000 test dates; seed 1984), the padding "
                "spaces kept, the question reversed; the test dates are scored after every epoch, as the book "
                "does (no model is selected on them: every epoch's score is shown).",
                "Models: `configs/book-baseline.yaml`, `book-peeky.yaml`, `book-attention.yaml` unchanged "
                "(embeddings 16, LSTM 256, batch 128, Adam 1e-3, clip 5, the book's initialisation).",
                "NumPy engine (`--set engine=numpy`): the book's own run, its vocabulary, arrays, fixed-width "
                "answers without an end token and its random stream, so it has one seed. Torch engine: the "
                "same models and data with attnseq's usual targets (start and end tokens) and torch's random "
                "stream, seeds " + ", ".join(map(str, ctx.seed_list)) + ".",
                f"Scores: exact match of the whole answer on the first {o.eval_sentences:,} test dates, greedy.",
            ],
            budget=(
                f"{o.epochs} epoch{'s' if o.epochs > 1 else ''} per model and engine"
                + ("" if o.epochs == type(o)().epochs else f" (the default: {type(o)().epochs})")
                + "; the book's figure has 10"
                + (f", each run stopped after {o.max_steps} updates" if o.max_steps else "")
            ),
            data={
                "by_epoch": {f"{m}/{e}": [s.values for s in v] for (m, e), v in by_epoch.items()},
                "book": BOOK,
                "tolerance": TOLERANCE,
                "solved": SOLVED,
                "book_solved": BOOK_SOLVED,
                "near_zero": NEAR_ZERO,
                "climbing": CLIMBING,
                "final_epoch": 10,
            },
        )

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
                rows.append(
                    [
                        LABELS[model],
                        engine,
                        *[s.format(digits=2, unit="%") for s in scores],
                        *["–"] * (epochs - len(scores)),
                        " / ".join(f"{b:.2f}%" for b in BOOK[model]) if engine == "numpy" else "",
                        f"{seconds.mean:.0f}",
                    ]
                )
        return Table(
            [
                "model",
                "engine",
                *[f"epoch {e}" for e in range(1, epochs + 1)],
                "book (epochs 1, 2, 3)",
                "training s/epoch",
            ],
            rows,
            caption=f"Test exact match after each epoch ({seeds_note(self.context.seeds)} for torch; "
            "the NumPy engine is the book's one random stream).",
        )

    def _accuracy_figure(self, curves) -> tuple[Path, str]:
        from matplotlib.ticker import MaxNLocator

        plt = pyplot()
        fig, axes = plt.subplots(1, 2, figsize=(11, 4.2), dpi=110, sharey=True)
        for ax, engine, name in zip(axes, ("numpy", "torch"), ("NumPy engine (the book's run)", "torch engine")):
            for model in MODELS:
                draw_seeds(ax, curves[model, engine], LABELS[model], color=COLORS[model], scale=100)
                ax.plot(
                    range(1, len(BOOK[model]) + 1),
                    BOOK[model],
                    "x",
                    color=COLORS[model],
                    markersize=9,
                    markeredgewidth=2,
                    label=f"{LABELS[model]}, the book's code",
                )
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
        return path, (
            "Test exact match by epoch of the three models on both engines; crosses: the book's code on "
            "this machine (book-reference.md)."
        )

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
            path = plot_attention(
                r.attention[0],
                r.source_tokens,
                r.output_tokens[0],
                self.context.figure(f"attention-{engine}"),
                title=f"{engine} engine: {question.strip()} → {r.outputs[0]}",
            )
            figures.append(
                (
                    path,
                    f"What the {engine} engine's attention model attends to for the test date "
                    f'"{question.strip()}" (input across in reading order, padding spaces ␣, '
                    "output down).",
                )
            )
        return figures

    @staticmethod
    def judge(data: dict) -> tuple[list[Finding], list[Phrase]]:
        by_epoch = {tuple(k.split("/")): [Spread(v) for v in vs] for k, vs in data["by_epoch"].items()}
        book, tol = data["book"], data["tolerance"]
        epochs = len(by_epoch["attention", "numpy"])
        findings = []
        numpy_att = [s.mean for s in by_epoch["attention", "numpy"]]
        gaps = [abs(a - b) for a, b in zip(numpy_att, book["attention"])]
        close = all(g <= tol for g in gaps)
        findings.append(
            Finding(
                close,
                Phrase("NumPy engine, attention, after each epoch: ")
                + joined(
                    Phrase("{:.2f}% (the book's code {:.2f}%)", a, b) for a, b in zip(numpy_att, book["attention"])
                )
                + (
                    Phrase(": within {:g} points of the book's code every epoch.", tol)
                    if close
                    else Phrase(": more than {:g} points from the book's code in some epoch.", tol)
                ),
            )
        )
        for engine in ("numpy", "torch"):
            scores = by_epoch["attention", engine]
            reached = next((i + 1 for i, s in enumerate(scores) if s.mean >= data["solved"]), None)
            text = Phrase(
                "{} engine: attention is right on {:.2f}% of the test dates after epoch {}",
                engine,
                scores[-1].mean,
                epochs,
            )
            text += (
                Phrase(
                    ", on {:g}% or more from epoch {} (the book's code: from epoch {}).",
                    data["solved"],
                    reached,
                    data["book_solved"],
                )
                if reached
                else Phrase(
                    ", below {:g}% throughout (the book's code: from epoch {}).", data["solved"], data["book_solved"]
                )
            )
            findings.append(
                Finding(
                    None
                    if reached is None and epochs < data["book_solved"]
                    else reached is not None and reached <= data["book_solved"],
                    text,
                )
            )
        measured = min(len(book["peeky"]), epochs)
        last = measured - 1
        near = all(
            abs(by_epoch[m, "numpy"][i].mean - book[m][i]) <= tol and by_epoch[m, "numpy"][i].mean < data["near_zero"]
            for m in ("baseline", "peeky")
            for i in range(measured)
        )
        findings.append(
            Finding(
                near,
                Phrase(
                    "after epoch {} the plain model is at {:.2f}% and Peeky at {:.2f}% against attention's {:.2f}% (NumPy "
                    "engine; the book's code: {:.2f}%, {:.2f}% and {:.2f}%), torch {:.2f}%, {:.2f}% and {:.2f}%",
                    measured,
                    by_epoch["baseline", "numpy"][last].mean,
                    by_epoch["peeky", "numpy"][last].mean,
                    by_epoch["attention", "numpy"][last].mean,
                    book["baseline"][last],
                    book["peeky"][last],
                    book["attention"][last],
                    by_epoch["baseline", "torch"][last].mean,
                    by_epoch["peeky", "torch"][last].mean,
                    by_epoch["attention", "torch"][last].mean,
                )
                + (
                    Phrase(": near zero, as in the book.")
                    if near
                    else Phrase(
                        ": more than {:g} points from the book's code or above {:g}% in some epoch it measured.",
                        tol,
                        data["near_zero"],
                    )
                ),
            )
        )
        final = data["final_epoch"]
        if epochs >= final:
            peeky, attention = (by_epoch[m, "numpy"][final - 1].mean for m in ("peeky", "attention"))
            same = abs(attention - peeky) <= tol
            findings.append(
                Finding(
                    same,
                    Phrase(
                        "after epoch {} Peeky is right on {:.2f}% of the test dates and attention on {:.2f}%, {:.2f} points "
                        "apart (NumPy engine)",
                        final,
                        peeky,
                        attention,
                        abs(attention - peeky),
                    )
                    + (
                        Phrase(": within {:g}, about the same.", tol)
                        if same
                        else Phrase(": more than {:g}, not the same.", tol)
                    ),
                )
            )
        else:
            findings.append(
                Finding(
                    None,
                    Phrase(
                        "Peeky against attention in final accuracy (epoch {}) is not checked: this budget trains {} epochs "
                        "(Peeky at {:.2f}% after epoch {}).",
                        final,
                        epochs,
                        by_epoch["peeky", "numpy"][-1].mean,
                        epochs,
                    ),
                )
            )
        behind = []
        for engine in ("numpy", "torch"):
            for i in range(epochs):
                best = max(by_epoch[m, engine][i].mean for m in MODELS)
                if best > data["climbing"] and by_epoch["attention", engine][i].mean < best:
                    behind.append(Phrase("{} epoch {}", engine, i + 1))
        observation = Phrase(
            "from the first epoch in which any model is right on more than {:g}% of the test dates, "
            "attention is ahead of Peeky and the plain model after every epoch, on both engines",
            data["climbing"],
        )
        return findings, [observation + (Phrase(".") if not behind else ", except after " + joined(behind) + ".")]
