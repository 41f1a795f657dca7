"""Configuration: dataclasses are the single source of defaults; YAML and ``--set`` only override.

A config has the sections ``data``, ``model``, ``train`` and ``decode`` and the ``engine``.
The model section's dataclass is chosen by ``model.arch`` (RNNConfig, TransformerConfig, and
the memory architectures' MemN2NConfig, NTMConfig, HANConfig), so a key that does not apply to the architecture is an error. Designs that come in variants
(``model.cell``, ``model.encoder``, ``model.decoder``, ``model.attention``, ``model.init``,
``model.positional``, ``train.optimizer``, ``train.schedule``, ``data.tokenizer``) are named
by a string or by a mapping with the variant's own options::

    attention: general
    attention: {name: local_p, window: 5}

An unknown key, a value of the wrong type or out of range, or an unknown choice raises a
ConfigError whose message names the key (``model.attention.window``) and what it accepts.
Model and training variants are checked by the engine that runs them
(``attnseq.engines.engine_for(config).check(config)``); the rest here, when the config is read.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from .data.inputs import INPUTS, build_input
from .data.pipeline import UNICODE_FORMS
from .data.sources import SOURCES
from .data.tokenizers import TOKENIZERS
from .errors import ConfigError
from .schema import Variant, build, choice, number, plain, tagged, variant
from .threads import MAX_THREADS

TIES = ("none", "decoder", "all")  # model.tie_embeddings: which embeddings are the output layer's matrix


@dataclass
class DataConfig:
    """Where the parallel text is and how it becomes token ids."""

    dir: str = ""  # folder with train.tsv, dev.tsv, test.tsv; fills the three paths below
    # tsv: source<TAB>target files.  book: data.train is one file of the book's question_answer
    # lines (date.txt, addition.txt), split, tokenized and (engine numpy) trained as the book does
    format: str = choice("tsv", SOURCES)
    # what the source column holds: text (tokenised by data.tokenizer), or a file to read
    # (image: {name: image, height: 32}), relative to the TSV's folder (data/inputs/)
    input: Variant = variant("text", INPUTS)
    train: str = ""
    dev: str = ""
    test: str = ""
    tokenizer: Variant = variant("char", TOKENIZERS)  # char, word, {name: sentencepiece, vocab_size: ...}
    strip: bool = True  # strip surrounding whitespace; the book's data keeps padding spaces
    lowercase: bool = False
    # Unicode normal form of both sides at training and inference alike (nfc: composed, so
    # "é" typed either way is one character; nfkc also folds compatibility forms; none: as given)
    unicode: str = choice("nfc", UNICODE_FORMS)
    reverse_source: bool = False  # Sutskever's and the book's reversal trick
    # training pairs longer than this (tokens) are dropped, with a warning; 0 keeps all
    max_source_len: int = number(256, 0)
    max_target_len: int = number(256, 0)
    min_freq: int = number(1, 1)
    max_vocab: int = number(0, 0)  # 0: no limit
    # one vocabulary for source and target (built from both sides): a piece seen only in sources
    # can be written, and model.tie_embeddings: all may make every embedding one matrix. With
    # sentencepiece it needs the joint model (data.tokenizer.joint: true)
    shared_vocab: bool = False
    # the training pairs are tokenised once into a store kept here (data.prepare), keyed by the
    # data's content and these settings; "": $ATTNSEQ_CACHE, else $XDG_CACHE_HOME/attnseq, else ~/.cache/attnseq
    cache: str = ""
    processes: int = number(0, 0)  # processes that tokenise the training data; 0: one per CPU

    def __post_init__(self):
        build_input(self).check(self)
        tokenizer = self.tokenizer
        if self.shared_vocab and tokenizer.name == "sentencepiece" and not tokenizer.options.get("joint", True):
            raise ConfigError(
                "data.shared_vocab: the two sides have their own sentencepiece models "
                "(data.tokenizer.joint: false), and the target's cannot write the source's pieces; "
                "set data.tokenizer.joint: true for one vocabulary",
                key="data.shared_vocab",
            )


@dataclass
class RNNConfig:
    """A recurrent encoder-decoder (``model.arch: rnn``): which cell, encoder, decoder design
    and attention scorer, and their sizes."""

    arch: str = choice("rnn", ("rnn",))
    embed_size: int = number(64, 1)
    hidden_size: int = number(128, 1)  # a bidirectional encoder gives each direction half
    cell: Variant = variant("lstm")  # lstm, gru, rnn, mingru, lstm_peephole, {name: lstm_proj, ...}
    encoder: Variant = variant("stacked")  # {name: stacked, bidirectional: true}, residual, gnmt
    encoder_layers: int = number(1, 1)
    decoder: Variant = variant("luong")  # {name: luong, input_feeding: true}, bahdanau, book, ...
    decoder_layers: int = number(1, 1)
    attention: Variant | None = variant(None)  # the scorer of an attending decoder; unset: general
    bridge: str = choice("linear", ("linear", "copy", "zero"))  # encoder final state -> decoder h0
    dropout: float = number(0.0, 0.0, 1.0, high_open=True)
    # one matrix for embeddings and output layer (Press & Wolf 2017): none; decoder (its embedding
    # is the output layer: needs embed_size = the output features, e.g. hidden_size for luong and
    # bahdanau); all (the source embedding too: needs data.shared_vocab). false/true, the spellings
    # before, mean none/decoder
    tie_embeddings: str | bool = choice("none", TIES, booleans=True, false_means="none")
    init: Variant = variant("default")  # default (torch's), {name: uniform, range: 0.1}, book
    # the encoder of a source that is a file (data.input: image): {name: conv, positions: rows}
    # (nn/frontends) in place of model.encoder; unset: the input kind's own (conv for an image)
    frontend: Variant | None = variant(None)
    # copy attention (See et al. 2017's pointer-generator): an attending decoder mixes its
    # vocabulary distribution with the attention over the source, p_gen learned per step, so it
    # can write source tokens outside its vocabulary (nn/copy.py)
    copy: bool = False
    # coverage (See et al. 2017): the sum of the earlier attention enters the concat scorer, and
    # the loss adds coverage_loss_weight x sum_t sum_i min(a_t,i, c_t,i)
    coverage: bool = False
    coverage_loss_weight: float = number(1.0, 0.0)


@dataclass
class TransformerConfig:
    """The Transformer (``model.arch: transformer``): d_model = ``hidden_size``, ``layers``
    encoder and as many decoder layers, ``heads`` heads, a feed-forward of ``ff_size``."""

    arch: str = choice("transformer", ("transformer",))
    hidden_size: int = number(128, 1)  # d_model
    layers: int = number(3, 1)
    heads: int = number(4, 1)
    ff_size: int = number(1024, 1)
    dropout: float = number(0.0, 0.0, 1.0, high_open=True)
    positional: Variant = variant("sinusoidal")  # sinusoidal, {name: learned, max_positions: 1024}
    pre_norm: bool = True  # layer norm before each sublayer (x + f(LN(x))); false: the paper's
    # one matrix for embeddings and output layer (Press & Wolf 2017): none; decoder (the decoder's
    # embedding is the output layer); all (the encoder's embedding too: needs data.shared_vocab).
    # false/true, the spellings before, mean none and decoder, or all where the vocabulary is shared
    tie_embeddings: str | bool = choice("none", TIES, booleans=True, false_means="none")
    copy: bool = False  # copy attention over the last layer's cross-attention (averaged over heads)
    # the source encoder's input layer for a source that is a file (data.input: image), its
    # encoder layers run over the cells it gives (nn/frontends); unset: the input kind's own
    frontend: Variant | None = variant(None)


@dataclass
class MemN2NConfig:
    """An end-to-end memory network (``model.arch: memn2n``, Sukhbaatar et al. 2015): the source
    is a story, sentences ended by ``separator``, then a question; ``hops`` soft reads of the
    story's sentences answer it with one word (nn/memory_networks/memn2n.py)."""

    arch: str = choice("memn2n", ("memn2n",))
    embed_size: int = number(20, 1)  # d: every embedding and the internal state u
    hops: int = number(3, 1)  # K
    memory_size: int = number(50, 1)  # the most recent sentences kept in memory
    tying: Variant = variant("adjacent")  # adjacent (A^k+1 = C^k, B = A^1, W^T = C^K), layerwise (H)
    sentence: Variant = variant("position")  # position (PE: l_kj weights), bag (bag of words)
    temporal: bool = True  # temporal encoding T_A(i), T_C(i) of each sentence's age
    separator: str = "."  # the source token that ends a story sentence; after the last: the question


@dataclass
class NTMConfig:
    """A Neural Turing Machine (``model.arch: ntm``, Graves et al. 2014): an LSTM or feed-forward
    controller with read and write heads on an N x M memory; it writes while reading the source and keeps
    reading and writing while it emits the target (nn/memory_networks/ntm.py)."""

    arch: str = choice("ntm", ("ntm",))
    embed_size: int = number(16, 1)  # input symbols' embedding
    hidden_size: int = number(100, 1)  # the controller's units
    # lstm: a recurrent controller (the paper's copy); feedforward: one tanh layer over [x_t; r_t-1],
    # the machine's only state its memory and heads (the paper's priority sort)
    controller: str = choice("lstm", ("lstm", "feedforward"))
    memory_locations: int = number(128, 1)  # N
    memory_width: int = number(20, 1)  # M
    read_heads: int = number(1, 1)
    write_heads: int = number(1, 1)
    shift_range: int = number(1, 0)  # r: the location shift s is a distribution over -r..r
    # a source token of 0s and 1s ("01101001") also enters as its bits (the paper's input vectors),
    # beside its learned embedding
    bit_inputs: bool = True
    # the inputs while emitting: false the paper's (a delimiter, then blank inputs); true the
    # previous output symbol, as a seq2seq decoder is fed
    feed_outputs: bool = False


@dataclass
class HANConfig:
    """A hierarchical attention network (``model.arch: han``, Yang et al. 2016): a bidirectional
    recurrent encoder with attention over the words of each sentence, another over the sentences,
    and a classifier whose answer is one target token (nn/memory_networks/han.py)."""

    arch: str = choice("han", ("han",))
    embed_size: int = number(64, 1)
    hidden_size: int = number(50, 1)  # units per direction of the word and sentence encoders
    cell: Variant = variant("gru")  # the paper's GRU; any model.cell
    attention_size: int = number(0, 0)  # u_it, u_i and the context vectors; 0: 2 * hidden_size
    dropout: float = number(0.0, 0.0, 1.0, high_open=True)
    separator: str = "."  # the source token that ends a sentence
    # how the annotations are pooled, at both levels: attention the paper's (learned context
    # vectors u_w, u_s); mean the masked average of the annotations (the paper's averaging baseline)
    pooling: str = choice("attention", ("attention", "mean"))


MODEL_CONFIGS = {
    "rnn": RNNConfig,
    "transformer": TransformerConfig,  # model.arch -> its settings
    "memn2n": MemN2NConfig,
    "ntm": NTMConfig,
    "han": HANConfig,
}
ModelConfig = RNNConfig | TransformerConfig | MemN2NConfig | NTMConfig | HANConfig


@dataclass
class TrainConfig:
    """The optimisation loop."""

    epochs: int = number(10, 1)
    max_steps: int = number(0, 0)  # stop after this many updates; 0: no limit
    max_minutes: float = number(0.0, 0.0)  # stop after this much wall-clock training; 0: no limit
    batch_size: int = number(64, 1)  # sentences per batch (at most, with batch_tokens)
    # > 0: batches of sentences of similar length holding up to this many tokens, padding
    # included (sentences x the longer side); batch_size still caps the sentences
    batch_tokens: int = number(0, 0)
    optimizer: Variant = variant("adam")  # {name: adam, betas: [0.9, 0.999], eps: 1e-8}, sgd
    lr: float = number(1e-3, 0.0, 1e6, low_open=True)  # peak rate with the noam schedule
    weight_decay: float = number(0.0, 0.0)
    schedule: Variant = variant(
        "constant"
    )  # constant, {name: noam, warmup_steps: 4000}, {name: plateau, decay: 0.5, patience: 0}
    clip_norm: float = number(5.0, 0.0)  # global gradient-norm clip; 0: none
    label_smoothing: float = number(0.0, 0.0, 1.0, high_open=True)
    accumulate: int = number(1, 1)  # gradient accumulation: batches per update
    seed: int = number(1, 0, 2**32 - 1)  # NumPy's generators take seeds below 2**32
    eval_every: int = number(0, 0)  # evaluate on dev every N updates; 0: at the end of each epoch
    patience: int = number(0, 0)  # stop after this many evaluations without a new best; 0: never
    # with patience, the plateau rule: an evaluation renews the patience only when its select_by
    # metric beats the one that last renewed it by more than min_delta (in the metric's units:
    # exact match a fraction, BLEU points), or, the metric no lower, its dev loss is lower than
    # that one's by more than the fraction min_loss_delta (and by more than 1e-4 nats a token:
    # train.loop.LOSS_FLOOR), save where the metric is at its highest (exact match 100%: there
    # a falling loss only makes the model surer of right outputs); both 0: any new best renews it
    min_delta: float = number(0.0, 0.0)
    min_loss_delta: float = number(0.0, 0.0, 1.0)
    # keep the weights of the last N evaluations in RUN/checkpoints/ (what attnseq average
    # averages; older ones are removed); 0: keep none (best and last only)
    keep_checkpoints: int = number(0, 0)
    # stop once an evaluation's dev exact match reaches this fraction (1.0: every dev sentence
    # right, what attnseq demo asks); 0: no target
    target_exact_match: float = number(0.0, 0.0, 1.0)
    eval_max_sentences: int = number(2000, 1)  # dev sentences decoded for the accuracy during training
    # the dev metric that selects best.safetensors, counts evaluations for train.patience and, with
    # the plateau schedule, decays the rate (ties broken by the dev loss); auto: the metric the run
    # reports for its task, bleu where the dev references are text (4 words or more on average),
    # else exact_match
    select_by: str = choice("exact_match", ("exact_match", "loss", "bleu", "chrf", "token_accuracy", "auto"))
    device: str = choice("cpu", ("cpu", "cuda", "auto"))
    # the products' precision: auto trains in bfloat16 (autocast) where it is faster (a GPU, a CPU with
    # AMX), else in float32; bf16 asks for it and warns where it does not pay; fp32 never autocasts
    precision: str = choice("auto", ("auto", "fp32", "bf16"))
    threads: int = number(0, 0, MAX_THREADS)  # torch intra-op threads; 0: torch's default
    # torch.compile the training step; the first update's time, compilation included, is logged.
    # Needs a C++ compiler on a CPU. Slower than eager on the CPU presets so far (graph breaks at
    # packed sequences, a recompilation per new length): docs/benchmarks.md says by how much
    compile: bool = False
    bucket: bool = True  # batch sentences of similar length together
    log_every: int = number(50, 0)  # updates between metrics-log lines; 0: none
    progress: bool = True  # show a progress bar


DECODE_PRECISIONS = ("fp32", "int8", "bf16")  # decode.precision


@dataclass
class DecodeConfig:
    """How outputs are searched for at evaluation and translation time."""

    beam_size: int = number(1, 1)  # 1: greedy search
    n_best: int = number(1, 1)  # hypotheses returned per input, at most beam_size
    length_penalty: float = number(0.0, 0.0)  # GNMT alpha; 0: none
    max_len: int = number(200, 1)  # absolute cap on output tokens
    max_len_ratio: float = number(2.0, 0.0)  # cap relative to the source length
    max_len_offset: int = number(10, 0)  # cap = ratio * source length + offset
    batch_size: int = number(128, 1)
    max_source_len: int = number(1024, 1)  # longer inputs are cut to this many tokens, with a warning
    # the arithmetic of a loaded model's products: fp32, or int8 (the torch engine on a CPU with
    # int8 dot products, VNNI or AMX; elsewhere one warning and fp32): int8 weights for the linear
    # layers, the output layer and the recurrent cells, activations scaled per call (nn/int8.py).
    # The model is quantised once when it is loaded; training's dev evaluations decode in fp32.
    # bf16: the torch engine's products autocast to bfloat16 where they pay (hardware.bf16_pays:
    # AMX CPUs, GPUs; elsewhere one warning and fp32); CTranslate2 computes in bfloat16
    precision: str = choice("fp32", DECODE_PRECISIONS)

    def __post_init__(self):
        if self.n_best > self.beam_size:
            raise ConfigError(
                f"decode.n_best ({self.n_best}) must not exceed decode.beam_size ({self.beam_size})",
                key="decode.n_best",
            )


@dataclass
class Config:
    """A whole experiment."""

    engine: str = "torch"  # torch or numpy (attnseq.engines)
    data: DataConfig = field(default_factory=DataConfig)
    model: ModelConfig = tagged(RNNConfig, "arch", MODEL_CONFIGS)
    train: TrainConfig = field(default_factory=TrainConfig)
    decode: DecodeConfig = field(default_factory=DecodeConfig)

    def to_dict(self) -> dict[str, Any]:
        """A plain dict (variants as names or mappings, tuples as lists) that YAML can write
        and ``from_dict`` reads back."""
        return plain(self)


def from_dict(values: dict[str, Any] | None) -> Config:
    """A Config from nested dicts, every key and value checked."""
    return build(Config, values or {})


def parse_override(text: str) -> tuple[list[str], Any]:
    """``"model.hidden_size=512"`` -> (["model", "hidden_size"], 512); the value is read as YAML."""
    if "=" not in text:
        raise ConfigError(f"--set {text}: expected key=value, e.g. model.hidden_size=512", key=None)
    key, raw = text.split("=", 1)
    path = [p for p in key.strip().split(".") if p]
    if not path:
        raise ConfigError(f"--set {text}: empty key", key=None)
    try:
        value = yaml.safe_load(raw) if raw.strip() else ""
    except yaml.YAMLError:
        value = raw
    return path, value


def apply_overrides(values: dict[str, Any], overrides: list[str]) -> dict[str, Any]:
    """``values`` with each ``key=value`` of ``overrides`` set (nested dicts created as needed).

    Setting an option of a variant given by name alone (``attention: local_m``, then
    ``model.attention.window=3``) turns it into the mapping form first."""
    for text in overrides:
        path, value = parse_override(text)
        node = values
        for part in path[:-1]:
            child = node.setdefault(part, {})
            if isinstance(child, str):  # a variant named in short form
                child = node[part] = {"name": child}
            if not isinstance(child, dict):
                raise ConfigError(f"{'.'.join(path)}: {part} is not a section", key=".".join(path))
            node = child
        node[path[-1]] = value
    return values


def read_yaml(path: str | Path) -> dict[str, Any]:
    """The mapping in a YAML config file; a ConfigError naming the file (and line) otherwise: a
    file that cannot be read, is not YAML, is empty (it would train every default silently) or
    not a mapping, or gives a key twice (YAML would keep the last one silently)."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as err:
        raise ConfigError(f"{path}: cannot read config ({err.strerror})", key=None) from None
    except UnicodeDecodeError:
        raise ConfigError(f"{path}: not a YAML config (not UTF-8 text)", key=None) from None
    loader = None
    try:
        loader = yaml.SafeLoader(text)  # (it refuses a character YAML does not allow, a NUL, here)
        node = loader.get_single_node()
        if node is not None:
            repeated_key(node, path)
        values = loader.construct_document(node) if node is not None else None
    except yaml.reader.ReaderError as err:  # (a YAMLError without a mark: its position is a character's)
        line = text.count("\n", 0, err.position) + 1
        raise ConfigError(f"{path}: line {line} invalid YAML (a character YAML does not allow)", key=None) from None
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        where = f" line {mark.line + 1}" if mark else ""
        raise ConfigError(f"{path}:{where} invalid YAML", key=None) from None
    finally:
        if loader is not None:
            loader.dispose()
    if values is None:
        raise ConfigError(
            f"{path}: an empty config; give the settings that differ from the defaults (data, "
            "model, train, decode), or leave the config out for the recommended preset",
            key=None,
        )
    if not isinstance(values, dict):
        raise ConfigError(f"{path}: expected a mapping of sections (data, model, train, decode)", key=None)
    return values


def repeated_key(node: yaml.Node, path: Path, prefix: str = "", visited: set[int] | None = None) -> None:
    """Raise a ConfigError naming the dotted key, the file and both lines when a mapping in the
    YAML ``node`` (of the file ``path``) gives a key twice."""
    visited = set() if visited is None else visited
    if id(node) in visited:  # an alias of a node already checked (or of its own parent)
        return
    visited.add(id(node))
    if isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            repeated_key(item, path, f"{prefix}{index}.", visited)
    if not isinstance(node, yaml.MappingNode):
        return
    seen: dict[tuple[str, str], int] = {}
    for key_node, value_node in node.value:
        key = str(key_node.value) if isinstance(key_node, yaml.ScalarNode) else "?"
        line = key_node.start_mark.line + 1
        if isinstance(key_node, yaml.ScalarNode) and key != "<<":
            if (key_node.tag, key) in seen:
                raise ConfigError(
                    f"{path}:{line}: {prefix}{key} is given twice (first on line "
                    f"{seen[key_node.tag, key]}); keep one of them",
                    key=f"{prefix}{key}",
                )
            seen[key_node.tag, key] = line
        repeated_key(value_node, path, f"{prefix}{key}.", visited)


def load_config(path: str | Path | Config | None = None, overrides: list[str] | None = None) -> Config:
    """A Config from a YAML file (or the defaults, or a Config) with ``--set`` overrides applied."""
    if isinstance(path, Config):
        values = path.to_dict()
    else:
        values = read_yaml(path) if path is not None else {}
    return from_dict(apply_overrides(values, overrides or []))


def save_config(config: Config, path: str | Path) -> None:
    """Write ``config`` as YAML (atomically)."""
    from .utils import atomic_write_text

    atomic_write_text(path, yaml.safe_dump(config.to_dict(), sort_keys=False, allow_unicode=True))
