"""Text data: reading corpora and the book's files, generated dates, gettext catalogs,
tokenizers, vocabularies, and batches. Importing the package registers every tokenizer and
data format."""

from . import book, inputs, sources, subword, tokenizers  # noqa: F401  (fill the registries)
