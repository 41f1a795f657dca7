"""Attention: the scorers behind one base (base.py), content-based scorers (content.py), local
windows (local.py), location-aware attention (location.py), multi-head (multihead.py), the
masked softmax that the scorers, the Transformer and the memory networks normalise with
(softmax.py), and the Nadaraya-Watson kernel regression that attention grew from (kernel.py). Importing the package registers every
scorer."""

from . import content, local, location, multihead  # noqa: F401  (register the scorers)
from .base import SCORERS, Covering, Locating, Scorer, Windowed, build_scorer, forward_only

__all__ = ["SCORERS", "Covering", "Locating", "Scorer", "Windowed", "build_scorer", "forward_only"]
