"""What the tests share: small generated data sets, quick configs and runs, a live server; the
fixtures that use them are in conftest.py."""

from __future__ import annotations

import contextlib
import io
import random
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pytest
from learning import seed

from attnseq.data.batching import SourceBatch
from attnseq.runs import TIMING_FIELDS

if TYPE_CHECKING:
    import torch

ROOT = Path(__file__).resolve().parents[1]


def sets(*settings: str) -> list[str]:
    """The command line's ``--set KEY=VALUE`` arguments for each of ``settings``."""
    return [x for s in settings for x in ("--set", s)]


def book_file(name: str) -> Path:
    """The book's data file ``name`` (date.txt, addition.txt) where attnseq reads it, beside the
    checkout (attnseq.reproduce.datasets.BOOK_DIR); the calling test is skipped where it is not."""
    from attnseq.reproduce.datasets import BOOK_DIR

    path = BOOK_DIR / name
    if not path.is_file():
        pytest.skip(f"the book's {name} is not at {path} (it is kept beside the checkout, not in it)")
    return path


def reverse_pairs(
    n: int, seed: int = 0, symbols: str = "abcdef", lengths=(3, 7), reverse: bool = True
) -> list[tuple[str, str]]:
    """Pairs (w, reversed w) over ``symbols``: a task only attention-free memory or attention solves."""
    rng = random.Random(seed)
    pairs = []
    for _ in range(n):
        word = "".join(rng.choice(symbols) for _ in range(rng.randint(*lengths)))
        pairs.append((word, word[::-1] if reverse else word))
    return pairs


def write_tsv(path: Path, pairs) -> Path:
    path.write_text("".join(f"{s}\t{t}\n" for s, t in pairs), encoding="utf-8")
    return path


BARS = {"B": (3, 13), "s": (7, 9)}  # a tall bar and a short one: rows of ink in an image 16 high


def bar_image(tokens: list[str]) -> np.ndarray:
    """A white image 16 pixels high with a black bar per token, left to right."""
    pixels = np.full((16, 10 * len(tokens) + 4), 255, np.uint8)
    for i, token in enumerate(tokens):
        top, bottom = BARS[token]
        pixels[top:bottom, 4 + 10 * i : 10 + 10 * i] = 0
    return pixels


def write_sources(folder: Path, n: int, seed: int, split: str, longest: int, symbols, name: str, render) -> None:
    """``folder``/SPLIT.tsv of ``n`` files of 1 to ``longest`` of ``symbols`` (``name`` % (split, i),
    their bytes ``render(tokens, rng)``) and their tokens, separated by spaces."""
    rng = np.random.default_rng(seed)
    lines = []
    for i in range(n):
        tokens = [str(t) for t in rng.choice(list(symbols), size=rng.integers(1, longest + 1))]
        path = folder / (name % (split, i))
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(render(tokens, rng))
        lines.append(f"{name % (split, i)}\t{' '.join(tokens)}\n")
    (folder / f"{split}.tsv").write_text("".join(lines), encoding="utf-8")


def png_bytes(pixels: np.ndarray) -> bytes:
    from PIL import Image

    buffer = io.BytesIO()
    Image.fromarray(pixels).save(buffer, format="PNG")
    return buffer.getvalue()


def write_bars(folder: Path, n: int, seed: int, split: str, longest: int = 4) -> None:
    """``folder``/SPLIT.tsv of ``n`` images of 1 to ``longest`` bars (img/SPLIT{i}.png) and their tokens."""
    write_sources(
        folder, n, seed, split, longest, BARS, "img/%s%d.png", lambda tokens, rng: png_bytes(bar_image(tokens))
    )


def write_bars_dir(folder: Path) -> Path:
    """``folder`` with train/dev/test.tsv (48 / 8 / 8) of images of bars, for data.input image."""
    for split, n, split_seed in (("train", 48, 1), ("dev", 8, 2), ("test", 8, 3)):
        write_bars(folder, n, split_seed, split)
    return folder


TONES = {"l": 300.0, "h": 2500.0}  # a low tone and a high one: the words of a spoken sequence of tones


def tone_samples(tokens: list[str], rate: int = 16000) -> np.ndarray:
    """A waveform of one 0.12 s tone per token, each after 0.06 s of silence, and silence at the end."""
    gap, beep = np.zeros(int(0.06 * rate), np.float32), np.arange(int(0.12 * rate)) / rate
    parts = [part for token in tokens for part in (gap, 0.4 * np.sin(2 * np.pi * TONES[token] * beep))]
    return np.concatenate([*parts, gap]).astype(np.float32)


def write_tones(folder: Path, n: int, seed: int, split: str, longest: int = 4) -> None:
    """``folder``/SPLIT.tsv of ``n`` WAV files of 1 to ``longest`` tones (wav/SPLIT{i}.wav), a little
    noise added, and their tokens."""
    from attnseq.data.audio import wav_bytes

    def render(tokens, rng):
        samples = tone_samples(tokens)
        return wav_bytes(samples + 0.01 * rng.standard_normal(len(samples)).astype(np.float32))

    write_sources(folder, n, seed, split, longest, TONES, "wav/%s%d.wav", render)


def write_tones_dir(folder: Path, sizes=(48, 8, 8), longest: int = 4) -> Path:
    """``folder`` with train/dev/test.tsv (``sizes``) of WAV files of tones, for data.input audio."""
    for split, n, split_seed in zip(("train", "dev", "test"), sizes, (1, 2, 3)):
        write_tones(folder, n, split_seed, split, longest)
    return folder


def write_reverse_dir(d: Path) -> Path:
    """``d`` with train/dev/test.tsv of the reversal task (2,000 / 100 / 40 strings of 3-6)."""
    d.mkdir(parents=True, exist_ok=True)
    write_tsv(d / "train.tsv", reverse_pairs(2000, seed=1, lengths=(3, 6)))
    write_tsv(d / "dev.tsv", reverse_pairs(100, seed=2, lengths=(3, 6)))
    write_tsv(d / "test.tsv", reverse_pairs(40, seed=3, lengths=(3, 6)))
    return d


def padded_batch(src_vocab: int, tgt_vocab: int):
    """(src (3, 7), src_mask (3, 7), tgt_in (3, 5)): three sentences of lengths 7, 5 and 3."""
    import torch

    g = torch.Generator().manual_seed(3)
    src = torch.randint(4, src_vocab, (3, 7), generator=g)
    mask = torch.ones(3, 7, dtype=torch.bool)
    mask[1, 5:] = False
    mask[2, 3:] = False
    src[~mask] = 0
    tgt_in = torch.randint(4, tgt_vocab, (3, 5), generator=g)
    tgt_in[:, 0] = 1  # bos
    return src, mask, tgt_in


def assert_teacher_forcing_equals_stepping(model, src, mask, tgt_in) -> None:
    """The teacher-forced logits and attention equal those of stepping through the target."""
    import torch

    features, alignment = model(SourceBatch(src, mask), tgt_in)
    assert features.shape == (*tgt_in.shape, model.decoder.feature_size)
    logits = model.decoder.generator(features)
    state = model.decoder.init_state(model.encode(SourceBatch(src, mask)))
    for t in range(tgt_in.shape[1]):
        step_logits, state, step_alignment = model.decoder.step(tgt_in[:, t], state)
        torch.testing.assert_close(step_logits, logits[:, t])
        if alignment is not None:
            torch.testing.assert_close(step_alignment, alignment[:, t])
            assert torch.all(step_alignment[~mask] == 0)  # padding gets no attention


def scorer_variant(name: str, **options):
    """The scorer ``name`` with those of ``options`` that it takes (its options dataclass says which)."""
    import dataclasses

    from attnseq.nn.attention import SCORERS
    from attnseq.schema import Variant

    takes = {f.name for f in dataclasses.fields(SCORERS.options_class(name))}
    return Variant(name, {k: v for k, v in options.items() if k in takes})


# -- the copy task: sequences over 6 symbols, token ids 4..9 (0 pad, 1 bos, 2 eos) ------------------
SYMBOLS = 6
V = 4 + SYMBOLS


def copy_batch(n: int, generator: torch.Generator, lengths=(3, 5), reverse: bool = False):
    """A batch of the copy (or reversal) task: src, src_mask, tgt_in, tgt_out, tgt_mask and
    (targets (B, S), lengths (B, 1))."""
    import torch

    size = torch.randint(lengths[0], lengths[1] + 1, (n, 1), generator=generator)  # (B, 1)
    t = torch.arange(lengths[1]).unsqueeze(0)  # (1, S)
    mask = t < size  # (B, S)
    src = torch.randint(4, V, (n, lengths[1]), generator=generator).masked_fill(~mask, 0)
    target = src.gather(1, torch.where(mask, size - 1 - t, t)) if reverse else src
    tgt_in = torch.cat([torch.ones(n, 1, dtype=torch.long), target], 1)  # bos y
    tgt_out = torch.cat([target, torch.zeros(n, 1, dtype=torch.long)], 1)
    tgt_out.scatter_(1, size, 2)  # y eos
    return src, mask, tgt_in, tgt_out, tgt_out != 0, (target, size)


def learn_task(
    *overrides: str, steps: int = 120, reverse: bool = False, lengths=(3, 5), batch: int = 128, hidden: int = 32
) -> float:
    """Exact match (0..1) of greedy search on 100 fresh sequences after training a model with
    ``overrides`` (embeddings hidden / 2) for ``steps`` Adam updates on copying (reversing)
    sequences over 6 symbols."""
    import torch

    from attnseq.decoding.greedy import greedy_search

    model = train_task(*overrides, steps=steps, reverse=reverse, lengths=lengths, batch=batch, hidden=hidden)
    src, mask, *_, (targets, size) = copy_batch(100, torch.Generator().manual_seed(2), lengths, reverse)
    hypotheses = greedy_search(model, SourceBatch(src, mask), torch.full((100,), 2 * lengths[1]))
    return sum(h[0].tokens == y[: int(k)].tolist() for h, y, k in zip(hypotheses, targets, size)) / 100


def train_task(
    *overrides: str, steps: int = 120, reverse: bool = False, lengths=(3, 5), batch: int = 128, hidden: int = 32
) -> torch.nn.Module:
    """A model with ``overrides`` (embeddings hidden / 2) after ``steps`` Adam updates on copying
    (reversing) sequences over 6 symbols, in eval mode."""
    import torch

    from attnseq.config import load_config
    from attnseq.nn import build_model

    torch.manual_seed(seed(0))
    cfg = load_config(None, [f"model.embed_size={hidden // 2}", f"model.hidden_size={hidden}", *overrides]).model
    model = build_model(cfg, V, V)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
    generator = torch.Generator().manual_seed(1)
    for _ in range(steps):
        src, mask, tgt_in, tgt_out, tgt_mask, _ = copy_batch(batch, generator, lengths, reverse)
        loss, tokens = model.loss(SourceBatch(src, mask), tgt_in, tgt_out, tgt_mask)
        optimizer.zero_grad()
        (loss / tokens).backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 5.0)
        optimizer.step()
    return model.eval()


# What every attention design needs to learn the reversal task perfectly.
LEARN = [
    "train.epochs=12",
    "train.lr=0.003",
    "train.schedule=plateau",
    "train.select_by=loss",
    "model.hidden_size=64",
    f"train.seed={seed(1)}",
]

TINY = [
    "model.embed_size=16",
    "model.hidden_size=32",
    "train.batch_size=32",
    "train.progress=false",
    "train.log_every=0",
]


# Runs of each kind of model the attention page shows, trained for two steps (what they output
# does not matter to the tests that use them, only what they are).
QUICK_RUNS = {
    "transformer": ("transformer-tiny.yaml", ["model.hidden_size=32", "model.ff_size=64", "model.heads=4"]),
    "local_p": ("luong2015-local-p.yaml", ["model.hidden_size=32", "model.embed_size=16"]),  # source reversed
    "local_m": ("luong2015-local-m.yaml", ["model.hidden_size=32", "model.embed_size=16", "data.reverse_source=false"]),
    "multihead": (
        "luong2015-general.yaml",
        ["model.hidden_size=32", "model.embed_size=16", "model.attention={name: multihead, heads: 2}"],
    ),
    "rnn": (
        "luong2015-general.yaml",
        [
            "model.hidden_size=64",
            "model.embed_size=16",
            "train.lr=0.005",
            "model.encoder={name: stacked, bidirectional: true}",
            "model.dropout=0",
            "model.decoder={name: luong, input_feeding: false}",
            "model.encoder_layers=1",
            "model.decoder_layers=1",
            "model.bridge=linear",
            "data.reverse_source=false",
        ],
    ),
    "numpy": (
        "book-attention.yaml",
        ["engine=numpy", "data.strip=true", "model.hidden_size=16", "model.embed_size=8", "decode.max_len=10"],
    ),
    "copy": ("copy-names.yaml", ["model.hidden_size=32", "model.embed_size=16"]),  # p_gen beside the rows
    "image": (
        "formulas.yaml",
        [
            "data.input.height=16",
            "model.hidden_size=16",
            "model.embed_size=8",  # bars
            "model.frontend={name: conv, channels: 4, blocks: 2, positions: rows}",
        ],
    ),
    "audio": (
        "chan2016-las.yaml",
        [
            "data.input.n_mels=16",
            "model.hidden_size=16",
            "model.embed_size=8",  # tones
            "model.frontend={name: pyramidal, layers: 1, reduction: 2, stack: 2}",
        ],
    ),
}
FILE_RUNS = {"image": write_bars_dir, "audio": write_tones_dir}  # QUICK_RUNS that read files: their data


def train_quick(kind: str, data_dir: Path, run_dir: Path, steps: int = 2, extra: tuple = ()) -> Path:
    """A run of ``kind`` (a key of QUICK_RUNS) trained for ``steps`` steps into ``run_dir``
    (``extra``: more --set values)."""
    from attnseq.cli import main

    config, settings = QUICK_RUNS[kind]
    settings = (
        settings
        + list(extra)
        + [f"train.max_steps={steps}", "train.progress=false", "train.log_every=0", "train.eval_max_sentences=10"]
    )
    with contextlib.redirect_stdout(io.StringIO()):  # the training summary is no test's output
        assert (
            main(
                [
                    "-q",
                    "train",
                    str(ROOT / "configs" / config),
                    "--data",
                    str(data_dir),
                    "--out",
                    str(run_dir),
                    *sets(*settings),
                ]
            )
            == 0
        )
    return run_dir


class LiveServer:
    """``attnseq serve``'s application on uvicorn in a thread, on a free loopback port:
    ``with LiveServer(app) as server: server.url``."""

    def __init__(self, app):
        self.app = app

    def __enter__(self) -> LiveServer:
        import threading
        import time

        import uvicorn

        from attnseq.serve.server import listen, url

        self.sock = listen("127.0.0.1", 0)
        self.url = url(self.sock)
        self.port = self.sock.getsockname()[1]
        self.server = uvicorn.Server(uvicorn.Config(self.app, log_level="warning", access_log=False))
        self.thread = threading.Thread(target=self.server.run, kwargs={"sockets": [self.sock]}, daemon=True)
        self.thread.start()
        deadline = time.monotonic() + 30
        while not self.server.started:
            assert time.monotonic() < deadline, "the server did not start"
            time.sleep(0.02)
        return self

    def __exit__(self, *exc) -> None:
        self.server.should_exit = True
        self.thread.join(30)
        self.sock.close()


class QuickRuns:
    """Runs of QUICK_RUNS, each trained the first time a test asks for it: ``quick_runs["transformer"]``."""

    def __init__(self, root: Path):
        self.root, self.data, self.trained = root, None, {}

    def __getitem__(self, kind: str) -> Path:
        if kind not in self.trained:
            if kind in FILE_RUNS:
                data = self.root / f"{kind}-data"
                if not data.exists():
                    FILE_RUNS[kind](data)
            else:
                if self.data is None:
                    self.data = write_reverse_dir(self.root / "data")
                data = self.data
            self.trained[kind] = train_quick(kind, data, self.root / kind)
        return self.trained[kind]


# -- runs trained through the CLI (test_runs, test_stopping) ---------------------------------------
PRESET = str(ROOT / "configs" / "luong2015-general.yaml")  # the preset the run tests train, small
SMALL = [*TINY, "model.encoder_layers=1", "model.decoder_layers=1", "train.eval_max_sentences=20"]
TIMING = TIMING_FIELDS  # (attnseq.runs)


def weights(path: Path) -> dict[str, np.ndarray]:
    from attnseq.runs import read_checkpoint

    return read_checkpoint(path)[0]


def same_records(a: Path, b: Path) -> None:
    """The train and eval records of two runs agree in everything but timing."""
    from attnseq.runs import read_metrics

    def clean(path):
        return [{k: v for k, v in r.items() if k not in TIMING} for r in read_metrics(path) if r["type"] != "start"]

    assert clean(a) == clean(b)


def last_step(run: Path) -> int:
    """The step of the last train record in ``run``'s metrics, a torn tail skipped (0 before any)."""
    from attnseq.runs import read_metrics

    if not (run / "metrics.jsonl").exists():
        return 0
    return ([0] + [r["step"] for r in read_metrics(run) if r["type"] == "train"])[-1]


def parsers(parser, path: str = "attnseq"):
    """``(command path, parser)`` of ``parser`` and of every subparser under it, depth first."""
    import argparse

    yield path, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, subparser in action.choices.items():
                yield from parsers(subparser, f"{path} {name}")


def bf16_lstm_capped() -> str | None:
    """Why autocast training cannot run here, or None: torch picks oneDNN's bfloat16 LSTM by the
    CPU's flags, and oneDNN held to AVX2 (bench/isa.py's variables) on a bfloat16 CPU cannot make it."""
    from attnseq import hardware

    if hardware.kernel_cap() and {"avx512_bf16", "amx_bf16"} & hardware.cpu_flags():
        return (
            f"torch picks oneDNN's bfloat16 LSTM by the CPU's flags, and oneDNN held to AVX2 "
            f"({hardware.kernel_cap()}) cannot make it"
        )
    return None
