"""Speech to text (Chan et al. 2016): WAV files read and written, log-mel features, spoken numbers
and dates made with espeak-ng."""

from __future__ import annotations

import shutil
import wave

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from learning import at_least, learns, seed

from attnseq.cli import main
from attnseq.data.audio import SAMPLE_RATE, read_wav, resample, wav_bytes
from attnseq.data.features import FeatureSettings, hz_to_mel, log_mel, mel_filters, mel_to_hz
from attnseq.errors import DataError

needs_espeak = pytest.mark.skipif(
    shutil.which("espeak-ng") is None,
    reason="espeak-ng is not installed: attnseq data speech speaks with it "
    "(apt-get install espeak-ng; .ci/run installs it as root)",
)


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
    assert np.abs(y[2000:-2000] - tone(1000, 1.3)[2000 : len(y) - 2000]).max() < 1e-4


@pytest.mark.parametrize(
    "content, says",
    [
        (b"", "not a WAV file"),
        (b"RIFF\x00\x00\x00\x00WAVEjunk", "not a WAV file"),
        (b"hello, this is text", "not a WAV file"),
        ("empty", "holds no samples"),
        (None, "cannot be read"),
    ],
)
def test_a_bad_wav_file_is_a_data_error_naming_it(tmp_path, content, says):
    path = tmp_path / "bad.wav"
    if content == "empty":
        path.write_bytes(wav_bytes(np.zeros(0, np.float32)))
    elif content is not None:
        path.write_bytes(content)
    with pytest.raises(DataError, match=rf"^{path}: {says}"):
        read_wav(path)


# -- features --------------------------------------------------------------------------------------
def test_log_mel_has_a_frame_every_10_ms_and_40_bands():
    features = log_mel(tone(440, 1.0))
    assert features.shape == (1 + SAMPLE_RATE // 160, 40) and features.dtype == torch.float32


@pytest.mark.parametrize("hz", [300.0, 1000.0, 2500.0, 6000.0])
def test_a_tone_s_energy_falls_in_the_mel_band_around_its_frequency(hz):
    features = log_mel(tone(hz))  # (T, 40)
    band = int(features[10:-10].mean(0).argmax())
    centres = mel_to_hz(np.linspace(hz_to_mel(0.0), hz_to_mel(SAMPLE_RATE / 2), 42))[1:-1]  # each filter's peak
    assert abs(band - int(np.abs(centres - hz).argmin())) <= 1
    assert features[10:-10, band].mean() > features[10:-10].mean() + 5  # far above the other bands (log energy)


def test_the_mel_filters_are_librosa_s():
    """Rows of librosa.filters.mel(sr=16000, n_fft=512, n_mels=40) (librosa 0.11.0), their nonzero
    bins from the first: log_mel's energies are librosa's melspectrogram's."""
    filters = mel_filters(40, 512).double().numpy()
    expected = {
        0: (1, [0.005773601, 0.011547202, 0.009864137, 0.004090535]),
        10: (24, [0.002641728, 0.008415329, 0.01299601, 0.007222408, 0.001448807]),
        25: (
            77,
            [
                0.000824087,
                0.001681093,
                0.002538099,
                0.003395105,
                0.004252111,
                0.005109117,
                0.004367625,
                0.003573236,
                0.002778847,
                0.001984457,
                0.001190068,
                0.000395678,
            ],
        ),
    }
    for row, (first, values) in expected.items():
        nonzero = np.nonzero(filters[row])[0]
        assert nonzero[0] == first and len(nonzero) == len(values)
        assert np.allclose(filters[row, nonzero], values, atol=1e-9)
    assert filters.shape == (FeatureSettings().n_mels, 257)


# -- spoken numbers and dates ----------------------------------------------------------------------
def test_spoken_texts_are_distinct_across_held_out_splits_and_deterministic():
    from attnseq.data.corpora.speech import spoken_texts

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
        main(
            [
                "data",
                "speech",
                "--out",
                str(tmp_path / workers),
                "--train",
                "6",
                "--dev",
                "2",
                "--test",
                "2",
                "--workers",
                workers,
            ]
        )
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


# -- data.input: audio -----------------------------------------------------------------------------
def audio_kind(**options):
    from attnseq.config import from_dict
    from attnseq.data.inputs import build_input

    return build_input(from_dict({"data": {"input": {"name": "audio", **options}}}).data)


def test_an_audio_source_is_its_frames_of_log_mels_normalised_over_the_utterance(tmp_path):
    path = tmp_path / "a.wav"
    path.write_bytes(wav_bytes(np.concatenate([tone(300), 0.1 * tone(3000)])))
    kind = audio_kind(n_mels=24)
    features = kind.read(path)
    assert features.shape == (101, 24) and features.dtype == np.float32 and kind.feature_size == 24
    assert np.abs(features.mean(0)).max() < 1e-4 and np.abs(features.std(0) - 1).max() < 1e-3
    assert kind.geometry(features) == (101,)
    assert np.array_equal(kind.read_bytes(path.read_bytes(), "upload"), features)
    assert kind.default_frontend == "pyramidal"


@settings(max_examples=25, deadline=None)
@given(rate=st.integers(1, 48_000), samples=st.integers(1, 4_000), positions=st.integers(1, 300))
def test_reading_a_wav_costs_what_is_kept_not_what_its_header_declares(rate, samples, positions):
    """A request's cost is bounded by the positions it may keep: a WAV read for ``positions``
    frames decodes and resamples little more than that, whatever its rate (1 Hz makes 16,000
    samples of each one) or length, and keeps at least one frame more where the sound has more,
    so the caller sees it cut. The peak memory stays far below what the whole file would take."""
    import tracemalloc

    data = wav_bytes(np.sin(np.arange(samples) / 3.0).astype(np.float32) * 0.5, rate)
    kind = audio_kind(n_mels=8)
    whole_frames = 1 + round(samples * SAMPLE_RATE / rate) // 160  # what the whole sound makes
    tracemalloc.start()
    try:
        features = kind.read_bytes(data, "upload.wav", positions)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert len(features) <= positions + 4  # little more than asked for
    assert len(features) > positions or len(features) >= whole_frames - 1  # cut visibly, or all of it
    assert peak < 64 * (positions + 4) * 160 * 8 + (4 << 20), peak  # bounded by the positions kept


def test_a_tsv_naming_a_file_that_is_no_wav_is_refused_naming_its_line(tmp_path):
    from attnseq.config import from_dict
    from attnseq.data.sources import load_splits

    (tmp_path / "a.wav").write_bytes(wav_bytes(tone(440)))
    (tmp_path / "b.wav").write_text("not a sound")
    (tmp_path / "train.tsv").write_text("a.wav\t1\nb.wav\t2\n")
    data = from_dict({"data": {"dir": str(tmp_path), "input": "audio", "tokenizer": "char"}}).data
    with pytest.raises(DataError, match=r"train.tsv:2: b.wav: not a WAV file"):
        load_splits(data)
    with pytest.raises(DataError, match=r"^upload: not a WAV file"):
        audio_kind().read_bytes(b"RIFF....WAVEfmt nonsense", "upload")


@pytest.mark.parametrize(
    "setting, key",
    [
        ({"input": {"name": "audio", "n_mels": 4}}, "data.input.n_mels"),
        ({"input": "audio", "reverse_source": True}, "data.reverse_source"),
    ],
)
def test_what_does_not_apply_to_audio_is_refused_by_key(setting, key):
    from attnseq.config import from_dict
    from attnseq.errors import ConfigError

    with pytest.raises(ConfigError) as err:
        from_dict({"data": setting})
    assert err.value.key == key


# -- a run that reads audio: translate, plot, the page's answer, learning -------------------------
@pytest.mark.slow
def test_translate_takes_wav_paths_and_plot_draws_the_attention_over_the_spectrogram(quick_runs, tmp_path, capsys):
    from helpers import tone_samples

    run = quick_runs["audio"]
    for i, tokens in enumerate((["l", "h"], ["h", "h", "l"])):
        (tmp_path / f"{i}.wav").write_bytes(wav_bytes(tone_samples(tokens)))
    paths = [str(tmp_path / "0.wav"), str(tmp_path / "1.wav")]
    assert main(["translate", str(run), "--files", *paths]) == 0
    lines = capsys.readouterr().out.splitlines()
    import attnseq

    model = attnseq.load(run)
    found = model.search(paths, keep_attention=True)
    assert lines == [t.outputs[0] for t in found]
    shape = found[1].shape
    assert shape.kind == "audio" and shape.size == (len(tone_samples(["h", "h", "l"])) // 160 + 1,)
    assert found[1].attention[0].shape[1] == shape.grid[0] == -(-shape.size[0] // 4)  # stack 2, one layer joining 2
    out = tmp_path / "attention.png"
    assert main(["plot", "attention", str(run), "--file", paths[1], "--out", str(out)]) == 0
    assert out.read_bytes()[:4] == b"\x89PNG"
    assert (
        main(["plot", "attention", str(run), "--file", str(tmp_path / "missing.wav"), "--out", str(tmp_path / "b.png")])
        == 2
    )
    assert "missing.wav" in capsys.readouterr().err


@pytest.mark.slow
def test_the_page_s_answer_for_audio_carries_the_spectrogram_the_attention_covers(quick_runs, tmp_path):
    from helpers import tone_samples

    import attnseq
    from attnseq.serve.payload import translation_payload

    model = attnseq.load(quick_runs["audio"])
    data = wav_bytes(tone_samples(["h", "l", "l"]))
    found = model.search([data], keep_attention=True)[0]
    payload = translation_payload("audio", model, found, with_attention=True)
    assert payload["source"] == "upload" and payload["source_shape"]["kind"] == "audio"
    frames = np.asarray(payload["spectrogram"])
    assert frames.shape == (payload["source_shape"]["size"][0], 16)
    assert np.abs(frames - model.pipeline.read_file("upload", 0, data).ids).max() <= 0.005
    assert "spectrogram" not in translation_payload("audio", model, found, with_attention=False)
    from attnseq.serve.payload import describe

    assert describe(model)["description"].startswith("rnn · pyramidal frontend, luong decoder")  # not model.encoder


@pytest.mark.slow
@learns
def test_las_learns_spoken_tones_with_attention_moving_along_the_frames(tmp_path):
    """The preset, small, on sequences of two tones (no espeak-ng needed; 4 frames, 40 ms, a listener
    step, so a tone of 120 ms spans three; with the preset's two pyramidal layers the listener
    mixes more context and its attention, general attention then, went back and forth on 60% of
    these items, exact all the same): >= 95% test exact match,
    and each output token's most attended listener step at or after the one before it on >= 95%
    of the test items (eval.alignment.monotonic_share)."""
    from helpers import ROOT, sets, write_tones_dir

    import attnseq
    from attnseq.eval.alignment import monotonic_share
    from attnseq.eval.metrics import exact_match

    data = write_tones_dir(tmp_path / "tones", sizes=(600, 40, 60), longest=5)
    run = tmp_path / "run"
    assert (
        main(
            [
                "-q",
                "train",
                str(ROOT / "configs" / "chan2016-las.yaml"),
                "--data",
                str(data),
                "--out",
                str(run),
                *sets(
                    "data.tokenizer=word",
                    "model.hidden_size=64",
                    "train.max_steps=800",
                    "model.frontend={name: pyramidal, layers: 1, reduction: 2, stack: 2}",
                    "train.eval_every=100",
                    "train.patience=0",
                    "train.progress=false",
                    "train.log_every=0",
                    "train.target_exact_match=1.0",
                    f"train.seed={seed(1)}",
                ),
            ]
        )
        == 0
    )
    pairs = [line.split("\t") for line in (data / "test.tsv").read_text().splitlines()]
    found = attnseq.load(run).search([str(data / name) for name, _ in pairs], keep_attention=True)
    at_least("test exact match", exact_match([t.outputs[0] for t in found], [text for _, text in pairs]), 0.95)
    at_least("monotonic share", monotonic_share(found), 0.95)
