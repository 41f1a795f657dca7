"""``attnseq plot memory RUN --text ...``: the picture of how a memory architecture read the
text, for a torch run of ``memn2n`` (its hops over the story, viz/hops.py), ``ntm`` (its write
and read weightings over time, viz/tape.py) or ``han`` (its word and sentence attention,
viz/document.py). This module runs the model and hands the weights to the drawing."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ..errors import UserError
from .document import plot_document
from .hops import plot_hops
from .tape import plot_tape


def _reading(translator, text: str):
    """(the model's answer Translation, the encoder's Memory of ``text``, source ids (1, S))."""
    import torch

    from ..data.batching import SourceBatch

    ids = translator.pipeline.encode_source(text) or [translator.pipeline.src_vocab.unk_id]
    src = torch.tensor([ids])
    with torch.no_grad():
        memory = translator.model.encode(SourceBatch(src, torch.ones_like(src, dtype=torch.bool)))
    return translator.search([text])[0], memory, src


def _sentences(tokens: list[str], separator: str) -> tuple[list[list[str]], list[str]]:
    """(the sentences' words, the words after the last separator)."""
    sentences, current = [], []
    for token in tokens:
        if token == separator:
            sentences.append(current)
            current = []
        else:
            current.append(token)
    return sentences, current


def hops_picture(translator, text: str, path) -> Path:
    """The memory network's hops over the story's sentences."""
    result, reading, _ = _reading(translator, text)
    story, question = _sentences(result.source_tokens, translator.config.model.separator)
    weights = reading.sentences[0].numpy()  # (K, N): the most recent N sentences
    kept = story[len(story) - weights.shape[1] :] if story else [""]
    return plot_hops(weights, [" ".join(s) for s in kept], " ".join(question), result.outputs[0], path)


def tape_picture(translator, text: str, path) -> Path:
    """The NTM's write and read weightings over the source and the output it emits."""
    import torch

    result, tape, _ = _reading(translator, text)
    model, pipeline = translator.model, translator.pipeline
    output = pipeline.tgt_vocab.encode(result.output_tokens[0])
    tgt_in = torch.tensor([[pipeline.tgt_vocab.bos_id] + output])
    with torch.no_grad():
        weights = model.decoder.trace(tape, tgt_in)[0]  # (T, R + W, N)
    R = model.decoder.cell.R
    writes = np.concatenate([tape.writing[0].mean(1).numpy(), weights[:, R:].mean(1).numpy()])  # (S + T, N)
    reads = np.concatenate([tape.reading[0].mean(1).numpy(), weights[:, :R].mean(1).numpy()])
    return plot_tape(
        result.source_tokens,
        result.output_tokens[0],
        writes,
        reads,
        path,
        title=f"{len(result.source_tokens)} in, {len(result.output_tokens[0])} out",
    )


def document_picture(translator, text: str, path) -> Path:
    """The HAN's sentence and word attention over the document."""
    result, reading, _ = _reading(translator, text)
    sentences, last = _sentences(result.source_tokens, translator.config.model.separator)
    sentences = sentences + ([last] if last else [])
    return plot_document(
        sentences, reading.sentences[0, 0].numpy(), reading.words[0].numpy(), path, title=f"class: {result.outputs[0]}"
    )


PICTURES = {"memn2n": hops_picture, "ntm": tape_picture, "han": document_picture}  # model.arch -> picture


def plot_memory(translator, text: str, path: str | Path) -> Path:
    """Write the picture of how the run's model reads ``text`` to ``path`` (PNG); returns the path."""
    arch = getattr(translator.config.model, "arch", None)
    if arch not in PICTURES or not hasattr(translator, "model"):
        raise UserError(
            f"plot memory: this is a {translator.config.engine} {arch} run; the memory pictures "
            f"are of torch {', '.join(PICTURES)} runs (for others: plot attention)"
        )
    return PICTURES[arch](translator, text, path)
