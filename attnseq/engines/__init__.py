"""Engines behind one seam (base.py): ``torch`` (nn/, decoding/, train/), ``numpy`` (the book's
NumPy layers in scratch/, through the adapter in numpy_engine/) and ``ctranslate2`` (exported
Transformers, decoded only). Importing the package registers them without loading any library."""

from . import ctranslate2_engine, numpy_engine, torch_engine  # noqa: F401  (fill the registry)
from .base import ENGINES, Engine, TrainingEngine, engine_for, trainer_for

__all__ = ["ENGINES", "Engine", "TrainingEngine", "engine_for", "trainer_for"]
