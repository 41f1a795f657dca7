"""Subword tokenization with sentencepiece (Kudo & Richardson 2018), trained on the run's data.

The model is trained on a sample of the training text (``max_sentences`` of them, drawn by a
seeded reservoir as the text streams past, so a corpus of any size is sampled in memory that
holds the sample alone) and stored in the run folder as ``spm.<side>.model`` (side: "joint",
"source" or "target"). sentencepiece can sample by itself (``input_sentence_size`` with
``shuffle_input_sentence``), but from text files of one sentence a line (not a TSV's pairs) and
with a seed of its own; sampling here keeps the sample, and so the model, the one a smaller
corpus gave, and reads the pairs where they are. Text is not normalised
(``identity`` rule), so outputs keep the training data's typography (… „ “ and non-breaking
spaces); runs of spaces are collapsed. Pieces are mapped to ids by the run's Vocab, which
holds the special tokens.
"""

from __future__ import annotations

import logging
import random
import re
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from ..errors import ConfigError, DataError
from ..progress import StepProgress
from ..schema import choice, number
from ..utils import atomic_write_bytes
from .tokenizers import TOKENIZERS, Tokenizer

log = logging.getLogger(__name__)


def model_path(run_dir: str | Path, side: str) -> Path:
    """Where the sentencepiece model of ``side`` lives in a run folder."""
    return Path(run_dir) / f"spm.{side}.model"


def sample_sentences(texts: Iterable[str], limit: int, seed: int = 0) -> list[str]:
    """At most ``limit`` non-blank texts (0: all), a deterministic uniform sample kept in corpus
    order, drawn as ``texts`` stream past (reservoir sampling, Vitter's algorithm R, with
    ``random.Random(seed)``): memory holds the sample, never the texts. All of them, in order,
    when there are no more than ``limit``."""
    rng = random.Random(seed)
    kept: list[tuple[int, str]] = []  # (position among the non-blank texts, text)
    seen = 0
    with StepProgress("sentencepiece: sampling the training text", unit="sentence", scale=True) as progress:
        for text in progress.over(texts):
            if not text.strip():
                continue
            if not limit or seen < limit:
                kept.append((seen, text))
            else:
                slot = rng.randrange(seen + 1)  # text number ``seen`` is kept with probability limit/(seen+1)
                if slot < limit:
                    kept[slot] = (seen, text)
            seen += 1
    kept.sort()
    return [text for _, text in kept]


def train_model(
    texts: Sequence[str], vocab_size: int, model_type: str = "unigram", character_coverage: float = 1.0
) -> bytes:
    """A serialized sentencepiece model trained on ``texts`` (deterministic for the same texts).

    Raises a ConfigError naming data.tokenizer.vocab_size when the text is too small for the size.
    """
    import io

    import sentencepiece as spm

    if not texts:
        raise DataError("sentencepiece: no training text")
    writer = io.BytesIO()
    sentences: Iterator[str] = iter(texts)
    try:
        spm.SentencePieceTrainer.train(
            sentence_iterator=sentences,
            model_writer=writer,
            vocab_size=vocab_size,
            model_type=model_type,
            character_coverage=character_coverage,
            normalization_rule_name="identity",
            input_sentence_size=0,
            shuffle_input_sentence=False,
            num_threads=1,
            minloglevel=2,
            bos_id=-1,
            eos_id=-1,
            unk_id=0,  # the run's Vocab adds its own specials
        )
    except RuntimeError as err:
        found = re.search(r"Vocabulary size too high \((\d+)\).*<= (\d+)", str(err))
        if found:
            raise ConfigError(
                f"data.tokenizer.vocab_size: {found.group(1)} is too large for this training text; "
                f"set it to at most {found.group(2)}",
                key="data.tokenizer.vocab_size",
            ) from None
        raise
    return writer.getvalue()


@dataclass
class SentencePieceOptions:
    """``data.tokenizer: {name: sentencepiece, ...}``."""

    vocab_size: int = number(8000, 2)  # pieces, besides the run's special tokens
    model_type: str = choice("unigram", ("unigram", "bpe"))
    joint: bool = True  # one model for both sides (and, with data.shared_vocab, one vocabulary)
    character_coverage: float = number(1.0, 0.0, 1.0, low_open=True)
    max_sentences: int = number(200000, 0)  # sentences sampled to train the model; 0: all


@TOKENIZERS.register("sentencepiece", options=SentencePieceOptions)
class SentencePieceTokenizer(Tokenizer):
    """Subword pieces from a unigram or BPE sentencepiece model (``data.tokenizer`` options)."""

    trainable = True

    def __init__(self, options: SentencePieceOptions | None = None, model_proto: bytes | None = None):
        super().__init__(options or SentencePieceOptions())
        self.joint = self.options.joint
        self.model_proto: bytes | None = None
        self.processor = None
        if model_proto is not None:
            self.use(model_proto)

    def use(self, model_proto: bytes) -> None:
        """Tokenize with the serialized model ``model_proto``."""
        import sentencepiece as spm

        self.processor = spm.SentencePieceProcessor(model_proto=model_proto)
        self.model_proto = model_proto

    def fit(self, texts: Iterable[str], run_dir: Path, side: str) -> None:
        """Train on (a deterministic sample of at most ``max_sentences`` of) ``texts``, read as
        they stream past (a list, or a generator over a corpus's files), and write
        ``spm.<side>.model`` into ``run_dir``."""
        opts = self.options
        sample = sample_sentences(texts, opts.max_sentences)
        log.info(
            "training a %s sentencepiece model (%d pieces) on %d sentences",
            opts.model_type,
            opts.vocab_size,
            len(sample),
        )
        started = time.perf_counter()
        self.use(train_model(sample, opts.vocab_size, opts.model_type, opts.character_coverage))
        log.info("trained the sentencepiece model in %.1f s", time.perf_counter() - started)
        self.save(run_dir, side)

    def save(self, run_dir: Path, side: str) -> None:
        """Write the model into ``run_dir`` unless the same model is already there."""
        if self.model_proto is None:
            raise ValueError("sentencepiece: save() before fit()")
        path = model_path(run_dir, side)
        if path.exists() and path.read_bytes() == self.model_proto:
            return
        atomic_write_bytes(path, self.model_proto)

    def restore(self, run_dir: Path, side: str) -> None:
        """Tokenize with the model ``fit`` wrote into ``run_dir`` for ``side``."""
        path = model_path(run_dir, side)
        try:
            proto = path.read_bytes()
        except OSError as err:
            raise DataError(f"{path}: cannot read the sentencepiece model ({err.strerror})") from None
        try:
            self.use(proto)
        except RuntimeError:
            raise DataError(f"{path}: not a sentencepiece model") from None

    def tokenize(self, text: str) -> list[str]:
        return self.processor.encode(text, out_type=str)

    def detokenize(self, tokens: Sequence[str]) -> str:
        return self.processor.decode_pieces(list(tokens))
