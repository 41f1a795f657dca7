"""The Python API: train a config, load a trained run, translate with it.

    import attnseq
    attnseq.fit("configs/book-attention.yaml", "runs/book", ["data.dir=data/book-date"])
    model = attnseq.load("runs/book")
    model.translate(["september 27, 1994"])            # -> ["1994-09-27"]
    ensemble = attnseq.load(["runs/a", "runs/b"])      # two runs decoded as one
    outputs, attention = model.translate([...], return_attention=True)
    model.search(["3/4/21"])[0].unknown                # pieces the model's vocabulary lacks
    attnseq.load("runs/de", precision="int8")          # int8 weights, where the CPU has VNNI or AMX

Every entry point checks its arguments first (translator/arguments.py): an argument of the wrong
type raises TypeError, a wrong value ValueError, the message naming the argument (and the index
of the item) at fault, ``texts[2]: expected a str, got NoneType``. Both are also
``attnseq.errors.UserError``s, as are a run folder's or the data's own problems (a damaged
checkpoint, a malformed data file), which keep their types.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from .config import DECODE_PRECISIONS, Config, load_config, parse_override
from .engines import ENGINES, engine_for, trainer_for
from .errors import ConfigError, user_message
from .runs import CHECKPOINTS, CONFIG_FILE, read_run_config
from .translator import Translation, Translator
from .translator.arguments import (
    ArgumentTypeError,
    ArgumentValueError,
    choice_argument,
    device_argument,
    flag,
    path_argument,
    strings_argument,
)

__all__ = ["load", "fit", "Translator", "Translation"]


def load(
    run_dir: str | os.PathLike | Sequence[str | os.PathLike],
    checkpoint: str = "best",
    device: str = "cpu",
    overrides: Sequence[str] = (),
    precision: str | None = None,
    engine: str | None = None,
) -> Translator:
    """The model trained in ``run_dir`` (``checkpoint`` "best" or "last") on ``device`` ("cpu",
    or "cuda[:N]" for a torch run where there is one), ready to translate; ``overrides``, a list
    of "key=value" strings, change its decode settings (``decode.beam_size=5``). ``precision``
    ("fp32", "int8" or "bf16"; None: the run's decode.precision) is what its products run in: int8
    quantises the torch model's weights once, here, where the CPU has int8 dot products (VNNI,
    AMX; elsewhere one warning on the "attnseq" logger and fp32); bf16 autocasts the products to
    bfloat16 where they pay (an AMX CPU, a GPU; elsewhere the same warning and fp32). The Translator's
    ``precision`` says which it got.

    ``run_dir`` may be a model exported with ``attnseq export`` (its own engine decodes it);
    ``engine`` decodes a run with another engine where that engine converts it
    (``"ctranslate2"``: a torch Transformer exported on the fly; None: the run's own).

    ``run_dir`` a list of run folders: their ensemble (engines/torch_engine/ensemble.py), which decodes
    with the mean of the models' log-probabilities at every step; the runs must be torch runs
    that share their text pipeline (vocabularies, tokenizer models), and the decode settings are
    the first run's (with ``overrides``).

    Raises TypeError or ValueError naming the argument at fault (``run_dir`` that is not a run
    folder, an override of a setting the model was trained with, ``run_dir[1]`` that cannot
    join the ensemble, int8 for the numpy engine, ...)."""
    runs, names = _run_dirs(run_dir)
    checkpoint = choice_argument(checkpoint, "checkpoint", CHECKPOINTS)
    device = device_argument(device)
    overrides = strings_argument(overrides, "overrides")
    precision = precision if precision is None else choice_argument(precision, "precision", DECODE_PRECISIONS)
    for run, name in zip(runs, names):
        if not _is_run(run):
            raise ArgumentValueError(name, f"{run}: not a run folder (no {CONFIG_FILE})")
    engine = engine if engine is None else choice_argument(engine, "engine", ENGINES)
    configs = _run_configs(runs, overrides, precision)
    with _as_argument("precision", when=lambda err: precision is not None and err.key == "decode.precision"):
        if names != ["run_dir"]:  # a list of runs: their ensemble
            return _ensemble(runs, configs, checkpoint, device, engine)
        if engine is None or engine == configs[0].engine:
            return engine_for(configs[0]).load(runs[0], configs[0], checkpoint, device)
        with _as_argument("engine", when=lambda err: err.key != "decode.precision"):  # a run that engine cannot decode
            return ENGINES.get(engine, "engine")().load_from(runs[0], configs[0], checkpoint, device)


# the config key an argument of the API sets, which its errors name: "precision (decode.precision): ..."
ARGUMENT_KEYS = {"precision": "decode.precision"}


@contextmanager
def _as_argument(name: str, when: Callable[[ConfigError], bool] = lambda err: True) -> Iterator[None]:
    """Within it, a ConfigError that ``when`` says is the argument ``name``'s is raised as an
    ArgumentValueError naming it (its line from attnseq.errors' table; without the key's own
    prefix where the argument sets that key); any other passes unchanged."""
    try:
        yield
    except ConfigError as err:
        if not when(err):
            raise
        line, key = user_message(err), ARGUMENT_KEYS.get(name.split("[")[0])
        if key is not None and err.key == key:
            raise ArgumentValueError(name, line.removeprefix(f"{key}: "), key) from None
        raise ArgumentValueError(name, line) from None


def _run_dirs(run_dir) -> tuple[list[Path], list[str]]:
    """(the run folders ``run_dir`` gives, the argument name of each: "run_dir", or "run_dir[i]"
    for the items of a list), an ArgumentTypeError or ArgumentValueError naming the one at fault."""
    if not isinstance(run_dir, (list, tuple)):
        return [path_argument(run_dir, "run_dir")], ["run_dir"]
    if not run_dir:
        raise ArgumentValueError("run_dir", "empty; give a run folder, or a list of them for their ensemble")
    names = [f"run_dir[{i}]" for i in range(len(run_dir))]
    return [path_argument(run, name) for run, name in zip(run_dir, names)], names


def _is_run(run_dir: Path) -> bool:
    """True when ``run_dir`` holds a run (its config.yaml)."""
    try:
        return (run_dir / CONFIG_FILE).is_file()
    except OSError:
        return False


def _run_configs(runs: list[Path], overrides: list[str], precision: str | None) -> list[Config]:
    """The configs of the runs in ``runs`` with ``overrides`` of their decode settings (an
    ArgumentValueError naming the override at fault) and ``precision`` where given."""
    for i, text in enumerate(overrides):
        with _as_argument(f"overrides[{i}]"):
            parse_override(text)
    with _as_argument("overrides", when=lambda err: err.key is not None and bool(overrides)):  # not config.yaml's own
        configs = [read_run_config(run, overrides) for run in runs]
    if precision is not None:
        for config in configs:
            config.decode.precision = precision
    return configs


def _ensemble(
    runs: list[Path], configs: list[Config], checkpoint: str, device: str, engine: str | None = None
) -> Translator:
    """The ensemble of the torch runs ``runs`` (their ``configs``); an ArgumentValueError naming
    ``engine`` for another engine than torch, or ``run_dir[i]`` for a run that is not a torch run,
    or reads or writes text otherwise than the first."""
    from .engines.torch_engine.ensemble import EnsembleTranslator, pipeline_difference
    from .engines.torch_engine.translator import TorchTranslator

    if engine not in (None, "torch"):
        raise ArgumentValueError(
            "engine", f"{engine}: an ensemble decodes torch models, through the decoder step protocol"
        )
    for i, (run, config) in enumerate(zip(runs, configs)):
        if config.engine != "torch":
            raise ArgumentValueError(
                f"run_dir[{i}]",
                f"{run}: a {config.engine}-engine run; an ensemble decodes "
                "torch-engine runs only (engine: torch), through the decoder step protocol",
            )
        why = pipeline_difference(run, config, runs[0], configs[0])
        if why:
            raise ArgumentValueError(f"run_dir[{i}]", why)
    members = [engine_for(config).load(run, config, checkpoint, device) for run, config in zip(runs, configs)]
    for i, (run, member) in enumerate(zip(runs, members)):
        if not isinstance(member, TorchTranslator):
            raise ArgumentValueError(
                f"run_dir[{i}]",
                f"{run}: its {type(member).__name__} cannot join an ensemble; an ensemble decodes torch models",
            )
    return EnsembleTranslator(members, runs)


def fit(
    config: Config | str | os.PathLike,
    run_dir: str | os.PathLike,
    overrides: Sequence[str] = (),
    resume: bool = False,
    overwrite: bool = False,
    on_eval: Callable[[dict], None] | None = None,
) -> dict | None:
    """Train ``config`` (a Config or a YAML file; ``overrides``, a list of "key=value" strings,
    apply to either) into ``run_dir`` with the engine it names; the summary of the run (its last
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
    with _as_argument("config"):
        config = load_config(config, overrides)  # a path or a Config, the overrides applied to either
        engine = trainer_for(config)
        config = engine.check(config)
    return engine.train(config, run_dir, resume=resume, on_eval=on_eval, overwrite=overwrite)
