"""The data pipeline: reading corpora (the corpora attnseq writes for its tasks are in ``corpora``),
tokenizers, vocabularies, and batches. Importing the package registers every tokenizer and
data format."""

from . import inputs, sources, subword, tokenizers  # noqa: F401  (fill the registries)
from .corpora import book  # noqa: F401
