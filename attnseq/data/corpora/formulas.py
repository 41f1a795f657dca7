"""Formulas rendered as images (``attnseq data formulas``): LaTeX-like token sequences of up to 20
tokens, drawn by matplotlib's mathtext in one of its five math font sets at varied sizes with
noise, for image-to-markup (Deng et al. 2017) on data.input image.

A formula is terms joined by operators; a term is a symbol (a letter, a digit, a Greek letter)
with an optional superscript or subscript (``x ^ { 2 }``), a square root (``\\sqrt { a + 1 }``)
or a parenthesised sum; the target is its tokens joined by spaces (what data.tokenizer word
reads). Nothing is stacked (no fractions), so reading the formula goes left to right, which the
attention's check (viz/image_attention.py monotonic_share) measures.

The page: white, the ink black, ``size`` pixels a font em (12 to 18), the baseline at 1.15 em
from the top of a canvas 1.65 em high (what most formulas reach above and below it; a taller one,
a root over a superscript, gets a taller canvas, and is scaled smaller when read at a fixed
height), 2 to 6 pixels of margin left and right, Gaussian noise of 0 to 12 grey levels. Each split is made in blocks of
``BLOCK`` formulas, block k from a random stream seeded by the seed, the split and k, so the
files are the same for any number of worker processes; dev and test formulas are distinct and
never in training.
"""

from __future__ import annotations

import io
import multiprocessing
from collections.abc import Sequence

import numpy as np

from ...utils import stream_seed

MAX_TOKENS = 20
BLOCK = 2000
FONTSETS = ("dejavusans", "dejavuserif", "cm", "stix", "stixsans")
LETTERS = tuple("abcnxyzk")
DIGITS = tuple("0123456789")
GREEK = (r"\alpha", r"\beta", r"\gamma", r"\lambda", r"\pi", r"\sigma", r"\theta")
OPERATORS = ("+", "-", "=", r"\times", "<", ">")
SPLIT_STREAMS = {"train": 0, "dev": 1, "test": 2}
INKLESS = ("{", "}", "^", "_")  # markup that draws nothing of its own (it places what follows)


def symbol(rng: np.random.Generator) -> str:
    kind = rng.random()
    pool = LETTERS if kind < 0.45 else DIGITS if kind < 0.8 else GREEK
    return str(pool[rng.integers(len(pool))])


def term(rng: np.random.Generator, budget: int, depth: int = 0) -> list[str]:
    """A term of at most ``budget`` tokens (at least 1)."""
    kind = rng.random()
    if budget >= 5 and kind < 0.35:  # x ^ { 2 } or x _ { i }
        return [symbol(rng), "^" if rng.random() < 0.6 else "_", "{", symbol(rng), "}"]
    if budget >= 5 and depth == 0 and kind < 0.5:  # \sqrt { ... }
        return [r"\sqrt", "{", *expression(rng, min(budget - 3, 5), depth + 1), "}"]
    if budget >= 5 and depth == 0 and kind < 0.6:  # ( ... )
        return ["(", *expression(rng, min(budget - 2, 6), depth + 1), ")"]
    if budget >= 2 and kind < 0.8:  # 2 x, 1 0
        return [symbol(rng), symbol(rng)]
    return [symbol(rng)]


def expression(rng: np.random.Generator, budget: int, depth: int = 0) -> list[str]:
    """Terms joined by operators, at most ``budget`` tokens (at least 1)."""
    tokens = term(rng, budget, depth)
    while budget - len(tokens) >= 2 and rng.random() < 0.75:
        tokens += [str(OPERATORS[rng.integers(len(OPERATORS))]), *term(rng, budget - len(tokens) - 1, depth)]
    return tokens


def random_formula(rng: np.random.Generator, max_tokens: int = MAX_TOKENS) -> list[str]:
    """The tokens of a formula of 1 to ``max_tokens`` tokens."""
    return expression(rng, int(rng.integers(1, max_tokens + 1)))


def latex(tokens: Sequence[str]) -> str:
    """The mathtext of ``tokens``: joined without spaces (mathtext reads ``x ^ { 2 }`` otherwise
    than ``x^{2}``), a command (``\\alpha``) followed by one."""
    return "$" + "".join(t + " " if t.startswith("\\") else t for t in tokens) + "$"


_PARSER = None  # a process's mathtext parser (it caches its fonts)


def render(tokens: Sequence[str], rng: np.random.Generator) -> np.ndarray:
    """The page (H, W) uint8 of ``tokens`` drawn as the module's docstring says: dark ink on white."""
    global _PARSER
    from matplotlib import mathtext
    from matplotlib.font_manager import FontProperties

    if _PARSER is None:
        _PARSER = mathtext.MathTextParser("agg")
    size = int(rng.integers(12, 19))
    font = FontProperties(size=size, math_fontfamily=FONTSETS[rng.integers(len(FONTSETS))])
    drawn = _PARSER.parse(latex(tokens), dpi=72, prop=font)
    ink = np.asarray(drawn.image, dtype=np.float32)  # (h, w), ink high
    baseline = round(1.15 * size)
    top = max(0, baseline - (ink.shape[0] - round(drawn.depth)))
    height = max(round(1.65 * size), top + ink.shape[0])
    left, right = int(rng.integers(2, 7)), int(rng.integers(2, 7))
    page = np.zeros((height, left + ink.shape[1] + right), np.float32)
    page[top : top + ink.shape[0], left : left + ink.shape[1]] = ink
    page = 255 - page + rng.normal(0, rng.uniform(0, 12), page.shape)
    return np.clip(np.round(page), 0, 255).astype(np.uint8)


def png_bytes(page: np.ndarray) -> bytes:
    from PIL import Image

    buffer = io.BytesIO()
    Image.fromarray(page).save(buffer, format="PNG", optimize=False)
    return buffer.getvalue()


def formula_block(task: tuple[int, str, int, int, frozenset]) -> list[tuple[str, bytes]]:
    """(target, PNG bytes) of the ``n`` formulas of block ``index`` of ``split`` at ``seed``,
    none of whose targets is in ``excluded``."""
    seed, split, index, n, excluded = task
    rng = np.random.default_rng(stream_seed(seed, SPLIT_STREAMS[split], index))
    made = []
    while len(made) < n:
        tokens = random_formula(rng)
        target = " ".join(tokens)
        if target not in excluded:
            made.append((target, png_bytes(render(tokens, rng))))
    return made


def distinct_formulas(seed: int, split: str, n: int, excluded: set[str]) -> list[list[str]]:
    """``n`` distinct formulas (tokens) of ``split``'s stream, none in ``excluded``."""
    rng = np.random.default_rng(stream_seed(seed, SPLIT_STREAMS[split], 0))
    found: dict[str, list[str]] = {}
    while len(found) < n:
        tokens = random_formula(rng)
        target = " ".join(tokens)
        if target not in excluded:
            found.setdefault(target, tokens)
    return list(found.values())


def formula_files(counts: dict[str, int], seed: int = 0, workers: int = 1) -> dict[str, bytes | str]:
    """{relative path: contents} of a formula data set: ``images/SPLIT/NNNNNN.png`` and
    ``SPLIT.tsv`` (``images/SPLIT/NNNNNN.png<TAB>tokens`` lines) for each split of ``counts``.
    Dev and test hold distinct formulas, none in the other or in training; training's blocks are
    made by ``workers`` processes (the same files for any number)."""
    held: set[str] = set()
    fixed = {}
    for split in ("test", "dev"):
        fixed[split] = distinct_formulas(seed, split, counts[split], held)
        held |= {" ".join(t) for t in fixed[split]}
    excluded = frozenset(held)
    tasks = [
        (seed, "train", k, min(BLOCK, counts["train"] - start), excluded)
        for k, start in enumerate(range(0, counts["train"], BLOCK))
    ]
    if workers > 1 and len(tasks) > 1:
        with multiprocessing.get_context("spawn").Pool(min(workers, len(tasks))) as pool:
            blocks = pool.map(formula_block, tasks)
    else:
        blocks = [formula_block(task) for task in tasks]
    made = {"train": [pair for block in blocks for pair in block]}
    for split, formulas in fixed.items():
        rng = np.random.default_rng(stream_seed(seed, SPLIT_STREAMS[split], 1))
        made[split] = [(" ".join(tokens), png_bytes(render(tokens, rng))) for tokens in formulas]
    files: dict[str, bytes | str] = {}
    for split in ("train", "dev", "test"):
        lines = []
        for i, (target, png) in enumerate(made[split]):
            name = f"images/{split}/{i:06d}.png"
            files[name] = png
            lines.append(f"{name}\t{target}\n")
        files[f"{split}.tsv"] = "".join(lines)
    return files
