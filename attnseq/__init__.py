"""attnseq: attention-based sequence-to-sequence learning, readable and fast."""

from __future__ import annotations

import os
import sys

__version__ = "0.1.0"


def _interrupted_in_one_line(exc_type, exc, tb, _python_hook=sys.excepthook) -> None:
    """sys.excepthook of the attnseq command's process: a Ctrl-C that comes while Python is still
    importing the command (before attnseq.cli.main handles it) ends it with one line, as one later
    does; any other exception as Python shows it."""
    if issubclass(exc_type, KeyboardInterrupt):  # as main() ends a command stopped by Ctrl-C: one line, 130
        print("attnseq: interrupted", file=sys.stderr)
        for stream in (sys.stdout, sys.stderr):
            stream.flush()
        os._exit(130)
    else:
        _python_hook(exc_type, exc, tb)


# the process is the command: its console script, or ``python -m attnseq.cli`` (whose argv[0] is
# "-m" while the package is imported); a program that imports attnseq keeps its own hook
if sys.argv[:1] == ["-m"] or os.path.splitext(os.path.basename(sys.argv[0] if sys.argv else ""))[0] == "attnseq":
    sys.excepthook = _interrupted_in_one_line


def load(
    run_dir,
    checkpoint: str = "best",
    device: str = "cpu",
    overrides=(),
    precision: str | None = None,
    engine: str | None = None,
):
    """The model trained in ``run_dir``, as a Translator: ``attnseq.load(d).translate([...])``;
    ``overrides`` change its decode settings, ``precision="int8"`` quantises it,
    ``engine="ctranslate2"`` decodes a torch Transformer run with CTranslate2 (attnseq.api.load);
    a model exported with ``attnseq export`` loads as a run does."""
    from .api import load as _load

    return _load(run_dir, checkpoint=checkpoint, device=device, overrides=overrides, precision=precision, engine=engine)


def fit(config, run_dir, overrides=(), resume: bool = False, overwrite: bool = False):
    """Train ``config`` (a Config or a YAML file, with ``--set``-style ``overrides``) into
    ``run_dir`` with the engine it names; the summary of the run. A run already in ``run_dir``
    is continued with ``resume``, replaced with ``overwrite``, else refused."""
    from .api import fit as _fit

    return _fit(config, run_dir, overrides, resume=resume, overwrite=overwrite)


__all__ = ["load", "fit", "__version__"]
