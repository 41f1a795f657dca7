"""A Transformer run exported to CTranslate2 (OpenNMT's inference engine): its Python
specification API (``ctranslate2.specs.TransformerSpec``) filled with the run's weights, no
OpenNMT-py in between, saved (``ModelSpec.save``: model.bin, config.json, the vocabularies) with
the run's text pipeline (config.yaml, vocab.*.json, pipeline.json, the sentencepiece models), so
the folder is self-contained: ``attnseq translate``, ``evaluate``, ``serve`` and ``attnseq.load``
decode it (engines/ctranslate2_engine/translator.py), and CTranslate2 alone decodes its token strings.

How each option of attnseq's Transformer (config.TransformerConfig) is expressed (EXPRESSED; an
option or a positional encoding this module does not know is refused by name, never dropped):

- ``hidden_size``, ``ff_size``: the weights' shapes; ``layers``: num_layers of both stacks;
  ``heads``: num_heads (queries scaled by 1/sqrt(d_k), CTranslate2's default); the ReLU of
  attnseq's feed-forward: Activation.RELU; W_q, W_k, W_v of self-attention fused into one
  linear, W_k, W_v of cross-attention into another, as the specification lays them out;
- ``pre_norm``: pre_norm; a pre-norm stack ends in ``layer_norm``, a post-norm one has none
  (LN(x + f(x)) in each sublayer, as CTranslate2's post-norm layers); torch's epsilon 1e-5;
- ``positional``: the encodings table itself (``position_encodings.encodings``, added after the
  embeddings are scaled by sqrt(d_model), ``scale_embeddings``): ``learned``, its
  ``max_positions`` vectors; ``sinusoidal``, attnseq's table for ``positions`` positions, since
  CTranslate2's built-in sinusoid is another (halves concatenated, positions counted from 1);
- ``tie_embeddings``: the same matrices, which ``ModelSpec.optimize`` stores once (aliases);
- ``dropout``: nothing (off at inference);
- ``frontend``: nothing when unset; a run whose sources are files (images, audio: a frontend
  encodes their features) is refused, since CTranslate2's encoder reads token ids;
- ``copy``: nothing when false; a copying run (copy attention's p_gen and extended vocabulary)
  is refused, since the specification has no place for either.

The alignment CTranslate2 returns (``return_attention``) is set to attnseq's: the last layer's
cross-attention averaged over its heads (alignment_layer -1, alignment_heads 0: all of them).
The vocabularies keep attnseq's ids, its special tokens named as CTranslate2 and OpenNMT name
them: pad ``<blank>``, bos ``<s>`` (the decoder's start token), eos ``</s>``, unk ``<unk>``
(``<s#1>``, ... where the data has a token spelt as one of them; config.json names them).
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import yaml

from ..ctranslate2_library import import_ctranslate2
from ..errors import ConfigError, UserError
from ..files import write_folder
from ..runs import CONFIG_FILE, EXPORT_FILE, PIPELINE_FILES, checkpoint_path, read_checkpoint, read_run_config
from . import QUANTIZATIONS

# what each option of TransformerConfig becomes in the specification (see the docstring)
EXPRESSED = {
    "arch": "the Transformer specification",
    "hidden_size": "the weights' shapes",
    "layers": "num_layers of the encoder and the decoder",
    "heads": "num_heads",
    "ff_size": "the feed-forward's weights",
    "dropout": "nothing (off at inference)",
    "positional": "the position encodings table",
    "pre_norm": "pre_norm, and a final layer_norm on each pre-norm stack",
    "tie_embeddings": "the same matrices, stored once",
    "copy": "nothing when false (true is refused: the specification has no copy attention)",
    "frontend": "nothing when unset (a frontend, for sources that are files, is refused: CTranslate2 reads token ids)",
}
POSITIONAL = ("sinusoidal", "learned")  # model.positional: written out as a table of encodings
MIN_POSITIONS = 1024  # the sinusoidal table covers at least this many positions
# attnseq's special tokens (ids 0-3: pad, bos, eos, unk) as CTranslate2 names them
SPECIALS = {"pad": "<blank>", "bos": "<s>", "eos": "</s>", "unk": "<unk>"}
ARCHS = {
    "rnn": "a recurrent encoder-decoder",
    "memn2n": "a memory network (memn2n)",
    "ntm": "a Neural Turing Machine (ntm)",
    "han": "a hierarchical attention network (han)",
}


def check_exportable(config) -> None:
    """Raise a ConfigError naming the key when CTranslate2's Transformer specification cannot
    express the run ``config`` describes: a run of another engine or architecture, an option of
    the Transformer this exporter does not express, a positional encoding it does not know."""
    if config.engine != "torch":
        raise ConfigError(
            f"engine: {config.engine}: attnseq export reads the torch engine's Transformer runs "
            f"(this one has no torch weights)",
            key="engine",
        )
    model = config.model
    if model.arch != "transformer":
        what = ARCHS.get(model.arch, f"model.arch {model.arch}")
        raise ConfigError(
            f"model.arch: {model.arch}: CTranslate2's Transformer specification cannot express "
            f"{what}; only model.arch: transformer runs export to ctranslate2",
            key="model.arch",
        )
    for option in dataclasses.fields(model):
        if option.name not in EXPRESSED:
            raise ConfigError(
                f"model.{option.name}: CTranslate2's Transformer specification cannot express this "
                "option (the exporter maps " + ", ".join(EXPRESSED) + ")",
                key=f"model.{option.name}",
            )
    frontend = getattr(model, "frontend", None)
    if frontend:
        raise ConfigError(
            f"model.frontend: {getattr(frontend, 'name', frontend)}: CTranslate2's Transformer "
            "specification cannot express a frontend over files' features (its encoder reads token "
            "ids); decode this run with the torch engine",
            key="model.frontend",
        )
    if getattr(model, "copy", False):
        raise ConfigError(
            "model.copy: CTranslate2's Transformer specification cannot express copy attention (its "
            "generation probability p_gen and the source's words outside the vocabulary); decode a "
            "copying run with the torch engine",
            key="model.copy",
        )
    positional = getattr(model.positional, "name", model.positional)
    if positional not in POSITIONAL:
        raise ConfigError(
            f"model.positional: {positional}: CTranslate2's Transformer specification cannot express "
            f"it (the export writes {' or '.join(POSITIONAL)} encodings as a table)",
            key="model.positional",
        )


def special_names(*vocabs) -> dict[str, str]:
    """The names of the special tokens in the exported vocabularies: CTranslate2's (SPECIALS),
    unless a real token of ``vocabs`` is spelt the same (a word ``<s>``), when the special gets
    ``<s#1>`` (``#2``, ...) so that every name is one id."""
    real = {token for vocab in vocabs for token in vocab.itos[len(SPECIALS) :]}
    names = {}
    for role, name in SPECIALS.items():
        chosen, n = name, 0
        while chosen in real:
            n += 1
            chosen = f"{name[:-1]}#{n}>"
        names[role] = chosen
    return names


def vocabulary_tokens(vocab, names: dict[str, str]) -> list[str]:
    """CTranslate2's token list of an attnseq Vocab: token i is id i, the specials named ``names``."""
    return [names["pad"], names["bos"], names["eos"], names["unk"], *vocab.itos[len(SPECIALS) :]]


def positions_of(config) -> int:
    """How many positions the exported encodings hold: a learned table's ``max_positions``; for
    the sinusoid, enough for the run's longest source and output (decode.max_source_len,
    decode.max_len) and at least MIN_POSITIONS."""
    positional = config.model.positional
    if getattr(positional, "name", positional) == "learned":
        return int(positional.options["max_positions"])
    return max(MIN_POSITIONS, config.decode.max_source_len, config.decode.max_len)


def _linear(spec, weights: dict[str, np.ndarray], *names: str) -> None:
    """``spec`` (a LinearSpec) as the linear layers ``names`` stacked: their weights (out, in) and
    biases concatenated on the output side (one layer: itself)."""
    spec.weight = np.concatenate([weights[f"{name}.weight"] for name in names])
    spec.bias = np.concatenate([weights[f"{name}.bias"] for name in names])


def _norm(spec, weights: dict[str, np.ndarray], name: str) -> None:
    spec.gamma, spec.beta = weights[f"{name}.weight"], weights[f"{name}.bias"]


def _positions(spec, weights: dict[str, np.ndarray], stack: str, cfg, positions: int) -> None:
    if getattr(cfg.positional, "name", cfg.positional) == "learned":
        spec.encodings = weights[f"{stack}.embed.positions.embed.weight"]
    else:
        from ..nn.transformer.positional import sinusoidal_table

        spec.encodings = sinusoidal_table(positions, cfg.hidden_size).numpy()


def transformer_spec(cfg, weights: dict[str, np.ndarray], positions: int):
    """CTranslate2's TransformerSpec of attnseq's Transformer ``cfg`` (the model section of a
    checked config) with ``weights`` (every name of the model's state dict, tied ones included,
    as float32 arrays) and ``positions`` sinusoidal positions."""
    import_ctranslate2()  # its own OpenMP runtime (ctranslate2_library.import_ctranslate2), before its specs
    from ctranslate2.specs import common_spec
    from ctranslate2.specs import transformer_spec as specs

    spec = specs.TransformerSpec.from_config(
        cfg.layers,
        cfg.heads,
        pre_norm=cfg.pre_norm,
        activation=common_spec.Activation.RELU,
        alignment_layer=-1,
        alignment_heads=0,
    )
    spec.config.layer_norm_epsilon = 1e-5  # torch's nn.LayerNorm
    encoder, decoder = spec.encoder, spec.decoder
    encoder.embeddings[0].weight = weights["encoder.embed.tokens.weight"]
    decoder.embeddings.weight = weights["decoder.embed.tokens.weight"]
    _positions(encoder.position_encodings, weights, "encoder", cfg, positions)
    _positions(decoder.position_encodings, weights, "decoder", cfg, positions)
    if cfg.pre_norm:  # a pre-norm stack's last layer norm
        _norm(encoder.layer_norm, weights, "encoder.norm")
        _norm(decoder.layer_norm, weights, "decoder.norm")
    for i, layer in enumerate(encoder.layer):
        at = f"encoder.layers.{i}"
        _linear(layer.self_attention.linear[0], weights, *(f"{at}.self_attn.W_{w}" for w in "qkv"))
        _linear(layer.self_attention.linear[1], weights, f"{at}.self_attn.W_o")
        _norm(layer.self_attention.layer_norm, weights, f"{at}.attn_res.norm")
        _feed_forward(layer.ffn, weights, at)
    for i, layer in enumerate(decoder.layer):
        at = f"decoder.layers.{i}"
        _linear(layer.self_attention.linear[0], weights, *(f"{at}.self_attn.W_{w}" for w in "qkv"))
        _linear(layer.self_attention.linear[1], weights, f"{at}.self_attn.W_o")
        _norm(layer.self_attention.layer_norm, weights, f"{at}.self_res.norm")
        _linear(layer.attention.linear[0], weights, f"{at}.cross_attn.W_q")
        _linear(layer.attention.linear[1], weights, f"{at}.cross_attn.W_k", f"{at}.cross_attn.W_v")
        _linear(layer.attention.linear[2], weights, f"{at}.cross_attn.W_o")
        _norm(layer.attention.layer_norm, weights, f"{at}.cross_res.norm")
        _feed_forward(layer.ffn, weights, at)
    _linear(decoder.projection, weights, "decoder.generator")
    return spec


def _feed_forward(spec, weights: dict[str, np.ndarray], at: str) -> None:
    _linear(spec.linear_0, weights, f"{at}.ff.W_1")
    _linear(spec.linear_1, weights, f"{at}.ff.W_2")
    _norm(spec.layer_norm, weights, f"{at}.ff_res.norm")


def model_weights(run_dir: Path, config, checkpoint: str) -> dict[str, np.ndarray]:
    """The run's weights of ``checkpoint`` under every name of its model's state dict (tied
    embeddings under each of their names), as float32 arrays."""
    from ..data.pipeline import TextPipeline
    from ..nn.model import build_model, load_model_weights

    pipeline = TextPipeline.load(config.data, run_dir)
    model = build_model(config.model, len(pipeline.src_vocab), len(pipeline.tgt_vocab), pipeline.shares_vocab)
    path = checkpoint_path(run_dir, checkpoint)
    load_model_weights(model, read_checkpoint(path)[0], path)
    return {name: value.detach().float().numpy().copy() for name, value in model.state_dict().items()}


def export_ctranslate2(
    run_dir: str | Path,
    out: str | Path,
    quantization: str = "float32",
    checkpoint: str = "best",
    overwrite: bool = False,
) -> Path:
    """Export the Transformer run ``run_dir`` (its ``checkpoint``: best or last) to CTranslate2 in
    the folder ``out`` with weights of ``quantization`` (float32 or int8); returns the folder.

    The folder is built whole in a temporary folder and renamed into place (attnseq.files); a
    folder already there is refused without ``overwrite``, and replaced with it only when it is
    an earlier export (it holds export.json). A run CTranslate2 cannot express is a ConfigError
    naming the key (check_exportable); ctranslate2 missing is a UserError saying how to install it."""
    run_dir, out = Path(run_dir), Path(out)
    if quantization not in QUANTIZATIONS:
        raise UserError(f"quantization: expected one of {', '.join(QUANTIZATIONS)}, got {quantization!r}")
    config = read_run_config(run_dir)
    check_exportable(config)
    from ..nn.model import check_model

    config = dataclasses.replace(config, model=check_model(config.model))  # variants' options written out
    try:
        ctranslate2 = import_ctranslate2()
    except ImportError:
        raise UserError(
            "exporting to CTranslate2 needs the ctranslate2 package: pip install 'attnseq[ctranslate2]'"
        ) from None
    from ..data.pipeline import TextPipeline

    pipeline = TextPipeline.load(config.data, run_dir)
    positions = positions_of(config)
    spec = transformer_spec(config.model, model_weights(run_dir, config, checkpoint), positions)
    names = special_names(pipeline.src_vocab, pipeline.tgt_vocab)
    spec.register_source_vocabulary(vocabulary_tokens(pipeline.src_vocab, names))
    spec.register_target_vocabulary(vocabulary_tokens(pipeline.tgt_vocab, names))
    spec.config.unk_token, spec.config.bos_token, spec.config.eos_token = names["unk"], names["bos"], names["eos"]
    spec.config.decoder_start_token = names["bos"]
    spec.validate()
    spec.optimize(quantization=quantization)
    record = {
        "format": "ctranslate2",
        "quantization": quantization,
        "checkpoint": checkpoint_path(run_dir, checkpoint).stem,
        "run": str(run_dir.resolve()),
        "positions": positions,
        "ctranslate2": ctranslate2.__version__,
    }
    exported = dataclasses.replace(config, engine="ctranslate2")  # the folder says which engine decodes it
    files = {
        CONFIG_FILE: yaml.safe_dump(exported.to_dict(), sort_keys=False, allow_unicode=True),
        EXPORT_FILE: json.dumps(record, indent=1) + "\n",
        **{name: (run_dir / name).read_bytes() for name in PIPELINE_FILES if (run_dir / name).exists()},
    }
    return write_folder(
        out, files, lambda tmp: spec.save(str(tmp)), marker=EXPORT_FILE, inputs=[run_dir], overwrite=overwrite
    )
