"""book-ch8: the book's chapter-8 experiment. Its plain seq2seq, Peeky and attention seq2seq on
its date.txt, test accuracy after every epoch, on the NumPy engine (the book's own run) and
the torch engine side by side, and the attention of one test date as the book draws it."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..viz import pyplot, save_figure
from ..viz.attention import plot_attention
from .base import REPRODUCTIONS, Cell, Evidence, Finding, Reproduction, Result, Table, budget
from .datasets import book_file, book_pairs
from .plots import draw_seeds, seeds_note
from .spread import Spread
from .texts import texts
from .training import Curve, curve, fit_preset
from .wording import Phrase, joined

TEXT = texts("book-ch8")
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
    title, claim, quotes, source = TEXT.title, TEXT.claim, TEXT.quotes, TEXT.source
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
        summary = TEXT.format(
            "summary",
            numpy=" / ".join(f"{s.mean:.2f}%" for s in att["numpy"][:3]),
            torch=" / ".join(f"{s.mean:.2f}%" for s in att["torch"][:3]),
            last=last,
            peeky=by_epoch["peeky", "numpy"][-1].mean,
            plain=by_epoch["baseline", "numpy"][-1].mean,
        )
        return Result(
            summary=summary,
            tables=[table],
            figures=figures,
            setup=TEXT.paragraphs(
                "setup", file=path.name, seeds=", ".join(map(str, ctx.seed_list)), eval_sentences=o.eval_sentences
            ),
            budget=TEXT.format(
                "budget.epochs",
                epochs=o.epochs,
                plural="s" if o.epochs > 1 else "",
                default="" if o.epochs == type(o)().epochs else TEXT.format("budget.default", epochs=type(o)().epochs),
                stopped=TEXT.format("budget.stopped", max_steps=o.max_steps) if o.max_steps else "",
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
            caption=TEXT.format("caption", seeds_note=seeds_note(self.context.seeds)),
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
        return path, TEXT.format("figure.accuracy")

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
            figures.append((path, TEXT.format("figure.attention", engine=engine, question=question.strip())))
        return figures

    @staticmethod
    def judge(data: dict) -> tuple[list[Finding], list[Phrase]]:
        """Core, the book's points: attention is right on most test dates soon (on each engine),
        the plain model and Peeky are still near zero when it is, and Peeky and attention end
        about the same. The NumPy engine's attention against the book's code epoch by epoch is a
        check of the engine, not of the claim: reported."""
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
                TEXT.phrase("numpy.start")
                + joined(TEXT.phrase("numpy.epoch", measured=a, book=b) for a, b in zip(numpy_att, book["attention"]))
                + TEXT.phrase("numpy.close" if close else "numpy.apart", tolerance=tol),
                core=False,
            )
        )
        for engine in ("numpy", "torch"):
            scores = by_epoch["attention", engine]
            reached = next((i + 1 for i, s in enumerate(scores) if s.mean >= data["solved"]), None)
            text = TEXT.phrase("solved.start", engine=engine, accuracy=scores[-1].mean, epochs=epochs)
            text += (
                TEXT.phrase("solved.reached", solved=data["solved"], reached=reached, book=data["book_solved"])
                if reached
                else TEXT.phrase("solved.never", solved=data["solved"], book=data["book_solved"])
            )
            unsolved = reached is None and epochs < data["book_solved"]
            findings.append(
                Finding(
                    None if unsolved else reached is not None and reached <= data["book_solved"],
                    text,
                    reason=TEXT.phrase("final.reason") if unsolved else Phrase(),
                )
            )
        measured = min(len(book["peeky"]), epochs)
        last = measured - 1
        # the book's code measured plain and Peeky for its first epochs only: near zero there on
        # both engines, the NumPy engine also within the tolerance of the book's code
        near = all(
            by_epoch[m, engine][i].mean < data["near_zero"]
            and (engine == "torch" or abs(by_epoch[m, engine][i].mean - book[m][i]) <= tol)
            for m in ("baseline", "peeky")
            for engine in ("numpy", "torch")
            for i in range(measured)
        )
        findings.append(
            Finding(
                near,
                TEXT.phrase(
                    "near_zero.start",
                    epoch=measured,
                    plain=by_epoch["baseline", "numpy"][last].mean,
                    peeky=by_epoch["peeky", "numpy"][last].mean,
                    attention=by_epoch["attention", "numpy"][last].mean,
                    book_plain=book["baseline"][last],
                    book_peeky=book["peeky"][last],
                    book_attention=book["attention"][last],
                    torch_plain=by_epoch["baseline", "torch"][last].mean,
                    torch_peeky=by_epoch["peeky", "torch"][last].mean,
                    torch_attention=by_epoch["attention", "torch"][last].mean,
                )
                + TEXT.phrase(
                    "near_zero.near" if near else "near_zero.not_near", tolerance=tol, near_zero=data["near_zero"]
                )
                + (
                    TEXT.phrase(
                        "near_zero.after",
                        epoch=measured + 1,
                        numpy=by_epoch["peeky", "numpy"][measured].mean,
                        torch=by_epoch["peeky", "torch"][measured].mean,
                        numpy_attention=by_epoch["attention", "numpy"][measured].mean,
                        torch_attention=by_epoch["attention", "torch"][measured].mean,
                    )
                    if epochs > measured
                    else Phrase()
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
                    TEXT.phrase(
                        "final.start", epoch=final, peeky=peeky, attention=attention, gap=abs(attention - peeky)
                    )
                    + TEXT.phrase("final.same" if same else "final.apart", tolerance=tol),
                    evidence=Evidence(
                        (
                            Cell((LABELS["peeky"], "numpy"), f"epoch {final}", peeky),
                            Cell((LABELS["attention"], "numpy"), f"epoch {final}", attention),
                        ),
                        "alike" if same else "apart",
                        tol,
                    ),
                )
            )
        else:
            findings.append(
                Finding(
                    None,
                    TEXT.phrase(
                        "final.unchecked", final=final, epochs=epochs, peeky=by_epoch["peeky", "numpy"][-1].mean
                    ),
                    reason=TEXT.phrase("final.reason"),
                )
            )
        behind = []
        for engine in ("numpy", "torch"):
            for i in range(epochs):
                best = max(by_epoch[m, engine][i].mean for m in MODELS)
                if best > data["climbing"] and by_epoch["attention", engine][i].mean < best:
                    behind.append(TEXT.phrase("ahead.behind", engine=engine, epoch=i + 1))
        observation = TEXT.phrase("ahead.start", climbing=data["climbing"])
        if behind:
            observation += TEXT.phrase("ahead.except") + joined(behind)
        return findings, [observation + TEXT.phrase("ahead.stop")]
