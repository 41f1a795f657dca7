"""Log-mel filterbank features of a waveform: what a speech encoder reads, one vector a frame.

``log_mel(samples)`` gives (T, n_mels) for 16 kHz audio: frames of 25 ms every 10 ms (a Hann
window, centred, zero-padded at the ends), the power spectrum of each on ``torch.stft``, summed
through ``n_mels`` triangular filters evenly spaced on the mel scale, log(energy + 1e-6). The
filters are librosa's defaults (Slaney's mel scale, each filter's area normalised): librosa's
``feature.melspectrogram`` gives the same energies to float32 rounding (tests/test_speech.py
checks the filters against numbers of librosa's written there). librosa itself is not used:
it pulls numba, scipy and scikit-learn (20 packages) into an install for two functions, and
on torch the features of a 3.5 s utterance took less time than librosa's (the commit that
added this file gives the figures).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np
import torch

from .audio import SAMPLE_RATE


@dataclass(frozen=True)
class FeatureSettings:
    """How frames are cut and summarised: ``n_mels`` bands of frames ``window`` samples long every
    ``hop`` samples, the FFT over ``n_fft`` samples."""

    n_mels: int = 40  # Chan et al. 2016's 40 log-mel filterbank energies
    window: int = 400  # 25 ms at 16 kHz
    hop: int = 160  # 10 ms
    n_fft: int = 512


def hz_to_mel(hz: np.ndarray) -> np.ndarray:
    """Slaney's mel scale (the Auditory Toolbox's, librosa's default): linear below 1 kHz (3 mels
    per 200 Hz), logarithmic above it."""
    hz = np.asarray(hz, dtype=np.float64)
    linear = hz / (200.0 / 3)
    log_step = np.log(6.4) / 27.0
    return np.where(hz >= 1000.0, 15.0 + np.log(np.maximum(hz, 1e-10) / 1000.0) / log_step, linear)


def mel_to_hz(mel: np.ndarray) -> np.ndarray:
    """The inverse of hz_to_mel."""
    mel = np.asarray(mel, dtype=np.float64)
    log_step = np.log(6.4) / 27.0
    return np.where(mel >= 15.0, 1000.0 * np.exp(log_step * (mel - 15.0)), mel * (200.0 / 3))


@lru_cache(maxsize=8)
def mel_filters(n_mels: int, n_fft: int, rate: int = SAMPLE_RATE) -> torch.Tensor:
    """The filterbank (n_mels, n_fft // 2 + 1): filter m rises from mel point m to m + 1 and falls
    to m + 2 (n_mels + 2 points evenly spaced in mels from 0 Hz to rate / 2), scaled by
    2 / (its width in Hz) so every filter has the same area (librosa's ``filters.mel``)."""
    bins = np.linspace(0, rate / 2, n_fft // 2 + 1)  # (F,) each FFT bin's frequency
    points = mel_to_hz(np.linspace(hz_to_mel(0.0), hz_to_mel(rate / 2), n_mels + 2))  # (M + 2,)
    widths = np.diff(points)  # (M + 1,)
    ramps = points[:, None] - bins[None, :]  # (M + 2, F)
    lower = -ramps[:-2] / widths[:-1, None]  # (M, F)
    upper = ramps[2:] / widths[1:, None]
    filters = np.maximum(0.0, np.minimum(lower, upper)) * (2.0 / (points[2:] - points[:-2]))[:, None]
    return torch.from_numpy(filters.astype(np.float32))


def log_mel(samples: np.ndarray | torch.Tensor, settings: FeatureSettings = FeatureSettings()) -> torch.Tensor:
    """The log-mel filterbank features of ``samples`` (N,) at 16 kHz: (1 + N // hop, n_mels) float32."""
    wave = torch.as_tensor(samples, dtype=torch.float32)
    spectrum = torch.stft(
        wave,
        settings.n_fft,
        settings.hop,
        settings.window,
        torch.hann_window(settings.window),
        center=True,
        pad_mode="constant",
        return_complex=True,
    )  # (F, T)
    power = spectrum.real**2 + spectrum.imag**2
    energies = mel_filters(settings.n_mels, settings.n_fft) @ power  # (M, T)
    return torch.log(energies + 1e-6).T.contiguous()  # (T, M)
