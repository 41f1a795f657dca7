"""The corpora attnseq writes or reads for its own tasks: generated dates in CLDR's patterns, gettext
catalogs, passages and stories, speech, formulas, names, algorithmic tasks, documents, the book's files.
Each writes TSV splits that the pipeline in ``attnseq.data`` reads like any user's corpus."""
