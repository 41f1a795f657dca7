"""Speech to text (Chan et al. 2016): WAV files read and written, spoken numbers and dates made
with espeak-ng."""
from __future__ import annotations

import shutil
import wave

import numpy as np
import pytest

from attnseq.cli import main
from attnseq.data.audio import SAMPLE_RATE, read_wav, resample, wav_bytes
from attnseq.errors import DataError

needs_espeak = pytest.mark.skipif(shutil.which("espeak-ng") is None,
                                  reason="espeak-ng is not installed: attnseq data speech speaks with it "
                                         "(apt-get install espeak-ng; .ci/run installs it as root)")


def tone(hz: float, seconds: float = 0.5, rate: int = SAMPLE_RATE) -> np.ndarray:
    return (0.5 * np.sin(2 * np.pi * hz * np.arange(int(rate * seconds)) / rate)).astype(np.float32)


# -- WAV files ------------------------------------------------------------------------------------
def test_a_wav_written_reads_back_and_other_rates_and_channels_become_16k_mono(tmp_path):
    samples = tone(440)
    path = tmp_path / "a.wav"
    path.write_bytes(wav_bytes(samples))
    assert np.abs(read_wav(path) - samples).max() < 1 / 32767 + 1e-6
    stereo = tmp_path / "stereo.wav"
    with wave.open(str(stereo), "wb") as w:  # 22,050 Hz, two channels, the second silent
        w.setnchannels(2), w.setsampwidth(2), w.setframerate(22050)
        pcm = (tone(440, rate=22050) * 32767).astype("<i2")
        w.writeframes(np.stack([pcm, np.zeros_like(pcm)], 1).tobytes())
    read = read_wav(stereo)
    assert len(read) == SAMPLE_RATE // 2
    assert np.abs(read[1000:-1000] - tone(440)[1000:-1000] / 2).max() < 1e-3  # mixed to mono, resampled


def test_resampling_keeps_a_tone_and_the_length():
    x = tone(1000, 1.3, rate=44100)
    y = resample(x, 44100)
    assert len(y) == round(len(x) * SAMPLE_RATE / 44100)
    assert np.abs(y[2000:-2000] - tone(1000, 1.3)[2000:len(y) - 2000]).max() < 1e-4


@pytest.mark.parametrize("content, says", [
    (b"", "not a WAV file"), (b"RIFF\x00\x00\x00\x00WAVEjunk", "not a WAV file"),
    (b"hello, this is text", "not a WAV file"), ("empty", "holds no samples"), (None, "cannot be read")])
def test_a_bad_wav_file_is_a_data_error_naming_it(tmp_path, content, says):
    path = tmp_path / "bad.wav"
    if content == "empty":
        path.write_bytes(wav_bytes(np.zeros(0, np.float32)))
    elif content is not None:
        path.write_bytes(content)
    with pytest.raises(DataError, match=rf"^{path}: {says}"):
        read_wav(path)


# -- spoken numbers and dates ----------------------------------------------------------------------
def test_spoken_texts_are_distinct_across_held_out_splits_and_deterministic():
    from attnseq.data.speech import spoken_texts

    texts = spoken_texts({"train": 300, "dev": 50, "test": 50}, seed=3)
    assert texts == spoken_texts({"train": 300, "dev": 50, "test": 50}, seed=3)
    assert not set(texts["train"]) & set(texts["dev"] + texts["test"])
    assert len(set(texts["dev"] + texts["test"])) == 100
    numbers = [t for t in texts["train"] if t.isdigit()]
    assert 100 < len(numbers) < 200 and all(t == str(int(t)) for t in numbers)
    assert all(t == t.lower() for t in texts["train"])


@needs_espeak
def test_data_speech_writes_wav_files_and_their_text_the_same_for_any_workers(tmp_path, capsys):
    for workers in ("1", "2"):
        main(["data", "speech", "--out", str(tmp_path / workers), "--train", "6", "--dev", "2", "--test", "2",
              "--workers", workers])
    assert "wrote 6 train, 2 dev, 2 test utterances" in capsys.readouterr().out
    rows = (tmp_path / "1" / "train.tsv").read_text().splitlines()
    assert len(rows) == 6 and rows[0].startswith("train/000001.wav\t")
    for row in rows:
        name, text = row.split("\t")
        samples = read_wav(tmp_path / "1" / name)
        assert 0.3 * SAMPLE_RATE < len(samples) < 8 * SAMPLE_RATE and np.abs(samples).max() > 0.05
        assert (tmp_path / "1" / name).read_bytes() == (tmp_path / "2" / name).read_bytes()
    with wave.open(str(tmp_path / "1" / "dev" / "000001.wav")) as w:
        assert (w.getframerate(), w.getnchannels(), w.getsampwidth()) == (SAMPLE_RATE, 1, 2)


def test_data_speech_without_espeak_says_how_to_install_it(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(shutil, "which", lambda name: None)
    assert main(["data", "speech", "--out", str(tmp_path / "d"), "--train", "2", "--dev", "1", "--test", "1"]) == 2
    assert "espeak-ng is not installed" in capsys.readouterr().err
    assert not (tmp_path / "d").exists()
