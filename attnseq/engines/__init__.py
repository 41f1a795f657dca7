"""Engines behind one seam (base.py): ``torch`` (nn/, decoding/, train/) and ``numpy`` (the book's
NumPy layers in scratch/, through the adapter in numpy_engine/). Importing the package registers
both without loading either library."""
from . import numpy_engine, torch_engine  # noqa: F401  (fill the registry)
from .base import ENGINES, Engine, engine_for

__all__ = ["ENGINES", "Engine", "engine_for"]
