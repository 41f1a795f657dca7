"""The Python API: train a config, load a trained run, translate with it.

    import attnseq
    attnseq.fit("configs/book-attention.yaml", "runs/book", ["data.dir=data/book-date"])
    model = attnseq.load("runs/book")
    model.translate(["september 27, 1994"])            # -> ["1994-09-27"]
    outputs, attention = model.translate([...], return_attention=True)
    model.search(["3/4/21"])[0].unknown                # pieces the model's vocabulary lacks

Every entry point checks its arguments first (translator/arguments.py): an argument of the wrong
type raises TypeError, a wrong value ValueError, the message naming the argument (and the index
of the item) at fault, ``texts[2]: expected a str, got NoneType``. Both are also
``attnseq.errors.UserError``s, as are a run folder's or the data's own problems (a damaged
checkpoint, a malformed data file), which keep their types.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Callable, Sequence

from .config import Config, load_config, parse_override
from .engines import ENGINES, engine_for
from .errors import ConfigError
from .runs import CHECKPOINTS, CONFIG_FILE, read_run_config
from .translator import Translation, Translator
from .translator.arguments import (ArgumentTypeError, ArgumentValueError, choice_argument, device_argument, flag,
                                   path_argument, strings_argument)

__all__ = ["load", "fit", "Translator", "Translation"]


def load(run_dir: str | os.PathLike, checkpoint: str = "best", device: str = "cpu",
         overrides: Sequence[str] = (), engine: str | None = None) -> Translator:
    """The model trained in ``run_dir`` (``checkpoint`` "best" or "last") on ``device`` ("cpu",
    or "cuda[:N]" for a torch run where there is one), ready to translate; ``overrides``, a list
    of "key=value" strings, change its decode settings (``decode.beam_size=5``). ``run_dir`` may
    be a model exported with ``attnseq export`` (its own engine decodes it); ``engine`` decodes
    a run with another engine where that engine converts it (``"ctranslate2"``: a torch
    Transformer exported on the fly; None: the run's own).

    Raises TypeError or ValueError naming the argument at fault (``run_dir`` that is not a run
    folder, an override of a setting the model was trained with, ...)."""
    run_dir = path_argument(run_dir, "run_dir")
    checkpoint = choice_argument(checkpoint, "checkpoint", CHECKPOINTS)
    device = device_argument(device)
    overrides = strings_argument(overrides, "overrides")
    if engine is not None:
        engine = choice_argument(engine, "engine", ENGINES)
    try:
        is_run = (run_dir / CONFIG_FILE).is_file()
    except OSError:
        is_run = False
    if not is_run:
        raise ArgumentValueError("run_dir", f"{run_dir}: not a run folder (no {CONFIG_FILE})")
    for i, text in enumerate(overrides):
        try:
            parse_override(text)
        except ConfigError as err:
            raise ArgumentValueError(f"overrides[{i}]", str(err)) from None
    try:
        config = read_run_config(run_dir, overrides)
    except ConfigError as err:
        if err.key is None or not overrides:  # the run's own config.yaml
            raise
        raise ArgumentValueError("overrides", str(err)) from None
    if engine is None or engine == config.engine:
        return engine_for(config).load(run_dir, config, checkpoint, device)
    try:
        return ENGINES.get(engine, "engine")().load_from(run_dir, config, checkpoint, device)
    except ConfigError as err:  # a run that engine cannot decode
        raise ArgumentValueError("engine", str(err)) from None


def fit(config: Config | str | os.PathLike, run_dir: str | os.PathLike, overrides: Sequence[str] = (),
        resume: bool = False, overwrite: bool = False,
        on_eval: Callable[[dict], None] | None = None) -> dict | None:
    """Train ``config`` (a Config, or a YAML file with ``overrides``, a list of "key=value"
    strings) into ``run_dir`` with the engine it names; the summary of the run (its last
    evaluation record). A run already in ``run_dir`` is continued with ``resume``, replaced with
    ``overwrite``, else refused. ``on_eval(record)`` is called after every evaluation.

    Raises TypeError or ValueError naming the argument at fault before training (a config that
    cannot be read or that the engine cannot run is the ``config`` argument's, its message naming
    the key); what training finds wrong later (the data) raises attnseq.errors.UserError."""
    if not isinstance(config, Config):
        config = path_argument(config, "config")
    run_dir = path_argument(run_dir, "run_dir")
    overrides = strings_argument(overrides, "overrides")
    resume, overwrite = flag(resume, "resume"), flag(overwrite, "overwrite")
    if resume and overwrite:
        raise ArgumentValueError("resume", "resume and overwrite: choose one")
    if on_eval is not None and not callable(on_eval):
        raise ArgumentTypeError("on_eval", f"expected a function of one record or None, got {type(on_eval).__name__}")
    try:
        if not isinstance(config, Config):
            config = load_config(config, overrides)
        engine = engine_for(config)
        config = engine.check(config)
    except ConfigError as err:
        raise ArgumentValueError("config", str(err)) from None
    return engine.train(config, run_dir, resume=resume, on_eval=on_eval, overwrite=overwrite)
