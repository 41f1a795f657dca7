"""The seam between attnseq and the engines that run its models: one interface, a registry."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from ..config import Config
from ..errors import ConfigError
from ..registry import Registry

ENGINES: Registry[type[Engine]] = Registry("engine")


class Engine:
    """One way of running the models (``engine:`` in a config), each in a package of its own
    (its loader here, its translator, its trainer where it trains):

    - ``load(run_dir, config, checkpoint, device)``: a Translator of a trained run;
    - ``load_from(run_dir, config, checkpoint, device)``: a Translator of a run of another engine
      (``config.engine``), converted for this one where it can be (``--engine``); a ConfigError
      naming ``engine`` where it cannot.

    Engines import what they run on (torch, NumPy) only inside these methods, so choosing one
    never loads the other.
    """

    # an engine that only decodes: what it decodes, and which engine trains that (its line when
    # asked to train; a TrainingEngine has none)
    decodes_only: str = ""

    def load(self, run_dir: str | Path, config: Config, checkpoint: str = "best", device: str = "cpu"):
        raise NotImplementedError

    def load_from(self, run_dir: str | Path, config: Config, checkpoint: str = "best", device: str = "cpu"):
        name = next(name for name in ENGINES if ENGINES.get(name) is type(self))
        raise ConfigError(
            f"engine: {run_dir} is a run of the {config.engine} engine, which the {name} engine "
            "cannot decode; leave --engine out to decode it with its own",
            key="engine",
        )


class TrainingEngine(Engine):
    """An engine that trains its models too:

    - ``check(config)``: the config with everything this engine reads checked and every variant's
      options written out; a ConfigError naming the key for anything it cannot run;
    - ``train(config, run_dir, resume, on_eval, overwrite)``: train into a run folder (a run
      already there is continued with ``resume``, replaced with ``overwrite``, else refused); the
      summary (the last evaluation record with ``parameters``, ``target_tokens``,
      ``tokens_per_second``), or None in the processes of a distributed run that do not write.
    """

    def check(self, config: Config) -> Config:
        raise NotImplementedError

    def train(
        self,
        config: Config,
        run_dir: str | Path,
        resume: bool = False,
        on_eval: Callable[[dict], None] | None = None,
        overwrite: bool = False,
    ) -> dict | None:
        raise NotImplementedError


def engine_for(config: Config) -> Engine:
    """The engine ``config.engine`` names."""
    return ENGINES.get(config.engine, "engine")()


def trainer_for(config: Config) -> TrainingEngine:
    """The engine ``config.engine`` names, where it trains (a ConfigError naming ``engine``
    otherwise: one that only decodes what another trained)."""
    engine = engine_for(config)
    if not isinstance(engine, TrainingEngine):
        raise ConfigError(f"engine: {config.engine} {engine.decodes_only}", key="engine")
    return engine
