"""Audio files: WAV read into samples and written from them, resampled to the rate features use.

attnseq reads 16 kHz mono audio (``SAMPLE_RATE``): a WAV of another rate is resampled, one of
several channels mixed to mono. Reading uses the standard library's ``wave`` module (PCM of 8,
16, 24 or 32 bits); a file that is not such a WAV, or holds no samples, is a DataError naming it.
"""

from __future__ import annotations

import io
import math
import struct
import wave
from pathlib import Path

import numpy as np

from ..errors import DataError

SAMPLE_RATE = 16_000  # samples per second of every waveform attnseq reads or writes
_PCM = {1: np.uint8, 2: np.int16, 4: np.int32}  # sample width (bytes) -> its dtype; 3 read apart


def resample(samples: np.ndarray, rate: int, to: int = SAMPLE_RATE) -> np.ndarray:
    """``samples`` (N,) at ``rate`` Hz as (round(N * to / rate),) at ``to`` Hz: band-limited, by
    the FFT of the whole signal cut (or padded) to the new rate's frequencies. The signal is
    padded with zeros to rate / gcd * 2^k samples first, so both transforms have lengths of small
    factors (an FFT of a length with a large prime factor takes many times longer)."""
    if rate == to or len(samples) == 0:
        return samples.astype(np.float32, copy=False)
    step = rate // math.gcd(rate, to)  # a padded length of step * 2^k samples becomes a whole number of them
    padded = step * 2 ** max(0, math.ceil(math.log2(len(samples) / step)))
    n_out = padded * to // rate
    spectrum = np.fft.rfft(samples.astype(np.float64), padded)  # (padded // 2 + 1,)
    bins = n_out // 2 + 1
    kept = np.zeros(bins, dtype=spectrum.dtype)
    kept[: min(bins, len(spectrum))] = spectrum[:bins]
    out = np.fft.irfft(kept, n_out) * (n_out / padded)
    return out[: max(1, int(round(len(samples) * to / rate)))].astype(np.float32)


def decode_wav(data: bytes, name: str, seconds: float = 0.0) -> np.ndarray:
    """The samples of the WAV file ``data`` (bytes), mono at SAMPLE_RATE, in [-1, 1]: (N,) float32;
    with ``seconds``, only its first ``seconds`` are read and resampled, however long its header
    says it is or however low its rate (the work is bounded by what is kept, not by the file).
    Raises DataError naming ``name`` when it is not a PCM WAV or holds no samples."""
    try:
        with wave.open(io.BytesIO(data)) as wav:
            channels, width, rate = wav.getnchannels(), wav.getsampwidth(), wav.getframerate()
            count = wav.getnframes()
            if seconds and rate >= 1:
                count = min(count, math.ceil(seconds * rate))
            frames = wav.readframes(count)
    except (wave.Error, EOFError, ValueError, RuntimeError, struct.error) as err:  # (RuntimeError: a chunk
        # longer than the file holds; any other a parser raises is the input kinds' boundary's, inputs/base.py)
        raise DataError(
            f"{name}: not a WAV file attnseq can read ({type(err).__name__}: {err}); give a PCM WAV "
            "(16 kHz mono is read as it is)"
        ) from None
    if channels < 1 or rate < 1:
        raise DataError(f"{name}: a WAV of {channels} channel(s) at {rate} Hz; give one of sound")
    if width == 3:  # 24-bit: widen each sample to 32 bits
        raw = np.frombuffer(frames[: len(frames) // 3 * 3], dtype=np.uint8).reshape(-1, 3)
        samples = np.pad(raw, ((0, 0), (1, 0))).view("<i4")[:, 0] / 2.0**31
    elif width in _PCM:
        raw = np.frombuffer(frames[: len(frames) // width * width], dtype=_PCM[width])
        samples = (raw / 128.0 - 1.0) if width == 1 else raw / float(2 ** (8 * width - 1))
    else:
        raise DataError(f"{name}: {8 * width}-bit samples; give a WAV of 8, 16, 24 or 32-bit PCM")
    samples = samples[: len(samples) // channels * channels].reshape(-1, channels).mean(1)  # (N,) mono
    if len(samples) == 0:
        raise DataError(f"{name}: holds no samples; give a WAV with sound in it")
    samples = resample(samples.astype(np.float32), rate)
    return samples[: math.ceil(seconds * SAMPLE_RATE)] if seconds else samples


def read_wav(path: str | Path, seconds: float = 0.0) -> np.ndarray:
    """The samples of the WAV file at ``path``, mono at SAMPLE_RATE in [-1, 1]: (N,) float32 (its
    first ``seconds`` with ``seconds``, as decode_wav). Raises DataError naming the file when it
    cannot be read as a WAV."""
    try:
        data = Path(path).read_bytes()
    except OSError as err:
        raise DataError(f"{path}: cannot be read ({err.strerror or err}); check the path") from None
    return decode_wav(data, str(path), seconds)


def wav_bytes(samples: np.ndarray, rate: int = SAMPLE_RATE) -> bytes:
    """``samples`` (N,) in [-1, 1] as the bytes of a 16-bit mono PCM WAV file at ``rate`` Hz."""
    pcm = (np.clip(samples, -1.0, 1.0) * 32767.0).round().astype("<i2")
    buffer = io.BytesIO()
    with wave.open(buffer, "wb") as wav:
        wav.setnchannels(1)
        wav.setsampwidth(2)
        wav.setframerate(rate)
        wav.writeframes(pcm.tobytes())
    return buffer.getvalue()
