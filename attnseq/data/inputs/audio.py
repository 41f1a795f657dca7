"""``data.input: audio``: the source column names a WAV file (data/audio.py: PCM of any rate and
channels, read as 16 kHz mono), read into its log-mel filterbank features (data/features.py),
each band normalised over the utterance to mean 0 and variance 1 (so a recording's level and
microphone do not matter; per utterance, so an utterance's features are the same in any batch).
Its features are the frames: (frames, n_mels), float32, a frame every 10 ms."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ...schema import number
from .base import INPUTS, InputKind, check_text_settings

NORMALISE_EPS = 1e-5  # added to each band's deviation over the utterance


@dataclass
class AudioOptions:
    n_mels: int = number(40, 8, 128)  # log-mel filterbank bands a frame (Chan et al. 2016: 40)


@INPUTS.register("audio", options=AudioOptions)
class AudioInput(InputKind):
    """WAV files as frames of ``options.n_mels`` normalised log-mel energies, 100 a second."""

    default_frontend = "pyramidal"

    @property
    def feature_size(self) -> int:
        return self.options.n_mels

    def check(self, data) -> None:
        check_text_settings(self, data)

    def features(self, samples: np.ndarray) -> np.ndarray:
        """The normalised log-mel features (frames, n_mels) float32 of ``samples`` (N,) at 16 kHz."""
        from ..features import FeatureSettings, log_mel

        energies = log_mel(samples, FeatureSettings(n_mels=self.options.n_mels)).numpy()  # (T, M)
        return ((energies - energies.mean(0)) / (energies.std(0) + NORMALISE_EPS)).astype(np.float32)

    @staticmethod
    def seconds(positions: int) -> float:
        """The sound that makes ``positions`` frames and one more (10 ms each; 0: all of it)."""
        return (positions + 2) / 100 if positions else 0.0

    def read(self, path: Path, positions: int = 0) -> np.ndarray:
        from ..audio import read_wav

        return self.features(read_wav(path, self.seconds(positions)))

    def read_bytes(self, data: bytes, name: str, positions: int = 0) -> np.ndarray:
        from ..audio import decode_wav

        return self.features(decode_wav(data, name, self.seconds(positions)))

    def geometry(self, features: np.ndarray) -> tuple[int, ...]:
        """(frames,): 10 ms each."""
        return (len(features),)

    def probe(self, path: Path) -> str | None:
        try:
            with open(path, "rb") as file:
                head = file.read(12)
        except FileNotFoundError:
            return "no such file"
        except OSError as err:
            return err.strerror or str(err)
        if head[:4] != b"RIFF" or head[8:12] != b"WAVE":
            return "not a WAV file (no RIFF/WAVE header)"
        return None
