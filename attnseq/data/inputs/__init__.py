"""Input kinds (``data.input``: text, image, ...): what a source column holds and how it becomes
what the encoder reads (base.py). Importing the package registers every kind."""

from . import audio, image  # noqa: F401  (fill the registry)
from .base import INPUTS, InputKind, SourceShape, TextInput, build_input, check_text_settings, locate_sources

__all__ = ["INPUTS", "InputKind", "SourceShape", "TextInput", "build_input", "check_text_settings", "locate_sources"]
