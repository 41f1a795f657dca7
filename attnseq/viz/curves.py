"""Training curves from a run's metrics log."""

from __future__ import annotations

from pathlib import Path

from . import pyplot, save_figure


def plot_curve(records: list[dict], path: str | Path, steps_per_epoch: float | None = None) -> Path:
    """Write training loss and dev accuracy by epoch (PNG) to ``path``; returns the path."""
    plt = pyplot()

    train = [r for r in records if r.get("type") == "train"]
    evals = [r for r in records if r.get("type") == "eval"]
    fig, ax_loss = plt.subplots(figsize=(6.4, 3.8), dpi=110)
    if train and evals:
        # place train points on the epoch axis by interpolating step -> epoch from the evals
        xs_s = [0] + [e["step"] for e in evals]
        xs_e = [0] + [e["epoch"] for e in evals]
        import numpy as np

        epochs = np.interp([r["step"] for r in train], xs_s, xs_e)
        ax_loss.plot(epochs, [r["loss"] for r in train], color="tab:blue", label="train loss")
    scored = [e for e in evals if "dev_loss" in e]
    if scored:
        ax_loss.plot(
            [e["epoch"] for e in scored], [e["dev_loss"] for e in scored], "o--", color="tab:cyan", label="dev loss"
        )
    ax_loss.set_xlabel("epoch")
    ax_loss.set_ylabel("cross-entropy per token")
    ax_loss.set_yscale("log")
    ax_acc = ax_loss.twinx()
    scored = [e for e in evals if "dev_exact_match" in e and "dev_token_accuracy" in e]
    if scored:
        ax_acc.plot(
            [e["epoch"] for e in scored],
            [100 * e["dev_exact_match"] for e in scored],
            "s-",
            color="tab:orange",
            label="dev exact match",
        )
        ax_acc.plot(
            [e["epoch"] for e in scored],
            [100 * e["dev_token_accuracy"] for e in scored],
            "^:",
            color="tab:red",
            label="dev token accuracy",
        )
    ax_acc.set_ylabel("accuracy (%)")
    ax_acc.set_ylim(0, 101)
    handles = ax_loss.get_legend_handles_labels()[0] + ax_acc.get_legend_handles_labels()[0]
    ax_loss.legend(handles, [h.get_label() for h in handles], loc="center right", fontsize=8)
    return save_figure(fig, path)


METRICS = {
    "exact_match": ("dev exact match (%)", 100.0),
    "token_accuracy": ("dev token accuracy (%)", 100.0),
    "bleu": ("dev BLEU", 1.0),
    "chrf": ("dev chrF", 1.0),
    "loss": ("dev loss per token", 1.0),
}


def plot_progress(runs: dict[str, list[dict]], path: str | Path, metric: str | None = None) -> Path:
    """Write each run's dev ``metric`` against minutes of training (PNG, one line per run) to
    ``path``: which reaches a good model first. ``metric`` (a key of METRICS) defaults to BLEU
    when every run has it, else exact match."""
    if metric is None:
        metric = "bleu" if all(any("dev_bleu" in r for r in records) for records in runs.values()) else "exact_match"
    label, scale = METRICS[metric]
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(6.4, 3.8), dpi=110)
    for name, records in runs.items():
        evals = [r for r in records if r.get("type") == "eval" and f"dev_{metric}" in r]
        ax.plot(
            [r.get("wall_seconds", r["train_seconds"]) / 60 for r in evals],
            [scale * r[f"dev_{metric}"] for r in evals],
            "o-",
            markersize=3,
            label=name,
        )
    ax.set_xlabel("minutes of training (evaluations included)")
    ax.set_ylabel(label)
    if metric == "loss":
        ax.set_yscale("log")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    return save_figure(fig, path)
