"""Source encoders of features (``model.frontend``), behind the seam in base.py: the
convolutional image encoder (conv.py), the pyramidal listener of speech (pyramidal.py).
attnseq/nn/__init__.py imports each, to register it (they use the Transformer's and the
recurrent layers, which import this seam)."""

from .base import FRONTENDS, Frontend, build_frontend

__all__ = ["FRONTENDS", "Frontend", "build_frontend"]
