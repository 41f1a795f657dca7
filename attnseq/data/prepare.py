"""Preparing a corpus once: its training pairs tokenised into a TokenStore (data.store) in a
cache, by several processes; a second start, a resume and every torchrun process map the store
instead of tokenising again.

The cache (``data.cache``; unset: $ATTNSEQ_CACHE, else $XDG_CACHE_HOME/attnseq, else
~/.cache/attnseq) holds, under ``stores/<key>``, for one training text and data settings:

    pipeline/         the tokenizers and vocabularies fitted to it (TextPipeline.save)
    store-<digest>/   its pairs as ids of a pipeline (the digest of its vocabularies and models)

``<key>`` digests the text's content (texts.TsvText.digest) and the data settings that shape
the ids (all of data.* but where the files are, the cache and the processes); a resumed run
whose vocabulary is its own (the data changed since) gets a store of its own ids beside.

One pass tokenises, whichever the vocabulary (fairseq's binarisation, without a second pass
to count): the text is cut into parts; each worker process checks and tokenises its parts'
lines, giving each new token a part-local id, and writes the local ids and each pair's lengths
to files; the parent then merges the parts' token counts in order (so first appearance is kept,
as TextPipeline.fit counts) into the vocabularies, unless the pipeline is given, and maps every
part's local ids to the vocabularies' ids into the store. The corpus is never held as Python
objects, save a part at a time in each worker (and the text a tokenizer that learns is trained
on). Warnings the text gives (skipped lines, pairs over the length limits) are kept in the
store and said again at every start, as reading the text would say them.

Processes preparing the same key wait for each other on a lock (``stores/<key>/.lock``): under
torchrun the first process prepares, the others wait and map what it wrote.
"""

from __future__ import annotations

import fcntl
import hashlib
import itertools
import json
import logging
import multiprocessing
import os
import shutil
import signal
import time
from collections import defaultdict, deque
from collections.abc import Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..errors import ConfigError, DataError, UserError
from ..hardware import past_cpus, usable_cpus
from ..schema import plain
from . import texts
from .corpus import CorpusChecks
from .corpus import Tally as Lines
from .pipeline import FixedWidth, TextPipeline, normalise, warn_too_long
from .store import MANIFEST, SIDES, StoreWriter, TokenStore, ids_dtype
from .texts import Part, TrainingText
from .tokenizers import Tokenizer
from .vocab import Vocab

log = logging.getLogger("attnseq")
VERSION = 1  # of the tokenising below: a change that gives other ids makes every store again
NOT_SETTINGS = ("dir", "train", "dev", "test", "cache", "processes")  # data.* that shape no id
PROCESS_BYTES = 1 << 18  # a text of fewer bytes is tokenised by this process alone (a pool costs more)
TEXT = "{training text}"  # where a kept warning names the file (the same bytes may be read from another)


def cache_root(data) -> tuple[Path, str]:
    """(the cache folder, what chose it): ``data.cache``, else $ATTNSEQ_CACHE, else
    $XDG_CACHE_HOME/attnseq, else ~/.cache/attnseq."""
    if data.cache:
        return Path(data.cache).expanduser(), "data.cache"
    for name, under in (("ATTNSEQ_CACHE", ""), ("XDG_CACHE_HOME", "attnseq")):
        if os.environ.get(name):
            return Path(os.environ[name]) / under, f"${name}"
    return Path.home() / ".cache" / "attnseq", "the default"


def data_key(data, digest: str) -> str:
    """The cache key of a training text of content ``digest`` read with the data settings ``data``."""
    settings = {k: v for k, v in plain(data).items() if k not in NOT_SETTINGS}
    text = json.dumps({"version": VERSION, "text": digest, "settings": settings}, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def pipeline_digest(pipeline: TextPipeline) -> str:
    """What of ``pipeline`` shapes the ids: its vocabularies, learned tokenizer models and layout."""
    width = pipeline.fixed_width
    models = [
        hashlib.sha256(getattr(tok, "model_proto", None) or b"").hexdigest()
        for tok in (pipeline.src_tokenizer, pipeline.tgt_tokenizer)
    ]
    text = json.dumps(
        [
            pipeline.src_vocab.itos,
            pipeline.tgt_vocab.itos,
            models,
            pipeline.unicode,
            None if width is None else [width.width, width.pad],
        ],
        ensure_ascii=False,
    )
    return hashlib.sha256(text.encode()).hexdigest()[:16]


@contextmanager
def locked(folder: Path) -> Iterator[None]:
    """``folder`` (created) locked for this process: an exclusive flock on ``folder/.lock``,
    waited for when another process holds it (the system releases it when a process ends)."""
    folder.mkdir(parents=True, exist_ok=True)
    fd = os.open(folder / ".lock", os.O_RDWR | os.O_CREAT, 0o666)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            log.info("waiting for another process preparing the training data in %s", folder)
            fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


@contextmanager
def captured_warnings(said: list[tuple[str, str]]) -> Iterator[None]:
    """The warnings attnseq logs inside, appended to ``said`` as (logger, message) instead of shown."""

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            said.append((record.name, record.getMessage()))

    logger = logging.getLogger("attnseq")
    handlers, propagate, level = logger.handlers, logger.propagate, logger.level
    logger.handlers, logger.propagate = [Keep(logging.WARNING)], False
    logger.setLevel(min(level or logging.WARNING, logging.WARNING))
    try:
        yield
    finally:
        logger.handlers, logger.propagate = handlers, propagate
        logger.setLevel(level)


@dataclass
class PartResult:
    """What a worker made of one part: its local vocabularies with their counts, what it read,
    kept and dropped, and the sources' widths (for FixedWidth)."""

    index: int
    read: int = 0  # pairs read (the length limits not yet applied)
    kept: int = 0
    tokens: dict = field(default_factory=dict)  # side -> tokens kept
    itos: dict = field(default_factory=dict)  # side -> the part's tokens in order of first appearance
    counts: dict = field(default_factory=dict)  # side -> (V_part,) int64: every pair read counted
    checks: CorpusChecks | None = None  # what reading its lines found (skipped, a header, control characters)
    too_long: Lines = field(default_factory=Lines)
    widths: set = field(default_factory=set)  # the normalised sources' widths (two are enough)
    padded: bool = False  # some source ends in a space
    said: list = field(default_factory=list)  # warnings its lines gave


@dataclass
class Job:
    """A worker's instructions: which text, read how, into which folder."""

    text: TrainingText
    data: object  # DataConfig
    src_tok: Tokenizer
    tgt_tok: Tokenizer
    fixed_width: FixedWidth | None  # the given pipeline's (lays sources out); None while fitting
    folder: Path  # where the parts' files go
    part_bytes: int = 0  # the size of the text's parts (0: texts.PART_BYTES)

    def files(self, index: int, side: str) -> tuple[Path, Path]:
        return self.folder / f"{index}.{side}.ids", self.folder / f"{index}.{side}.lengths"

    def encode(self, index: int, part: Part) -> PartResult:
        """Tokenise the part ``index`` into part-local ids (written to files) and counts."""
        data, result = self.data, PartResult(index)
        stoi = {side: defaultdict(itertools.count().__next__) for side in SIDES}  # a new token: the next id
        ids = {side: [] for side in SIDES}
        spare = {side: [] for side in SIDES}  # the ids of dropped pairs: counted, not stored
        lengths = {side: [] for side in SIDES}
        src_id, tgt_id = stoi["src"].__getitem__, stoi["tgt"].__getitem__
        max_src, max_tgt = data.max_source_len, data.max_target_len
        checks = result.checks = CorpusChecks(self.text.name)
        with captured_warnings(result.said):
            for _, (source, target) in self.text.pairs(part, checks):
                source, target = normalise(data, data.unicode, source), normalise(data, data.unicode, target)
                result.read += 1
                if len(result.widths) < 2:
                    result.widths.add(len(source))
                result.padded = result.padded or source.endswith(" ")
                if self.fixed_width is not None:
                    source = self.fixed_width.lay_out(source)
                src = list(map(src_id, self.src_tok.tokenize(source)))
                tgt = list(map(tgt_id, self.tgt_tok.tokenize(target)))
                too_long = (max_src and len(src) > max_src) or (max_tgt and len(tgt) > max_tgt)
                if too_long or not src:  # a source of no tokens is dropped without a word, as encode_pairs does
                    if too_long:
                        result.too_long.add(result.read)  # the pair's number in the part (Tally makes it the text's)
                    spare["src"] += src
                    spare["tgt"] += tgt
                    continue
                if data.reverse_source:
                    src.reverse()
                ids["src"] += src
                ids["tgt"] += tgt
                lengths["src"].append(len(src))
                lengths["tgt"].append(len(tgt))
        result.kept = len(lengths["src"])
        for side in SIDES:
            local = np.array(ids[side], dtype=np.int32)
            size = len(stoi[side])
            result.itos[side] = list(stoi[side])
            result.counts[side] = np.bincount(local, minlength=size) + np.bincount(
                np.array(spare[side], dtype=np.int64), minlength=size
            )
            result.tokens[side] = len(local)
            id_file, length_file = self.files(index, side)
            with open(id_file, "wb") as out:
                local.tofile(out)
            with open(length_file, "wb") as out:
                np.array(lengths[side], dtype=np.int32).tofile(out)
        return result


_JOB: Job | None = None  # the job of a worker process


def _start_worker(job: Job) -> None:
    """A forked worker: the job inherited, SIGTERM the system's again (the pool ends its workers
    with it, and a handler the command set would keep one alive, the pool waiting for it)."""
    global _JOB
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    _JOB = job


def _encode_part(task: tuple[int, Part]) -> PartResult:
    return _JOB.encode(*task)


def part_bytes(size: int, processes: int) -> int:
    """The size of the parts of a text of ``size`` bytes that ``processes`` processes share: at
    most texts.PART_BYTES, and small enough to give each process several (so they end together)."""
    return min(texts.PART_BYTES, max(1 << 16, -(-size // (8 * processes))))


def process_count(data, size: int) -> int:
    """The processes that tokenise ``size`` bytes: data.processes (0: one for each CPU this
    process may use), one for every PROCESS_BYTES at most; one where processes cannot be forked.
    More than the CPUs is a ConfigError: they gain nothing, and thousands (a corpus of gigabytes
    has as many parts) would each hold a copy of the process."""
    too_many = past_cpus(data.processes, "data.processes")
    if too_many:
        raise ConfigError(f"{too_many} (0: one per CPU)", key="data.processes")
    if "fork" not in multiprocessing.get_all_start_methods():
        return 1
    return max(1, min(data.processes or usable_cpus(), size // PROCESS_BYTES))


def run_parts(job: Job, processes: int) -> Iterator[PartResult]:
    """Every part of the job's text encoded, in order, by ``processes`` processes (this one
    alone when 1), each result as soon as it and those before it are done."""
    tasks = enumerate(job.text.parts(job.part_bytes))
    if processes == 1:
        yield from (job.encode(*task) for task in tasks)
        return
    context = multiprocessing.get_context("fork")  # the job (tokenizers, models) is inherited, not sent
    # At most 2 parts a process in flight (each holds its bytes). multiprocessing.Pool is not used:
    # when a part raised (a bad line), its terminate() could wait for ever on its task thread,
    # blocked putting the next parts to workers it had ended (about one run in three hung).
    with ProcessPoolExecutor(processes, mp_context=context, initializer=_start_worker, initargs=(job,)) as pool:
        pending: deque[Future] = deque()
        try:
            for task in tasks:
                pending.append(pool.submit(_encode_part, task))
                if len(pending) >= 2 * processes:
                    yield pending.popleft().result()
            while pending:
                yield pending.popleft().result()
        finally:  # an error or a consumer that stopped early: the parts not begun are not begun
            for future in pending:
                future.cancel()


class Tally:
    """The parts' results folded together in order as they come: every token's id in order of
    first appearance over the whole text and its count (per side), each part's map from its
    local ids to those, and what was read, kept, dropped and said."""

    def __init__(self) -> None:
        self.stoi = {side: {} for side in SIDES}
        self.counts = {side: np.zeros(0, np.int64) for side in SIDES}
        self.maps: list[dict[str, np.ndarray]] = []  # part -> side -> (V_part,) its local id -> the tally's
        self.kept: list[int] = []  # pairs kept of each part
        self.tokens = {side: 0 for side in SIDES}
        self.read, self.checks, self.too_long = 0, CorpusChecks(""), Lines()
        self.widths: set[int] = set()
        self.padded = False
        self.said: list[tuple[str, str]] = []

    def add(self, result: PartResult) -> None:
        maps = {}
        for side in SIDES:
            stoi = self.stoi[side]
            maps[side] = np.array([stoi.setdefault(t, len(stoi)) for t in result.itos[side]], dtype=np.int64)
            counts = self.counts[side] = np.concatenate(
                [self.counts[side], np.zeros(len(stoi) - len(self.counts[side]), np.int64)]
            )
            counts[maps[side]] += result.counts[side]  # a part's tokens are distinct
            self.tokens[side] += result.tokens[side]
        self.maps.append(maps)
        self.kept.append(result.kept)
        self.too_long.merge(result.too_long, offset=self.read)  # numbered among the pairs read
        self.read += result.read
        self.checks.merge(result.checks)
        if len(self.widths) < 2:
            self.widths |= result.widths
        self.padded = self.padded or result.padded
        self.said += result.said

    def token_counts(self, side: str) -> dict[str, int]:
        """Each token of ``side`` and its count, in order of first appearance."""
        return dict(zip(self.stoi[side], self.counts[side].tolist()))

    def pipeline(self, data, src_tok: Tokenizer, tgt_tok: Tokenizer) -> TextPipeline:
        """The pipeline whose vocabularies the counts make (TextPipeline.from_counts)."""
        return TextPipeline.from_counts(
            data,
            src_tok,
            tgt_tok,
            self.token_counts("src"),
            self.token_counts("tgt"),
            FixedWidth.of_widths(self.read, self.widths, self.padded),
        )

    def finish(self, name: str, data) -> None:
        """Add what the whole text ``name`` says to ``said``: lines skipped, pairs over the length
        limits (said at every start: prepare_training)."""
        with captured_warnings(self.said):
            self.checks.name = name
            self.checks.warn()
            if self.too_long.count:
                warn_too_long(name, self.too_long.first, self.too_long.count, data.max_source_len, data.max_target_len)


def prepare_training(data, text: TrainingText, pipeline: TextPipeline | None = None) -> tuple[TextPipeline, TokenStore]:
    """(the pipeline, the store of the training pairs): ``text`` read with the data settings
    ``data``, tokenised into the cache unless it is there already; with ``pipeline`` (a resumed
    run's) the ids are its vocabularies', else the pipeline is fitted to the text (or taken from
    the cache, fitted before). A text without a pair, or without one within the length limits,
    is a DataError."""
    root, chosen_by = cache_root(data)
    try:
        key = data_key(data, text.digest(root / "digests"))
        folder = root / "stores" / key
        with locked(folder):
            for leftover in folder.glob(".tmp-*"):  # of a preparation that was stopped
                shutil.rmtree(leftover, ignore_errors=True)
            if pipeline is None and (folder / "pipeline").is_dir():
                pipeline = TextPipeline.load(data, folder / "pipeline")
            store_dir = None if pipeline is None else folder / f"store-{pipeline_digest(pipeline)}"
            if store_dir is None or not (store_dir / MANIFEST).exists():
                pipeline, store_dir = tokenise(data, text, pipeline, folder)
    except OSError as err:
        raise UserError(
            f"{root} ({chosen_by}): cannot keep the prepared training data there ({err.strerror}: "
            f"{err.filename}); set data.cache to a folder you can write"
        ) from None
    store = TokenStore(store_dir)
    for name, message in store.manifest["warnings"]:  # naming the file as this start names it
        logging.getLogger(name).warning("%s", message.replace(TEXT, text.name))
    if not store.manifest["read"]:
        raise DataError(f"{text.name}: no training pairs")
    if not len(store):
        raise DataError("no training pair is left after the length limits (data.max_source_len, data.max_target_len)")
    return pipeline, store


def tokenise(data, text: TrainingText, pipeline: TextPipeline | None, folder: Path) -> tuple[TextPipeline, Path]:
    """Tokenise ``text`` into ``folder`` (locked): the store of ``pipeline``'s ids, or of the
    pipeline fitted to the text (saved beside); (the pipeline, the store's folder)."""
    tmp = folder / f".tmp-{os.getpid()}"
    (tmp / "parts").mkdir(parents=True)
    try:
        return tokenise_into(tmp, data, text, pipeline, folder)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def tokenise_into(
    tmp: Path, data, text: TrainingText, pipeline: TextPipeline | None, folder: Path
) -> tuple[TextPipeline, Path]:
    """``tokenise``'s work, its files made in ``tmp`` and moved into ``folder`` when whole."""
    started = time.perf_counter()
    fitting = pipeline is None
    if fitting:
        src_tok, tgt_tok = TextPipeline.fit_tokenizers(data, lambda: all_texts(data, text), tmp / "pipeline")
    else:
        src_tok, tgt_tok = pipeline.src_tokenizer, pipeline.tgt_tokenizer
    processes = process_count(data, text.size())
    log.info(
        "preparing the training data %s in %d process%s (once: kept in %s)",
        text.name,
        processes,
        "es" if processes > 1 else "",
        folder,
    )
    job = Job(
        text,
        data,
        src_tok,
        tgt_tok,
        None if fitting else pipeline.fixed_width,
        tmp / "parts",
        part_bytes(text.size(), processes),
    )
    tally = Tally()
    for result in run_parts(job, processes):
        tally.add(result)
    tally.finish(text.name, data)
    if fitting:
        pipeline = tally.pipeline(data, src_tok, tgt_tok)
        pipeline.save(tmp / "pipeline")
    store_dir = folder / f"store-{pipeline_digest(pipeline)}"
    manifest = write_store(
        tmp / "store", job, tally, pipeline, {"processes": processes, "text": text.name, "started": started}
    )
    if fitting:
        os.replace(tmp / "pipeline", folder / "pipeline")
    os.replace(tmp / "store", store_dir)  # whole: a store that exists is complete
    seconds = time.perf_counter() - started
    log.info(
        "prepared %s pairs (%s tokens) in %.1f s, %s pairs/s",
        f"{manifest['read']:,}",
        f"{sum(manifest['tokens'].values()):,}",
        seconds,
        f"{manifest['read'] / max(seconds, 1e-9):,.0f}",
    )
    return pipeline, store_dir


def all_texts(data, text: TrainingText) -> tuple[Iterator[str], Iterator[str]]:
    """The normalised sources and targets of ``text`` (for a tokenizer that learns), each read
    as it streams (a part at a time; what the lines say is said by the tokenising pass)."""

    def side(index: int) -> Iterator[str]:
        for part in text.parts():
            with captured_warnings([]):
                pairs = [pair for _, pair in text.pairs(part, CorpusChecks(text.name))]
            yield from (normalise(data, data.unicode, pair[index]) for pair in pairs)

    return side(0), side(1)


def write_store(folder: Path, job: Job, tally: Tally, pipeline: TextPipeline, about: dict) -> dict:
    """The parts' local ids mapped to ``pipeline``'s vocabularies, written as a store into
    ``folder``; its manifest, with ``about`` (how it was made; ``started``: when, a perf_counter
    time, becomes the seconds it took)."""
    vocabs = {"src": pipeline.src_vocab, "tgt": pipeline.tgt_vocab}
    dtype = ids_dtype(max(len(pipeline.src_vocab), len(pipeline.tgt_vocab)))
    final = {
        side: np.array([vocabs[side].stoi.get(t, Vocab.unk_id) for t in tally.stoi[side]], dtype=dtype)
        for side in SIDES
    }  # the tally's ids -> the vocabulary's
    writer = StoreWriter(folder, sum(tally.kept), tally.tokens, dtype)
    unknown = 0
    for index, maps in enumerate(tally.maps):
        for side in SIDES:
            id_file, length_file = job.files(index, side)
            ids = final[side][maps[side]][np.fromfile(id_file, dtype=np.int32)]
            unknown += int(np.count_nonzero(ids == Vocab.unk_id))
            writer.add(side, ids, np.fromfile(length_file, dtype=np.int32))
            id_file.unlink()
            length_file.unlink()
    said = [(name, message.replace(job.text.name, TEXT)) for name, message in tally.said]  # the same bytes elsewhere
    manifest = {
        "read": tally.read,
        "pairs": sum(tally.kept),
        "tokens": tally.tokens,
        "unknown": unknown,
        "dtype": dtype.name,
        "skipped": tally.checks.skipped.count,
        "too_long": tally.too_long.count,
        "warnings": said,
        **about,
    }
    manifest["seconds"] = round(time.perf_counter() - manifest.pop("started"), 3)
    writer.close(manifest)
    return manifest
