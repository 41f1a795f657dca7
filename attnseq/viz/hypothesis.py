"""The attention of one hypothesis as ``attnseq plot attention`` draws it: its alignment (with
local attention's window, and a copying model's p_gen of each output token), one layer and head
of the Transformer's cross-attention or of its encoder's self-attention, or a grid of every head
of a layer (or of every layer)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ..decoding.common import AttentionViews
from ..errors import UserError
from ..translator import Translation
from .attention import plot_attention, plot_attention_grid

ALL, AVERAGE = "all", "avg"


def parse_index(text: str | None, flag: str) -> int | str | None:
    """``--layer``/``--head`` values: a number from 1, ``all`` or ``avg`` (None: not given)."""
    if text is None or text in (ALL, AVERAGE):
        return text
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise UserError(f"{flag}: expected a number from 1, 'all' or 'avg', got {text!r}")
    return value


def _indices(choice, count: int, flag: str, default: int | str) -> list[int | str]:
    if choice is None:
        choice = default
    if choice == ALL:
        return list(range(count))
    if choice == AVERAGE:
        return [AVERAGE]
    if choice > count:
        raise UserError(f"{flag} {choice}: this model has {count}")
    return [choice - 1]


def plot_hypothesis(
    translation: Translation,
    k: int,
    views: AttentionViews,
    encoder: np.ndarray | None,
    path: str | Path,
    layer=None,
    head=None,
    encoder_view: bool = False,
) -> Path:
    """Write the attention of hypothesis ``k`` (from 0) of ``translation`` to ``path``.

    ``views``/``encoder``: what ``Translator.attention_views`` gives; ``layer`` and ``head``:
    numbers from 1, ``all`` or ``avg`` (heads only), None for the last layer and the average
    over heads; ``encoder_view``: the encoder's self-attention instead of the cross-attention.
    """
    alignment = translation.attention[k]
    title = f"{translation.source} → {translation.outputs[k]}"
    if encoder_view and encoder is None:
        raise UserError(
            "--encoder: this run's encoder has no self-attention to plot (a Transformer's has, "
            "decoded by the torch engine; CTranslate2 returns the alignment alone)"
        )
    stack = encoder if encoder_view else views.cross  # (layers, heads, rows, S)
    if stack is None:
        if layer is not None or head is not None:
            raise UserError(
                "--layer/--head: this run's attention has no layers or heads to choose "
                "(Transformer runs and multihead attention have, decoded by the torch engine; "
                "CTranslate2 returns the last layer's average over heads alone)"
            )
        return plot_attention(
            alignment,
            translation.source_tokens,
            translation.output_tokens[k],
            path,
            title=title,
            window=views.window,
            p_gen=views.p_gen,
        )
    rows = translation.source_tokens if encoder_view else translation.output_tokens[k]
    axes = ("input", "input (query)") if encoder_view else ("input", "output")
    what = "encoder self-attention" if encoder_view else "cross-attention"
    layers = _indices(layer, stack.shape[0], "--layer", stack.shape[0])
    if AVERAGE in layers:
        raise UserError("--layer: expected a number from 1 or 'all' ('avg' is for --head)")
    heads = _indices(head, stack.shape[1], "--head", AVERAGE)
    maps = []
    for l in layers:
        for h in heads:
            matrix = stack[l].mean(0) if h == AVERAGE else stack[l][h]
            name = "average over heads" if h == AVERAGE else f"head {h + 1}"
            maps.append((f"layer {l + 1}, {name}", matrix))
    if len(maps) == 1:
        caption = maps[0][0]
        window = views.window if not encoder_view and heads == [AVERAGE] else None
        return plot_attention(
            maps[0][1],
            translation.source_tokens,
            rows,
            path,
            title=f"{title}\n{what}, {caption}",
            window=window,
            axis_names=axes,
            p_gen=None if encoder_view else views.p_gen,
        )
    return plot_attention_grid(
        maps, translation.source_tokens, rows, path, columns=len(heads), title=f"{title}: {what}", axis_names=axes
    )
