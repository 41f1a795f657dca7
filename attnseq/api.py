"""The Python API: train a config, load a trained run, translate with it.

    import attnseq
    attnseq.fit("configs/book-attention.yaml", "runs/book", ["data.dir=data/book-date"])
    model = attnseq.load("runs/book")
    model.translate(["september 27, 1994"])            # -> ["1994-09-27"]
    outputs, attention = model.translate([...], return_attention=True)
"""
from __future__ import annotations

from pathlib import Path
from typing import Callable, Sequence

from .config import Config, load_config
from .engines import engine_for
from .runs import read_run_config
from .translator import Translation, Translator

__all__ = ["load", "fit", "Translator", "Translation"]


def load(run_dir: str | Path, checkpoint: str = "best", device: str = "cpu",
         overrides: Sequence[str] = ()) -> Translator:
    """The model trained in ``run_dir`` (``checkpoint`` "best" or "last"), ready to translate;
    ``overrides`` change its decode settings (``decode.beam_size=5``)."""
    config = read_run_config(run_dir, overrides)
    return engine_for(config).load(run_dir, config, checkpoint, device)


def fit(config: Config | str | Path, run_dir: str | Path, overrides: Sequence[str] = (),
        resume: bool = False, overwrite: bool = False,
        on_eval: Callable[[dict], None] | None = None) -> dict | None:
    """Train ``config`` (a Config, or a YAML file with ``overrides``) into ``run_dir`` with the
    engine it names; the summary of the run (its last evaluation record). A run already in
    ``run_dir`` is continued with ``resume``, replaced with ``overwrite``, else refused."""
    if not isinstance(config, Config):
        config = load_config(config, list(overrides))
    engine = engine_for(config)
    return engine.train(engine.check(config), run_dir, resume=resume, on_eval=on_eval, overwrite=overwrite)
