"""Weights between the engines: the book's numpy models and the torch designs they equal
(``model.decoder`` none / peeky / book with ``model.bridge: copy`` and an LSTM)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def _torch_gates(a: np.ndarray) -> np.ndarray:
    """Gate blocks along the last axis from the book's order f, g, i, o to torch's i, f, g, o."""
    f, g, i, o = np.split(a, 4, axis=-1)
    return np.concatenate([i, f, g, o], axis=-1)


def _book_gates(a: np.ndarray) -> np.ndarray:
    """Gate blocks along the last axis from torch's order i, f, g, o to the book's f, g, i, o."""
    i, f, g, o = np.split(a, 4, axis=-1)
    return np.concatenate([f, g, i, o], axis=-1)


# numpy layer and parameter -> torch parameter ("{direction}" is "_reverse" for a BiLSTM's bwd)
_TORCH_NAMES = {
    ("embed", "W"): "embed.weight",
    ("lstm", "Wx"): "rnn.rnn.weight_ih_l0{direction}",
    ("lstm", "Wh"): "rnn.rnn.weight_hh_l0{direction}",
    ("lstm", "b"): "rnn.rnn.bias_ih_l0{direction}",
    ("affine", "W"): "generator.weight",
    ("affine", "b"): "generator.bias",
}


def _torch_name(name: str) -> str:
    """``encoder.lstm.bwd.Wx`` -> ``encoder.rnn.rnn.weight_ih_l0_reverse`` and so on."""
    part, layer, *direction, leaf = name.split(".")
    suffix = "_reverse" if direction == ["bwd"] else ""
    return f"{part}." + _TORCH_NAMES[layer, leaf].format(direction=suffix)


def numpy_to_torch_state(named_params: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """A torch state dict (arrays; ``torch.from_numpy`` them to load) of the torch model with the
    same design: LSTM weights transposed to (4H, in) with the gates reordered to i, f, g, o,
    the bias in ``bias_ih`` and zeros in ``bias_hh``; output layer weight = W.T.

    Works for every numpy model (baseline, peeky, attention, bi-attention) and its torch
    counterpart (``model.decoder`` none / peeky / book with ``model.bridge: copy``,
    ``model.cell: lstm``)."""
    state = {}
    for name, value in named_params.items():
        target, leaf = _torch_name(name), name.rsplit(".", 1)[1]
        if ".lstm." in name:
            value = _torch_gates(value)
            if leaf == "b":
                state[target.replace("bias_ih", "bias_hh")] = np.zeros_like(value)
        state[target] = np.ascontiguousarray(value.T if value.ndim == 2 and "embed" not in name else value)
    return state


def torch_to_numpy_state(state: dict, names: Sequence[str]) -> dict[str, np.ndarray]:
    """The inverse of ``numpy_to_torch_state`` for the numpy parameter ``names`` (a model's
    ``param_names``): LSTM biases become bias_ih + bias_hh."""
    arrays = {k: np.asarray(v.detach().cpu() if hasattr(v, "detach") else v) for k, v in state.items()}
    params = {}
    for name in names:
        source = _torch_name(name)
        value = arrays[source]
        if name.endswith(".b") and ".lstm." in name:
            value = value + arrays[source.replace("bias_ih", "bias_hh")]
        if value.ndim == 2 and "embed" not in name:
            value = value.T
        params[name] = np.ascontiguousarray(_book_gates(value) if ".lstm." in name else value)
    return params
