"""nadaraya-watson: attention as kernel regression. Average pooling against a Gaussian kernel of
fixed and of learned width, on the kernel-regression chapter's noisy function (held-out MSE,
the fits, the attention weights)."""
from __future__ import annotations

import math
from dataclasses import dataclass

from ..viz import pyplot, save_figure
from .base import REPRODUCTIONS, Finding, Reproduction, Result, Table, budget, verdict_of
from .spread import Spread, separated


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
    claim = ("Predicting y at a query x by the plain average of the training targets (average pooling) "
             "ignores x and fits badly; weighting each target y_i by a Gaussian kernel of x - x_i, normalised "
             "by a softmax (Nadaraya-Watson kernel regression: attention with queries x, keys x_i, values "
             "y_i), follows the function; learning the kernel's width makes the attention weights sharper "
             "(the chapter's parametric attention pooling).")
    source = ("Nadaraya (1964), Watson (1964), as taught in the kernel-regression chapter of *Dive into Deep "
              "Learning* (attention pooling by similarity: y = 2 sin x + x^0.8 + noise, 50 training points, "
              "the fits and the query-by-key weight heatmaps) and in seed document 002 (attention as weighted "
              "pooling). attnseq: `attnseq/nn/attention/kernel.py`, `examples/nadaraya_watson.py`.")
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
            models = {"fixed kernel": NadarayaWatson(bandwidth=o.bandwidth).fit(x_train, y_train),
                      "learned kernel": NadarayaWatson(bandwidth=o.bandwidth, learned=True).fit(
                          x_train, y_train, steps=o.steps, lr=o.lr)}
            with torch.no_grad():
                predictions = {"average pooling": average_pooling(y_train, len(x_test)),
                               **{name: m(x_test) for name, m in models.items()}}
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
        shown_width = {"average pooling": "∞ (every weight 1/N)", "fixed kernel": f"{o.bandwidth:g} (fixed)",
                       "learned kernel": Spread(widths["learned kernel"]).format(digits=3)}
        rows = [[m, shown_width[m],
                 spread[m].format(digits=3),
                 f"{math.log(o.n_train):.2f}" if m == "average pooling" else
                 Spread(entropy[m]).format(digits=2)] for m in METHODS]
        table = Table(["method", "bandwidth w", "held-out MSE", "weight entropy (nats per query)"], rows,
                      caption=f"Held-out mean squared error against the noiseless function on 50 test points "
                              f"(mean ± sd over {ctx.seeds} data draws, lowest–highest); the entropy of a "
                              "query's attention weights is lower when they are sharper.")
        figures = self._figures(*shown)
        findings, observations = self._findings(spread, widths, entropy)
        summary = (f"held-out MSE: average pooling {spread['average pooling'].mean:.3f}, fixed kernel "
                   f"{spread['fixed kernel'].mean:.3f}, learned kernel {spread['learned kernel'].mean:.3f} "
                   f"(w = {Spread(widths['learned kernel']).mean:.2f}), {ctx.seeds} data draws")
        return Result(
            verdict=verdict_of(findings, ctx.seeds), summary=summary, tables=[table], figures=figures,
            findings=findings,
            observations=observations,
            setup=[f"{o.n_train} training points x ~ U[0, 5) sorted, y = 2 sin x + x^0.8 + N(0, {o.noise}^2); "
                   "test queries 0, 0.1, ..., 4.9 scored against the noiseless function "
                   "(`attnseq.nn.attention.kernel.chapter_data`, seeds 1, 2, ...).",
                   "Average pooling: f(x) = mean(y_i). Fixed kernel: f(x) = Σ softmax_i(-(x - x_i)^2 / 2w^2) y_i "
                   f"with w = {o.bandwidth:g}. Learned kernel: the same with w trained from w = {o.bandwidth:g} by "
                   f"{o.steps} Adam steps (rate {o.lr:g}) on the leave-one-out squared error of the training "
                   "points (each point predicted from the others; without that w would shrink to memorise "
                   "the noise).",
                   "The chapter learns its width by SGD on the same leave-one-out loss; its kernel is written "
                   "exp(-((x - x_i) w)^2 / 2), so its w is attnseq's 1/w."],
            budget=f"{o.steps} Adam steps for the learned width; seconds on any CPU",
            data={"mse": errors, "bandwidth": widths, "entropy": entropy})

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
            image = ax.imshow(weights[name].numpy(), cmap="Reds", aspect="auto", vmin=0,
                              extent=(0, len(x_train), float(x_test[-1]), float(x_test[0])))
            ax.set_title(f"{name}, w = {models[name].bandwidth:.2f}", fontsize=10)
            ax.set_xlabel("training input (sorted by x_i)")
            fig.colorbar(image, ax=ax, fraction=0.046, pad=0.03)
        axes[0].set_ylabel("query x")
        fig.suptitle("Attention weights softmax(-(x - x_i)² / 2w²): queries down, keys across (data draw 1)",
                     fontsize=10)
        heat = save_figure(fig, ctx.figure("weights"))
        return [(fit, "The three fits of data draw 1: average pooling is a flat line, the kernels follow the "
                      "function."),
                (heat, "Attention weights of data draw 1, fixed and learned width: each query attends to the "
                       "training inputs near it (the diagonal band); a narrower kernel gives a sharper band.")]

    def _findings(self, spread, widths, entropy):
        ctx = self.context
        avg, fixed, learned = (spread[m] for m in METHODS)
        findings = []
        worse = separated(avg, fixed)
        beaten = all(a > f for a, f in zip(avg.values, fixed.values)) and all(
            a > x for a, x in zip(avg.values, learned.values))
        findings.append(Finding(beaten, f"average pooling fits worst in every data draw: MSE {avg.format(digits=3)} "
                                        f"against {fixed.format(digits=3)} (fixed kernel) and "
                                        f"{learned.format(digits=3)} (learned)"
                                + ("; the ranges do not overlap" if worse == 1 else "")
                                + ". It predicts the same mean for every query: the query is ignored."))
        sharper = [x < f for x, f in zip(entropy["learned kernel"], entropy["fixed kernel"])]
        w = Spread(widths["learned kernel"])
        findings.append(Finding(
            all(sharper),
            f"learning the width gave w = {w.format(digits=3)} (from {self.options.bandwidth:g}), weights "
            f"{'sharper' if all(sharper) else 'not sharper'} in {sum(sharper)} of {len(sharper)} draws (entropy "
            f"{Spread(entropy['learned kernel']).format(digits=2)} nats against "
            f"{Spread(entropy['fixed kernel']).format(digits=2)}), as the chapter's heatmaps show for its "
            "learned kernel." if all(sharper) else
            f"learning the width gave w = {w.format(digits=3)} (from {self.options.bandwidth:g}): the weights "
            f"are sharper in only {sum(sharper)} of {len(sharper)} draws; the leave-one-out optimum is not "
            "always narrower than the fixed kernel."))
        order = separated(fixed, learned)
        if order is None:
            note = (f"learned against fixed kernel: MSE {learned.mean:.3f} against {fixed.mean:.3f} with one data "
                    "draw: no spread to judge the difference by.")
        elif order == 0:
            note = (f"learned against fixed kernel: MSE {learned.format(digits=3)} against {fixed.format(digits=3)}: "
                    f"the ranges over the {ctx.seeds} draws overlap, so neither fits better beyond the spread of "
                    "the data draws.")
        else:
            better = "learned" if order == 1 else "fixed"  # order 1: every fixed-kernel MSE is higher
            note = (f"the {better} kernel fits better in every draw: MSE {learned.format(digits=3)} (learned) "
                    f"against {fixed.format(digits=3)} (fixed w = {self.options.bandwidth:g}), the ranges apart; "
                    "the chapter claims sharper weights for its learned kernel, not a better fit.")
        return findings, [note]
