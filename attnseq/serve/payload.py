"""What the page receives: a run's description and a translation with every attention view,
as JSON-ready dicts (lists of floats rounded to 4 decimals)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..translator import Translation, Translator

DIGITS = 4


def matrix(a: np.ndarray | None) -> list | None:
    """Nested lists of ``a`` rounded to 4 decimals (None stays None)."""
    return None if a is None else np.round(np.asarray(a, dtype=np.float64), DIGITS).tolist()


# What a run's description names: the designs a config chooses by name, then its sizes (a model
# whose sources are files is encoded by its frontend, not model.encoder).
DESIGNS = ("encoder", "frontend", "decoder", "attention", "cell", "positional")
SIZES = ("layers", "heads", "hidden_size")


def _named(value) -> str:
    """A variant as its name with the options that shape attention (``local_p (window 5)``)."""
    name = getattr(value, "name", value)
    options = getattr(value, "options", None) or {}
    shown = ", ".join(f"{k} {options[k]}" for k in ("window", "heads") if k in options)
    return f"{name} ({shown})" if shown else str(name)


def describe(translator: Translator) -> dict[str, Any]:
    """The model in a few words for the page: engine, architecture, its designs and sizes
    (``rnn · stacked encoder, luong decoder, general attention, gru cell, hidden size 128``),
    and the attention scorer's name (local attention draws a window)."""
    config = translator.config
    model = config.model
    shown = [key for key in DESIGNS if getattr(model, key, None) is not None]
    if "frontend" in shown and "encoder" in shown:
        shown.remove("encoder")
    designs = [f"{_named(getattr(model, key))} {key}" for key in shown]
    sizes = [f"{key.replace('_', ' ')} {getattr(model, key)}" for key in SIZES if hasattr(model, key)]
    engine = [] if config.engine == "torch" else [f"{config.engine} engine"]
    attention = getattr(model, "attention", None)
    return {
        "engine": config.engine,
        "arch": model.arch,
        "attention": getattr(attention, "name", attention) or "",
        "description": f"{model.arch} · " + ", ".join(designs + sizes + engine),
    }


def run_payload(name: str, path: str, translator: Translator, max_beam: int) -> dict[str, Any]:
    """A loaded run as GET /runs lists it."""
    engine_beam = translator.max_beam_size or max_beam
    return {
        "name": name,
        "path": path,
        **describe(translator),
        "input": translator.pipeline.inputs.name,
        "max_beam": min(max_beam, engine_beam),
        "default_beam": translator.config.decode.beam_size,
    }


def spectrogram(translator: Translator, source: str | bytes) -> list:
    """The log-mel frames (frames, bands) of an audio ``source`` (a path, or an upload's bytes) as
    the run read them, rounded to 2 decimals: what the page draws under the attention."""
    read = translator.pipeline.read_file
    features = read("upload", 0, source) if isinstance(source, bytes) else read(source)
    return np.round(np.asarray(features.ids, dtype=np.float64), 2).tolist()


def translation_payload(
    run: str, translator: Translator, translation: Translation, with_attention: bool
) -> dict[str, Any]:
    """One source's n-best list and its pieces outside the run's vocabulary (``unknown``); with
    attention each hypothesis carries its alignment (T_out, S),
    its cross-attention by layer and head (layers, heads, T_out, S), its local window and a
    copying model's p_gen per output step (T_out,) where the model has them, and the source its
    encoder self-attention (layers, heads, S, S). A source that is a file (data.input image) has
    no tokens; ``source_shape`` (data.inputs.SourceShape) says where its S positions lie on it, and
    audio's ``spectrogram`` (frames, bands) is what the attention is drawn over."""
    views, encoder = (
        translator.attention_views(translation) if with_attention else ([None] * len(translation.outputs), None)
    )
    hypotheses = []
    for k, (output, score, tokens) in enumerate(
        zip(translation.outputs, translation.scores, translation.output_tokens)
    ):
        hypothesis: dict[str, Any] = {"output": output, "score": round(float(score), DIGITS), "output_tokens": tokens}
        if with_attention:
            v = views[k]
            hypothesis["attention"] = matrix(translation.attention[k])
            hypothesis["cross_attention"] = matrix(v.cross)
            hypothesis["window"] = (
                None
                if v.window is None
                else {"width": v.width, "bounds": v.window.tolist(), "centres": matrix(v.centres)}
            )
            hypothesis["p_gen"] = matrix(v.p_gen)
        hypotheses.append(hypothesis)
    source = translation.source if isinstance(translation.source, str) else "upload"  # a file's bytes
    shape = None if translation.shape is None else translation.shape.as_dict()
    payload: dict[str, Any] = {
        "run": run,
        "source": source,
        "source_tokens": translation.source_tokens,
        "unknown": translation.unknown,
        "source_shape": shape,
        "cut": translation.cut,
        "empty": translation.empty,
        "hypotheses": hypotheses,
    }
    if with_attention and shape is not None and shape["kind"] == "audio":  # what the page draws the attention over
        payload["spectrogram"] = spectrogram(translator, translation.source)
    if with_attention:
        payload["encoder_attention"] = matrix(encoder)
    return payload
