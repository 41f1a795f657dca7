"""nadaraya-watson: attention as kernel regression. Average pooling against a Gaussian kernel of
fixed and of learned width, on the kernel-regression chapter's noisy function (held-out MSE,
the fits, the attention weights)."""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..viz import pyplot, save_figure
from .base import REPRODUCTIONS, Finding, Reproduction, Result, Table, budget
from .significance import better
from .spread import Spread, evidence_of, paired_comparison
from .texts import texts
from .wording import Phrase


@dataclass
class NadarayaWatsonOptions:
    steps: int = budget(200)  # Adam updates of the learned bandwidth (leave-one-out squared error)
    n_train: int = 50  # training points (keys and values)
    noise: float = 0.5  # sd of the targets' Gaussian noise
    bandwidth: float = 1.0  # the fixed kernel's width w (the chapter's kernel exp(-(x - x_i)^2 / 2))
    lr: float = 0.05  # Adam's rate for log w


TEXT = texts("nadaraya-watson")
MSE = "held-out MSE"  # the table's column
METHODS = ("average pooling", "fixed kernel", "learned kernel")


@REPRODUCTIONS.register("nadaraya-watson", options=NadarayaWatsonOptions)
class NadarayaWatsonReproduction(Reproduction):
    title, claim, quotes, source = TEXT.title, TEXT.claim, TEXT.quotes, TEXT.source
    default_seeds = 5
    nominal_minutes = 0.2

    def run(self) -> Result:
        import torch

        from ..nn.attention.kernel import NadarayaWatson, average_pooling, chapter_data

        o, ctx = self.options, self.context
        torch.set_num_threads(ctx.threads)
        errors = {m: [] for m in METHODS}
        widths, entropy = {"fixed kernel": [], "learned kernel": []}, {"fixed kernel": [], "learned kernel": []}
        shown = None
        for seed in ctx.seed_list:
            x_train, y_train, x_test, y_test = chapter_data(o.n_train, o.noise, seed=seed)
            models = {
                "fixed kernel": NadarayaWatson(bandwidth=o.bandwidth).fit(x_train, y_train),
                "learned kernel": NadarayaWatson(bandwidth=o.bandwidth, learned=True).fit(
                    x_train, y_train, steps=o.steps, lr=o.lr
                ),
            }
            with torch.no_grad():
                predictions = {
                    "average pooling": average_pooling(y_train, len(x_test)),
                    **{name: m(x_test) for name, m in models.items()},
                }
                weights = {name: m.weights(x_test) for name, m in models.items()}  # (Q, N)
            for name, p in predictions.items():
                errors[name].append(float(((p - y_test) ** 2).mean()))
            for name, m in models.items():
                widths[name].append(m.bandwidth)
                w = weights[name].clamp_min(1e-12)
                entropy[name].append(float(-(w * w.log()).sum(1).mean()))  # nats per query
            if shown is None:
                shown = (x_train, y_train, x_test, y_test, predictions, weights, models)

        spread = {m: Spread(v) for m, v in errors.items()}
        shown_width = {
            "average pooling": "∞ (every weight 1/N)",
            "fixed kernel": f"{o.bandwidth:g} (fixed)",
            "learned kernel": Spread(widths["learned kernel"]).format(digits=3),
        }
        rows = [
            [
                m,
                shown_width[m],
                spread[m].format(digits=3),
                f"{math.log(o.n_train):.2f}" if m == "average pooling" else Spread(entropy[m]).format(digits=2),
            ]
            for m in METHODS
        ]
        table = Table(
            ["method", "bandwidth w", MSE, "weight entropy (nats per query)"],
            rows,
            caption=TEXT.format("caption", seeds=ctx.seeds),
        )
        figures = self._figures(*shown)
        summary = TEXT.format(
            "summary",
            average=spread["average pooling"].mean,
            fixed=spread["fixed kernel"].mean,
            learned=spread["learned kernel"].mean,
            width=Spread(widths["learned kernel"]).mean,
            seeds=ctx.seeds,
        )
        return Result(
            summary=summary,
            tables=[table],
            figures=figures,
            setup=TEXT.paragraphs(
                "setup", n_train=o.n_train, noise=o.noise, bandwidth=o.bandwidth, steps=o.steps, lr=o.lr
            ),
            budget=TEXT.format("budget", steps=o.steps),
            data={"mse": errors, "bandwidth": widths, "entropy": entropy, "initial_bandwidth": o.bandwidth},
        )

    def _figures(self, x_train, y_train, x_test, y_test, predictions, weights, models):
        ctx = self.context
        plt = pyplot()
        fig, ax = plt.subplots(figsize=(7.2, 4.2), dpi=110)
        ax.plot(x_test, y_test, "k-", linewidth=2, label="truth (noiseless)")
        styles = {"average pooling": ":", "fixed kernel": "--", "learned kernel": "-"}
        for name, p in predictions.items():
            width = f" (w = {models[name].bandwidth:.2f})" if name in models else ""
            ax.plot(x_test, p, styles[name], label=name + width)
        ax.plot(x_train, y_train, "o", alpha=0.45, markersize=4, label="training points")
        ax.set_xlabel("x (query)")
        ax.set_ylabel("y")
        ax.set_title("Nadaraya-Watson kernel regression: the fits (data draw 1)")
        ax.legend(fontsize=8)
        fit = save_figure(fig, ctx.figure("fit"))

        fig, axes = plt.subplots(1, 2, figsize=(9.5, 4.2), dpi=110, sharey=True)
        for ax, name in zip(axes, ("fixed kernel", "learned kernel")):
            image = ax.imshow(
                weights[name].numpy(),
                cmap="Reds",
                aspect="auto",
                vmin=0,
                extent=(0, len(x_train), float(x_test[-1]), float(x_test[0])),
            )
            ax.set_title(f"{name}, w = {models[name].bandwidth:.2f}", fontsize=10)
            ax.set_xlabel("training input (sorted by x_i)")
            fig.colorbar(image, ax=ax, fraction=0.046, pad=0.03)
        axes[0].set_ylabel("query x")
        fig.suptitle(
            "Attention weights softmax(-(x - x_i)² / 2w²): queries down, keys across (data draw 1)", fontsize=10
        )
        heat = save_figure(fig, ctx.figure("weights"))
        return [(fit, TEXT.format("figure.fit")), (heat, TEXT.format("figure.weights"))]

    @staticmethod
    def judge(data: dict) -> tuple[list[Finding], list[Phrase]]:
        """Core, both: each kernel's held-out error is below average pooling's, by the paired t
        test over the data draws (every method fits the same draw: the pairs)."""
        mse = {m: Spread(v) for m, v in data["mse"].items()}
        findings = []
        for kernel in ("fixed kernel", "learned kernel"):
            t, words = paired_comparison(
                "average pooling", mse["average pooling"].values, kernel, mse[kernel].values, "", 3, "data draw"
            )
            order = better(t)  # +1: average pooling's error is the higher
            decided = None if not order else order > 0
            findings.append(
                Finding(
                    decided,
                    TEXT.phrase("finding.mse")
                    + words
                    + TEXT.phrase(
                        "finding." + {1: "kernel_better", -1: "mean_better", 0: "cannot_tell", None: "untested"}[order]
                    ),
                    reason=Phrase() if decided is not None else TEXT.phrase("finding.reason"),
                    evidence=evidence_of(
                        [(("average pooling",), MSE), ((kernel,), MSE)],
                        (mse["average pooling"].mean, mse[kernel].mean),
                        {True: "above", False: "below", None: ""}[decided],
                    ),
                )
            )
        entropy = {m: Spread(v) for m, v in data["entropy"].items()}
        sharper = sum(x < f for x, f in zip(data["entropy"]["learned kernel"], data["entropy"]["fixed kernel"]))
        width = Spread(data["bandwidth"]["learned kernel"])
        observations = [
            TEXT.phrase(
                "width",
                width=width.mean,
                initial=data["initial_bandwidth"],
                sharper=sharper,
                draws=len(width.values),
                learned=entropy["learned kernel"].mean,
                fixed=entropy["fixed kernel"].mean,
            )
        ]
        t, words = paired_comparison(
            "learned kernel",
            mse["learned kernel"].values,
            "fixed kernel",
            mse["fixed kernel"].values,
            "",
            3,
            "data draw",
        )
        observations.append(TEXT.phrase("learned_fixed") + words + TEXT.phrase("finding.untested"))
        return findings, observations
