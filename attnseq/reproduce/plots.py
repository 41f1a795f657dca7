"""The reproductions' charts (matplotlib through attnseq.viz): curves of several seeds as their
mean with the min-max band, and the caption that says how many seeds were run."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .training import Curve


def seeds_note(seeds: int) -> str:
    """ "1 seed" / "3 seeds: mean, band from min to max"."""
    return "1 seed" if seeds == 1 else f"{seeds} seeds: mean, band from lowest to highest"


def draw_seeds(
    ax, curves: Sequence[Curve], label: str, color=None, scale: float = 1.0, marker: str = "o", linestyle: str = "-"
) -> None:
    """The mean over ``curves`` (one per seed) at the x values they all have, as a line with
    markers, and the band from the lowest to the highest seed; values times ``scale``. A seed that
    ran on past the shortest run (stopped later by the plateau rule) goes on as a thin line of
    its own, so no run's end is cut off."""
    curves = [c for c in curves if c.x]
    if not curves:
        return
    common = sorted(set.intersection(*(set(np.round(c.x, 6)) for c in curves)))
    if not common:  # seeds evaluated at different x (time budgets): each seed its own line
        for i, c in enumerate(curves):
            ax.plot(
                c.x,
                np.asarray(c.y) * scale,
                marker=marker,
                linestyle=linestyle,
                color=color,
                label=label if i == 0 else None,
                markersize=3,
            )
        return
    table = np.array([[dict(zip(np.round(c.x, 6), c.y))[x] for x in common] for c in curves]) * scale
    line = ax.plot(common, table.mean(0), marker=marker, linestyle=linestyle, color=color, label=label, markersize=4)[0]
    if len(curves) > 1:
        ax.fill_between(common, table.min(0), table.max(0), color=line.get_color(), alpha=0.18, linewidth=0)
    last = common[-1]
    for c in curves:
        on = [i for i, x in enumerate(c.x) if x >= last - 1e-6]
        if len(on) > 1:  # the seed's curve from the last common x to its end
            xs, ys = [c.x[i] for i in on], [c.y[i] * scale for i in on]
            ax.plot(xs, ys, linestyle=linestyle, color=line.get_color(), linewidth=0.8, alpha=0.6)


def draw_seed_dots(ax, groups: Sequence[str], arms: dict[str, Sequence[Sequence[float]]], colors: dict) -> None:
    """Each arm's values at each of ``groups`` (arms: label -> one list of values per group, a
    value per seed or timed run) as dots side by side, the arms apart within a group, with a bar
    at each list's mean; the groups as the x ticks, the arms in the legend."""
    width = 0.6 / max(1, len(arms))
    for j, (label, lists) in enumerate(arms.items()):
        for i, values in enumerate(lists):
            x = i + (j - (len(arms) - 1) / 2) * width
            ax.scatter([x] * len(values), values, color=colors[label], alpha=0.7, label=label if i == 0 else None)
            if values:
                ax.plot([x - width / 3, x + width / 3], [float(np.mean(values))] * 2, color=colors[label])
    ax.set_xticks(range(len(groups)), list(groups))


def dev_exact_match_figure(
    path,
    curves: Sequence[Curve],
    label: str,
    target: float,
    title: str,
    xlabel: str = "minutes of training (evaluations not counted)",
):
    """The dev exact match of ``curves`` (one per seed, 0..1) against their x, in percent, with a
    dotted line at ``target``, saved to ``path``; the saved path."""
    from ..viz import pyplot, save_figure

    plt = pyplot()
    fig, ax = plt.subplots(figsize=(7.0, 4.0), dpi=110)
    draw_seeds(ax, curves, label, color="tab:red", scale=100)
    ax.axhline(100 * target, color="gray", linestyle=":", linewidth=1)
    ax.set_xlabel(xlabel)
    ax.set_ylabel("dev exact match (%)")
    ax.set_ylim(-2, 102)
    ax.grid(alpha=0.3)
    ax.set_title(title, fontsize=10)
    return save_figure(fig, path)
