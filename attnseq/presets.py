"""The presets in configs/, and the recommended one for a data set when no config is given.

``attnseq train --data DIR`` without a config trains the recommended preset for the data's kind:
``recommended-char.yaml`` for short strings from a closed vocabulary (dates, numbers, codes,
normalisation: few distinct words), ``recommended-subword.yaml`` for text (many distinct words).
"""
from __future__ import annotations

import logging
from pathlib import Path

from .data.sources import data_overrides, load_splits
from .errors import UserError

log = logging.getLogger("attnseq")

CONFIGS = Path(__file__).resolve().parents[1] / "configs"
RECOMMENDED = {"char": "recommended-char.yaml", "subword": "recommended-subword.yaml"}
SUBWORD_WORDS = 4000  # distinct target words from which text is better read in subwords


def kind_of_data(pairs: list[tuple[str, str]]) -> tuple[str, int]:
    """("char" or "subword", the number of distinct words on the target side)."""
    words = {word for _, target in pairs for word in target.split()}
    return ("subword" if len(words) >= SUBWORD_WORDS else "char"), len(words)


def recommended_config(data: str | Path) -> Path:
    """The recommended preset for the data at ``data`` (a folder or the book's file), logged with
    the reason."""
    from .config import load_config

    config = load_config(None, data_overrides(data))
    pairs = load_splits(config.data)["train"]
    kind, words = kind_of_data(pairs)
    path = CONFIGS / RECOMMENDED[kind]
    if not path.exists():
        raise UserError(f"no config given and no recommended preset at {path}; give a config")
    log.info("no config given: %s training pairs with %s distinct target words -> %s (%s); give a config "
             "to choose", f"{len(pairs):,}", f"{words:,}", path.name,
             "characters" if kind == "char" else "subwords")
    return path
