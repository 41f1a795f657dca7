"""attnseq: attention-based sequence-to-sequence learning, readable and fast."""

from __future__ import annotations

__version__ = "0.1.0"


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
