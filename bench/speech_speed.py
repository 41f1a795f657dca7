"""Speech: how fast `attnseq data speech` speaks utterances, the log-mel features are computed
(and librosa's, where it is installed, with the largest difference), and the LAS preset trains
(with its location-aware attention, and with the general attention it had before, in turn).

    python bench/speech_speed.py [--utterances 200] [--repeat 5] [--out FILE]
    python bench/run.py --speech     # the same table, from the benchmark script

`data speech` runs as a user runs it (its own process, ``attnseq -q data speech``) with 1 and 2
workers (the files must be the same: the table says so). Features and the training step run in
this process on one thread, each the best of ``--repeat`` rounds, librosa and torch.stft in turn.
The machine is shared: take figures of one run, and re-run on a quiet machine before quoting them.
"""

from __future__ import annotations

import argparse
import hashlib
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def folder_digest(folder: Path) -> str:
    """A hash of every file's name and bytes under ``folder``."""
    digest = hashlib.blake2b(digest_size=8)
    for path in sorted(folder.rglob("*")):
        if path.is_file():
            digest.update(str(path.relative_to(folder)).encode() + path.read_bytes())
    return digest.hexdigest()


def best_of(repeat: int, work, rounds: int = 10) -> float:
    """The least seconds ``work()`` took, each of ``repeat`` measurements the mean of ``rounds`` calls."""
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        for _ in range(rounds):
            work()
        times.append((time.perf_counter() - started) / rounds)
    return min(times)


def training_step(model, src, mask, tgt):
    """A function that runs one Adam update of ``model`` on features ``src`` (B, L, F) and targets
    ``tgt`` (B, T) (every position real)."""
    import torch

    from attnseq.data.batching import SourceBatch

    optimizer = torch.optim.Adam(model.parameters())

    def step():
        loss, tokens = model.loss(SourceBatch(src, mask), tgt, tgt, torch.ones_like(tgt, dtype=torch.bool))
        optimizer.zero_grad()
        (loss / tokens).backward()
        optimizer.step()

    return step


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--utterances", type=int, default=200, help="training utterances data speech speaks")
    parser.add_argument("--repeat", type=int, default=5, help="rounds of each in-process figure (the best kept)")
    parser.add_argument("--out", help="also write the table (Markdown) here")
    args = parser.parse_args(argv)
    import numpy as np
    import torch
    from corpus_speed import timed

    torch.set_num_threads(1)
    work = Path(tempfile.mkdtemp(prefix="attnseq-bench-speech-"))
    rows, digests = [], {}
    counts = ["--train", str(args.utterances), "--dev", "10", "--test", "10"]
    total = args.utterances + 20
    for workers in (1, 2):
        out = work / f"speech-{workers}"
        result = timed(["data", "speech", "--out", str(out), *counts, "--workers", str(workers)])
        digests[workers] = folder_digest(out)
        rows.append(
            (
                f"data speech, {total} utterances, {workers} worker(s)",
                f"{total / result['seconds']:,.1f} utterances/s",
                f"{result['tree_rss']:,.0f} MB peak RSS",
            )
        )
    rows.append(("1 and 2 workers wrote the same files", "yes" if digests[1] == digests[2] else "NO", ""))

    from attnseq.data.audio import read_wav
    from attnseq.data.features import FeatureSettings, log_mel

    samples = read_wav(work / "speech-1" / "train" / "000002.wav")
    seconds = len(samples) / 16000
    ours = best_of(args.repeat, lambda: log_mel(samples))
    rows.append((f"log-mel features on torch.stft, a {seconds:.2f} s utterance", f"{ours * 1000:.2f} ms", ""))
    try:
        import librosa
    except ImportError:
        rows.append(("librosa.feature.melspectrogram", "librosa is not installed", ""))
    else:
        s = FeatureSettings()
        theirs_of = lambda: librosa.feature.melspectrogram(  # noqa: E731
            y=samples,
            sr=16000,
            n_fft=s.n_fft,
            hop_length=s.hop,
            win_length=s.window,
            n_mels=s.n_mels,
            center=True,
            pad_mode="constant",
            power=2.0,
        )
        theirs = best_of(args.repeat, theirs_of)
        difference = float(np.abs(np.log(theirs_of() + 1e-6).T - log_mel(samples).numpy()).max())
        rows.append(
            (
                f"librosa {librosa.__version__} melspectrogram, the same utterance",
                f"{theirs * 1000:.2f} ms",
                f"largest log difference {difference:.1e}",
            )
        )

    from attnseq.config import load_config
    from attnseq.data.batching import pad_features
    from attnseq.data.inputs import build_input
    from attnseq.engines.torch_engine.trainer import check_config
    from attnseq.nn.model import build_model

    # the preset's step, and the same with the general attention it had before its location-aware
    # attention (issue 29), measured in turn
    steps = {}
    for label, settings in (("chan2016-las", []), ("chan2016-las, general attention", ["model.attention=general"])):
        config = check_config(
            load_config(ROOT / "configs" / "chan2016-las.yaml", [f"data.dir={work / 'speech-1'}", *settings])
        )
        kind = build_input(config.data)
        lines = (work / "speech-1" / "train.tsv").read_text(encoding="utf-8").splitlines()[:32]
        features = [kind.read(work / "speech-1" / line.split("\t")[0]) for line in lines]
        src, mask = pad_features(features)
        tgt = torch.randint(4, 30, (len(features), 24), generator=torch.Generator().manual_seed(1))
        torch.manual_seed(1)
        steps[label] = training_step(build_model(config.model, 4, 40, features=kind.feature_size), src, mask, tgt)
    best = {label: float("inf") for label in steps}
    for _ in range(args.repeat):  # in turn, so that the load of the machine falls on both alike
        for label, step in steps.items():
            best[label] = min(best[label], best_of(1, step, rounds=3))
    for label, step_seconds in best.items():
        rows.append(
            (
                f"{label} training step, 32 utterances ({src.shape[1]} frames padded), 1 thread",
                f"{step_seconds * 1000:,.0f} ms",
                f"{32 * 24 / step_seconds:,.0f} target tokens/s",
            )
        )
    shutil.rmtree(work, ignore_errors=True)
    table = "\n".join(["| what | figure | note |", "|---|---|---|", *(f"| {a} | {b} | {c} |" for a, b, c in rows)])
    print(table)
    if args.out:
        Path(args.out).write_text(table + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
