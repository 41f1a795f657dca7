"""nadaraya-watson: attention as kernel regression. Average pooling against a Gaussian kernel of
fixed and of learned width, on the kernel-regression chapter's noisy function (held-out MSE,
the fits, the attention weights)."""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..viz import pyplot, save_figure
from .base import REPRODUCTIONS, Finding, Quote, Reproduction, Result, Table, budget
from .significance import better
from .spread import Spread, comparison
from .wording import Phrase


@dataclass
class NadarayaWatsonOptions:
    steps: int = budget(200)  # Adam updates of the learned bandwidth (leave-one-out squared error)
    n_train: int = 50  # training points (keys and values)
    noise: float = 0.5  # sd of the targets' Gaussian noise
    bandwidth: float = 1.0  # the fixed kernel's width w (the chapter's kernel exp(-(x - x_i)^2 / 2))
    lr: float = 0.05  # Adam's rate for log w


METHODS = ("average pooling", "fixed kernel", "learned kernel")


@REPRODUCTIONS.register("nadaraya-watson", options=NadarayaWatsonOptions)
class NadarayaWatsonReproduction(Reproduction):
    title = "Attention as kernel regression: average pooling, a fixed and a learned kernel"
    claim = (
        "Predicting y at a query x by the mean of the training targets is the baseline; weighting each target "
        "by a kernel of x and x_i, normalised (Nadaraya-Watson kernel regression: attention with queries x, keys "
        "x_i, values y_i), does better."
    )
    quotes = (
        Quote(
            "Baseline 就是求均值, $$\\frac{1}{m} \\sum_{i=1}^{m} y_i$$ 当然更好的方案(Watson, Nadaraya, 1964)是根据不同的"
            "输入$x_i$给与$y_i$不同的权重, $$y = \\sum_{i=1}^{m} \\alpha(x, x_i) y_i $$",
            "seed document 002, §1",
            "the baseline is the mean of the y_i; a better scheme (Watson, Nadaraya, 1964) gives each y_i its "
            "own weight according to the input x_i, y = sum_i alpha(x, x_i) y_i.",
        ),
    )
    source = (
        "Nadaraya (1964), Watson (1964), as taught in the kernel-regression chapter of *Dive into Deep "
        "Learning* (attention pooling by similarity: y = 2 sin x + x^0.8 + noise, 50 training points, "
        "the fits and the query-by-key weight heatmaps) and in seed document 002 (attention as weighted "
        "pooling). attnseq: `attnseq/nn/attention/kernel.py`, `examples/nadaraya_watson.py`."
    )
    default_seeds = 3
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
            ["method", "bandwidth w", "held-out MSE", "weight entropy (nats per query)"],
            rows,
            caption=f"Held-out mean squared error against the noiseless function on 50 test points "
            f"(mean ± sd over {ctx.seeds} data draws, lowest–highest); the entropy of a "
            "query's attention weights is lower when they are sharper.",
        )
        figures = self._figures(*shown)
        summary = (
            f"held-out MSE: average pooling {spread['average pooling'].mean:.3f}, fixed kernel "
            f"{spread['fixed kernel'].mean:.3f}, learned kernel {spread['learned kernel'].mean:.3f} "
            f"(w = {Spread(widths['learned kernel']).mean:.2f}), {ctx.seeds} data draws"
        )
        return Result(
            summary=summary,
            tables=[table],
            figures=figures,
            setup=[
                f"{o.n_train} training points x ~ U[0, 5) sorted, y = 2 sin x + x^0.8 + N(0, {o.noise}^2); "
                "test queries 0, 0.1, ..., 4.9 scored against the noiseless function "
                "(`attnseq.nn.attention.kernel.chapter_data`, seeds 1, 2, ...).",
                "Average pooling: f(x) = mean(y_i). Fixed kernel: f(x) = Σ softmax_i(-(x - x_i)^2 / 2w^2) y_i "
                f"with w = {o.bandwidth:g}. Learned kernel: the same with w trained from w = {o.bandwidth:g} by "
                f"{o.steps} Adam steps (rate {o.lr:g}) on the leave-one-out squared error of the training "
                "points (each point predicted from the others; without that w would shrink to memorise "
                "the noise).",
                "The chapter learns its width by SGD on the same leave-one-out loss; its kernel is written "
                "exp(-((x - x_i) w)^2 / 2), so its w is attnseq's 1/w.",
            ],
            budget=f"{o.steps} Adam steps for the learned width; seconds on any CPU",
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
        return [
            (fit, "The three fits of data draw 1: average pooling is a flat line, the kernels follow the function."),
            (
                heat,
                "Attention weights of data draw 1, fixed and learned width: each query attends to the "
                "training inputs near it (the diagonal band); a narrower kernel gives a sharper band.",
            ),
        ]

    @staticmethod
    def judge(data: dict) -> tuple[list[Finding], list[Phrase]]:
        mse = {m: Spread(v) for m, v in data["mse"].items()}
        findings = []
        for kernel in ("fixed kernel", "learned kernel"):
            t, words = comparison("average pooling", mse["average pooling"], kernel, mse[kernel], unit="", digits=3)
            order = better(t)  # +1: average pooling's error is the higher
            findings.append(
                Finding(
                    None if not order else order > 0,
                    Phrase("held-out MSE: ")
                    + words
                    + {
                        1: Phrase(": the kernel fits better than the mean."),
                        -1: Phrase(": the mean fits better."),
                        0: Phrase(": the test cannot tell them apart."),
                        None: Phrase("."),
                    }[order],
                )
            )
        entropy = {m: Spread(v) for m, v in data["entropy"].items()}
        sharper = sum(x < f for x, f in zip(data["entropy"]["learned kernel"], data["entropy"]["fixed kernel"]))
        width = Spread(data["bandwidth"]["learned kernel"])
        observations = [
            Phrase(
                "learning the width gave w = {:.3f} (from {:g}); the weights are sharper than the fixed "
                "kernel's in {} of {} draws (entropy {:.2f} nats against {:.2f}).",
                width.mean,
                data["initial_bandwidth"],
                sharper,
                len(width.values),
                entropy["learned kernel"].mean,
                entropy["fixed kernel"].mean,
            )
        ]
        t, words = comparison(
            "learned kernel", mse["learned kernel"], "fixed kernel", mse["fixed kernel"], unit="", digits=3
        )
        observations.append(Phrase("held-out MSE, learned against fixed kernel: ") + words + ".")
        return findings, observations
