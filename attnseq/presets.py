"""The presets in configs/, and the recommended one for a data set when no config is given.

``attnseq train --data DIR`` without a config trains the recommended preset for the data's kind:
``recommended-subword.yaml`` for text, targets of several words drawn from a large vocabulary
(at least 2 words a line on average and 4,000 distinct words: translation, UI messages);
``recommended-char.yaml`` for everything else: short strings rewritten into another form
(dates, numbers, codes, normalisation), where a "word" is often a whole, unique output; and
``formulas.yaml`` where every source names an image file (data.input image: image to markup), and
``chan2016-las.yaml`` where every source names a WAV file (data.input audio: speech to text).
Text whose two sides are written in different alphabets (English to Russian) keeps two
vocabularies (SEPARATE): the subword preset shares one, and ties its embeddings, for text whose
sides share one (English to German).
"""

from __future__ import annotations

import logging
from collections import Counter
from pathlib import Path

from .data.sources import SOURCES, data_overrides
from .errors import UserError

log = logging.getLogger("attnseq")

CONFIGS = Path(__file__).resolve().parents[1] / "configs"
RECOMMENDED = {
    "char": "recommended-char.yaml",
    "subword": "recommended-subword.yaml",
    "image": "formulas.yaml",
    "audio": "chan2016-las.yaml",
}
IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".gif", ".bmp", ".tif", ".tiff", ".webp")
FILE_SUFFIXES = {"image": IMAGE_SUFFIXES, "audio": (".wav",)}  # sources naming such files: that kind's preset
SUBWORD_WORDS = 4000  # distinct target words from which text is better read in subwords
SUBWORD_WORDS_PER_LINE = 2.0  # ... when the targets are sentences, not single strings
SHARED_ALPHABET = 0.5  # the share of the targets' letters the sources use too, from which the sides share a vocabulary
SEPARATE = ("data.shared_vocab=false", "model.tie_embeddings=none")  # two vocabularies, as the subword preset had
SAMPLE_PAIRS = 200_000  # the training pairs looked at (the first ones: a corpus of millions is not read whole)


def kind_of_data(pairs: list[tuple[str, str]]) -> tuple[str, int, float]:
    """("char" or "subword", distinct target words, target words per line)."""
    words = [word for _, target in pairs for word in target.split()]
    distinct, per_line = len(set(words)), len(words) / max(len(pairs), 1)
    text = distinct >= SUBWORD_WORDS and per_line >= SUBWORD_WORDS_PER_LINE
    return ("subword" if text else "char"), distinct, per_line


def alphabet_shared(pairs: list[tuple[str, str]]) -> float:
    """The share of the targets' letters (counted where they occur) that occur in the sources too:
    near 1 where the two sides are written in one alphabet, near 0 where in two."""
    in_sources = {c for source, _ in pairs for c in source if c.isalpha()}
    letters = Counter(c for _, target in pairs for c in target if c.isalpha())
    total = sum(letters.values())
    return sum(n for c, n in letters.items() if c in in_sources) / total if total else 1.0


def recommended_config(data: str | Path) -> tuple[Path, list[str]]:
    """The recommended preset for the data at ``data`` (a folder or the book's file) and the
    settings it takes for that data (before the user's), logged with the reason."""
    from .config import load_config

    config = load_config(None, data_overrides(data))
    pairs = SOURCES.get(config.data.format, "data.format")().training_text(config.data).head(SAMPLE_PAIRS)
    for kind, suffixes in FILE_SUFFIXES.items():
        if all(source.lower().endswith(suffixes) for source, _ in pairs):
            path = CONFIGS / RECOMMENDED[kind]
            log.info(
                "no config given: every training source names an %s file -> %s (data.input %s); give a "
                "config to choose",
                kind,
                path.name,
                kind,
            )
            return path, []
    kind, words, per_line = kind_of_data(pairs)
    path = CONFIGS / RECOMMENDED[kind]
    if not path.exists():
        raise UserError(f"no config given and no recommended preset at {path}; give a config")
    log.info(
        "no config given: %s training pairs%s, targets of %.1f words on average, %s distinct -> %s (%s); "
        "give a config to choose",
        f"{len(pairs):,}",
        " (the file's first)" if len(pairs) == SAMPLE_PAIRS else "",
        per_line,
        f"{words:,}",
        path.name,
        "characters" if kind == "char" else "subwords",
    )
    if kind != "subword":
        return path, []
    shared = alphabet_shared(pairs)
    if shared >= SHARED_ALPHABET:
        return path, []
    log.info(
        "the sources use %.0f%% of the targets' letters: two alphabets, two vocabularies (%s)",
        100 * shared,
        ", ".join(SEPARATE),
    )
    return path, list(SEPARATE)
