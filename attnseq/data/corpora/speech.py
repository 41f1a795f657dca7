"""Spoken numbers and dates (``attnseq data speech``): WAV files spoken by espeak-ng with the text
each one says, for speech to text with attention over frames (Chan et al. 2016).

Each utterance is a date in one of the English patterns a speaker says as written (``saturday,
march 4, 1995``, ``4 march 1995``: the date generator's, attnseq/data/dates.py, lower-cased) or a
whole number of 1 to 6 digits (``4213``, said "four thousand two hundred and thirteen"); the
target is that text, so the output follows the speech left to right. espeak-ng (Debian's
package; nothing is downloaded) speaks it in one of ``VOICES`` with a voice variant, a speed
and a pitch drawn for it; the 22,050 Hz output is resampled to 16 kHz mono and white noise
added at a signal-to-noise ratio drawn from ``SNR_DB``.

Everything is deterministic in the seed: the texts come from one seeded stream (dev and test
first, every text distinct; training texts never one of theirs), and the voice, speed, pitch and
noise of utterance i of a split from its own stream, ``stream_seed(seed, split, i)``, so any
process can speak any utterance and the files do not depend on how many processes spoke them.
One espeak-ng process is started per utterance: speaking a batch in one call with SSML breaks
between utterances was faster, but cutting its output at the silences lost utterances
(docs/benchmarks.md, *Design choices measured*), so each utterance gets its own call, and
``workers`` processes share them.
"""

from __future__ import annotations

import multiprocessing
import random
import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ...errors import UserError
from ...files import check_folder, write_files, write_output
from ...progress import StepProgress
from ...utils import stream_seed
from ..audio import decode_wav, wav_bytes
from ..splits import check_split_sizes, tsv_text
from .dates import date_patterns, iter_dates

ESPEAK = "espeak-ng"
# English voices of Debian's espeak-ng and the variants that change their timbre (no MBROLA voice:
# those need packages of their own)
VOICES = ("en-us", "en-gb", "en-gb-scotland", "en-gb-x-rp", "en-029", "en-us-nyc", "en-gb-x-gbclan", "en-gb-x-gbcwmd")
VARIANTS = ("", "m1", "m2", "m3", "m4", "f1", "f2", "f3", "f4", "klatt", "klatt2", "croak")
SPEEDS = (140, 210)  # words per minute, drawn uniformly (espeak-ng's default: 175)
PITCHES = (25, 75)  # 0-99 (espeak-ng's default: 50)
SNR_DB = (15.0, 40.0)  # signal-to-noise ratio of the white noise added, dB
# date patterns said as they are written (no abbreviations, no numeric forms, no leading zeros)
SPOKEN_PATTERNS = ("MMMM d, y", "d MMMM y", "EEEE, MMMM d, y", "EEEE, d MMMM y")
DIGITS = (1, 6)  # a number has this many digits, the count drawn uniformly, then the number


def check_espeak() -> str:
    """The path of espeak-ng; a UserError saying how to install it when it is not installed."""
    path = shutil.which(ESPEAK)
    if path is None:
        raise UserError(
            "espeak-ng is not installed: attnseq data speech speaks its utterances with it; install "
            "Debian's package (apt-get install espeak-ng)"
        )
    return path


def spoken_texts(counts: dict[str, int], seed: int) -> dict[str, list[str]]:
    """{split: texts}: ``counts[split]`` texts for each split, half dates and half numbers (drawn
    in turn from one seeded stream); every dev and test text distinct, no training text one of them."""
    rng = random.Random(stream_seed(seed, "texts"))
    patterns = [p for p in date_patterns(("en",)) if p.pattern in SPOKEN_PATTERNS]
    dates = iter_dates(rng, patterns)
    held: set[str] = set()
    texts: dict[str, list[str]] = {}
    for split in ("dev", "test", "train"):  # held-out texts first, so training avoids them
        chosen: list[str] = []
        seen: set[str] = set()
        draws = 0
        while len(chosen) < counts.get(split, 0):
            draws += 1
            if draws > 50 * counts[split] + 1000:
                raise ValueError(f"{split}: cannot draw {counts[split]} texts apart from the other splits'")
            if rng.random() < 0.5:
                text = next(dates)[0].lower()
            else:
                digits = rng.randint(*DIGITS)
                text = str(rng.randint(0 if digits == 1 else 10 ** (digits - 1), 10**digits - 1))
            if text in held or split != "train" and text in seen:
                continue
            seen.add(text)
            chosen.append(text)
        texts[split] = chosen
        if split != "train":
            held |= seen
    return {split: texts[split] for split in counts}


@dataclass(frozen=True)
class Voice:
    """How one utterance is said: an espeak-ng voice (with its variant), speed (words per
    minute), pitch (0-99), the signal-to-noise ratio of the noise added (dB) and its seed."""

    name: str
    speed: int
    pitch: int
    snr_db: float
    noise_seed: int

    @classmethod
    def draw(cls, seed: int) -> Voice:
        """The voice of the stream ``seed``."""
        rng = random.Random(seed)
        variant = rng.choice(VARIANTS)
        return cls(
            rng.choice(VOICES) + (f"+{variant}" if variant else ""),
            rng.randint(*SPEEDS),
            rng.randint(*PITCHES),
            round(rng.uniform(*SNR_DB), 1),
            rng.getrandbits(32),
        )


def speak(text: str, voice: Voice, espeak: str = ESPEAK) -> np.ndarray:
    """``text`` said by espeak-ng in ``voice``, 16 kHz mono, noise added: (N,) float32 in [-1, 1]."""
    done = subprocess.run(
        [espeak, "-v", voice.name, "-s", str(voice.speed), "-p", str(voice.pitch), "-z", "--stdout", "--", text],
        capture_output=True,
        check=False,
    )
    if done.returncode != 0 or not done.stdout:
        raise RuntimeError(f"espeak-ng failed on {text!r} ({voice.name}): {done.stderr.decode(errors='replace')}")
    samples = decode_wav(fixed_header(done.stdout), f"espeak-ng's output for {text!r}")  # (N,) at 16 kHz
    power = float(np.mean(samples**2)) or 1e-8
    noise = np.random.default_rng(voice.noise_seed).standard_normal(len(samples)).astype(np.float32)
    noisy = samples + noise * np.float32(np.sqrt(power / 10 ** (voice.snr_db / 10)))
    return np.clip(noisy, -1.0, 1.0)


def fixed_header(data: bytes) -> bytes:
    """A WAV written to a pipe (espeak-ng --stdout) with the sizes of its header set from the bytes
    that came (a pipe cannot be sought back to write them)."""
    at = data.find(b"data", 12)
    if data[:4] != b"RIFF" or at < 0:
        return data
    out = bytearray(data)
    out[4:8] = (len(data) - 8).to_bytes(4, "little")
    out[at + 4 : at + 8] = (len(data) - at - 8).to_bytes(4, "little")
    return bytes(out)


@dataclass(frozen=True)
class Utterances:
    """Speaks utterances of one corpus into ``out``: ``self((split, first, texts))`` writes
    ``out/split/NNNNNN.wav`` for utterances first, first + 1, ... (numbered from 1) and returns
    their TSV rows ``(split/NNNNNN.wav, text)``. Picklable, so worker processes can run it."""

    out: str
    seed: int
    overwrite: bool
    espeak: str = ESPEAK

    def __call__(self, task: tuple[str, int, list[str]]) -> list[tuple[str, str]]:
        split, first, texts = task
        rows = []
        for number, text in enumerate(texts, first + 1):
            name = f"{split}/{number:06d}.wav"
            samples = speak(text, Voice.draw(stream_seed(self.seed, split, number)), self.espeak)
            write_output(Path(self.out) / name, wav_bytes(samples), overwrite=self.overwrite)
            rows.append((name, text))
        return rows


CHUNK = 50  # utterances a worker speaks per task


def speak_corpus(
    out: str | Path, texts: dict[str, list[str]], seed: int, workers: int = 1, overwrite: bool = False
) -> Iterator[tuple[str, list[tuple[str, str]]]]:
    """(split, rows) of each chunk of utterances spoken into ``out`` (see Utterances), in order,
    by ``workers`` processes."""
    speaker = Utterances(str(out), seed, overwrite, check_espeak())
    tasks = [
        (split, start, split_texts[start : start + CHUNK])
        for split, split_texts in texts.items()
        for start in range(0, len(split_texts), CHUNK)
    ]
    if workers <= 1 or len(tasks) <= 1:
        for task in tasks:
            yield task[0], speaker(task)
        return
    with multiprocessing.get_context("spawn").Pool(min(workers, len(tasks))) as pool:
        for task, rows in zip(tasks, pool.imap(speaker, tasks)):
            yield task[0], rows


def write_speech(out: str | Path, counts: dict[str, int], seed: int, workers: int = 1, overwrite: bool = False) -> Path:
    """Speak ``counts`` ({"train": n, "dev": n, "test": n}) utterances into ``out``: each split's
    WAV files in ``out/SPLIT/`` and ``out/SPLIT.tsv`` (wav path<TAB>text), written through
    attnseq.files (``out`` holding files only with ``overwrite``); returns ``out``. Raises
    ValueError for a split that would be empty, UserError without espeak-ng."""
    check_espeak()  # before anything is written
    check_split_sizes(counts)
    texts = spoken_texts(counts, seed)
    check_folder(out, [f"{split}.tsv" for split in counts], overwrite=overwrite)
    rows: dict[str, list[tuple[str, str]]] = {split: [] for split in counts}
    with StepProgress("data speech", total=sum(counts.values()), unit="utterance") as progress:
        for split, spoken in speak_corpus(out, texts, seed, workers, overwrite=overwrite):
            rows[split].extend(spoken)
            progress.update(len(spoken))
    # the folder holds the WAV files now: the TSV files beside them, checked above
    write_files(out, {f"{split}.tsv": tsv_text(pairs) for split, pairs in rows.items()}, overwrite=True)
    return Path(out)
