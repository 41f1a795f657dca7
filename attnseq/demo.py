"""``attnseq demo``: generated dates -> an attention model -> accuracy, examples and plots."""

from __future__ import annotations

import logging
import time
from pathlib import Path

from .config import load_config
from .presets import CONFIGS, RECOMMENDED

log = logging.getLogger(__name__)

# The demo trains the recommended preset for character tasks (configs/recommended-char.yaml):
# a bidirectional GRU encoder and a Luong decoder with general attention and no input feeding.
PRESET = CONFIGS / RECOMMENDED["char"]


def run_demo(out: Path, minutes: float = 3.0, train_pairs: int = 30000, overwrite: bool = False) -> dict:
    """Generate dates, train until every dev date is right (or ``minutes`` pass), print why it
    stopped, test accuracy and examples, write attention.png and curve.png; the test metrics.
    ``out`` may hold files (an earlier demo's) only with ``overwrite``: they are replaced."""
    from .data.splits import make_date_splits, write_split_dir
    from .engines.torch_engine.trainer import Trainer
    from .files import check_folder
    from .runs import read_metrics
    from .viz.attention import plot_attention
    from .viz.curves import plot_curve

    out = check_folder(out, ("attention.png", "curve.png"), overwrite=overwrite)
    data_dir = out / "data"
    train, dev, test = make_date_splits(train_pairs, 1000, 2000, seed=7)
    write_split_dir(data_dir, train, dev, test, overwrite=overwrite)
    print(f"Generated {len(train)} training dates, e.g. {train[0][0]!r} -> {train[0][1]!r}")

    # done once every dev date is right, looked at every 100 updates (a fifth of an epoch) so that
    # the demo stops soon after the model is good, not at the next epoch's end
    config = load_config(
        PRESET,
        [
            f"data.dir={data_dir}",
            f"train.max_minutes={minutes}",
            "train.target_exact_match=1.0",
            "train.eval_every=100",
        ],
    )
    run_dir = out / "run"
    started = time.perf_counter()
    trainer = Trainer(
        config,
        run_dir,
        overwrite=True,
        on_eval=lambda r: print(
            f"  epoch {r['epoch']:.2f}: dev exact match "
            f"{r.get('dev_exact_match', 0):.2%}, loss {r.get('dev_loss', 0):.4f}"
        ),
    )
    print(
        f"Training a {trainer.parameters:,}-parameter attention model until every dev date is right "
        f"(at most {config.train.epochs} epochs or {minutes:g} minutes)..."
    )
    trainer.fit()
    seconds = time.perf_counter() - started
    why = trainer.stopped_by or f"{config.train.epochs} epochs (train.epochs)"
    print(f"Stopped after {seconds / 60:.1f} min: {why}")

    from .api import load

    translator = load(run_dir)
    metrics = translator.evaluate(test, bleu=False)
    print(
        f"\nTest exact match: {metrics['exact_match']:.2%} on {len(test)} dates "
        f"(token accuracy {metrics['token_accuracy']:.2%})\n"
    )
    sources = [s for s, _ in test[:10]]
    outputs = translator.translate(sources)
    for (src, ref), hyp in zip(test[:10], outputs):
        mark = "✓" if hyp == ref else "✗"
        print(f"  {mark} {src:<32} -> {hyp}" + ("" if hyp == ref else f"   (expected {ref})"))

    example = max(sources, key=len)
    result = translator.search([example], keep_attention=True)[0]
    attention_png = plot_attention(
        result.attention[0],
        result.source_tokens,
        result.output_tokens[0],
        out / "attention.png",
        title=f"{example} → {result.outputs[0]}",
    )
    curve_png = plot_curve(read_metrics(run_dir), out / "curve.png")
    print(f"\nWrote {attention_png} and {curve_png}")
    print(f"Try it: attnseq translate {run_dir}   (type a date, e.g. 3/4/21 or Tuesday, 25 December 1984),")
    print(f"        attnseq serve {run_dir}       (a page showing the output and its attention)")
    return metrics
