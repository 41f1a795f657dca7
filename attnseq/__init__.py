"""attnseq: attention-based sequence-to-sequence learning, readable and fast."""
from __future__ import annotations

__version__ = "0.1.0"


def load(run_dir, checkpoint: str = "best", device: str = "cpu"):
    """The model trained in ``run_dir``, as a Translator: ``attnseq.load(d).translate([...])``."""
    from .api import load as _load

    return _load(run_dir, checkpoint=checkpoint, device=device)


__all__ = ["load", "__version__"]
