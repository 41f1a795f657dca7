"""speech: Listen, Attend and Spell on spoken numbers and dates: the LAS preset trained for a
budget of CPU minutes on utterances espeak-ng speaks here, its test exact match, and whether its
attention moves forward over the frames as it spells (the share of test items, and the
spectrogram with the attention of two of them)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from .base import REPRODUCTIONS, Finding, Quote, Reproduction, Result, RunRecord, Table, budget
from .plots import dev_exact_match_figure
from .training import curve, first_reaching, fit_preset, how_it_ended
from .wording import Phrase, joined

PRESET = "chan2016-las"
EXACT_MATCH = 0.95  # issue 29's bar: test exact match, and the share of monotonic test attentions
MONOTONIC = 0.95


@dataclass
class SpeechOptions:
    minutes: float = budget(20.0)  # wall-clock minutes of training (its dev evaluations included)
    train: int = 12000  # training utterances (attnseq data speech --train)
    dev: int = 500
    test: int = 1000
    dev_sentences: int = 500  # dev utterances decoded at each evaluation
    slack: int = 0  # listener steps an output token's most attended step may lie before the one before it
    data: str = ""  # a folder attnseq data speech wrote (its own sizes and seed); empty: speak one into the runs folder


def attention_words(attention) -> str:
    """The preset's attention (model.attention, a Variant) as the page's setup describes it."""
    if attention is None or attention.name != "location":
        return f"{attention.name if attention else 'no'} attention"
    o = attention.options
    words = (
        f"location-aware attention (Chorowski et al. 2015: {o['filters']} filters of width {o['width']} over "
        "the previous alignment)"
    )
    if o.get("window"):
        words += (
            f" windowed to the {o['window']} listener steps from the previous alignment's "
            + ("most attended one" if o.get("anchor") == "peak" else "median")
            + (f" on, and {o['back']} before it" if o.get("back") else " on")
        )
    return words


@REPRODUCTIONS.register("speech", options=SpeechOptions)
class Speech(Reproduction):
    title = "Listen, Attend and Spell on spoken numbers and dates"
    claim = (
        "Attention lets a speech recogniser attend to the parts of the utterance that matter: a pyramidal "
        "bidirectional listener over log-mel frames and an attending speller learn speech to characters end to "
        "end, and the attention moves along the utterance as the characters are spelled (the paper's figure 2)."
    )
    quotes = (
        Quote(
            "语音识别: 注意力机制可以让语音识别模型更好地关注输入语音序列中的重要部分,提高识别准确率。",
            "seed document 004, applications, 4",
            "speech recognition: attention lets a speech recognition model attend better to the important "
            "parts of the input speech sequence, improving its accuracy.",
        ),
    )
    source = (
        'Chan, Jaitly, Le & Vinyals 2016, "Listen, Attend and Spell" (ICASSP), §3 (eq. 5, the pBLSTM) and '
        "figure 2 (the alignment); the preset `configs/chan2016-las.yaml`; `attnseq data speech`."
    )
    default_seeds = 1
    nominal_minutes = 27.0  # speaking the utterances (about 6 minutes on 2 cores), training, decoding the test set

    def run(self) -> Result:
        from ..api import load
        from ..data.corpora.speech import write_speech
        from ..eval.alignment import monotonic_share, reach
        from ..eval.metrics import exact_match
        from ..nn.attention import SCORERS

        o, ctx = self.options, self.context
        if o.data:
            data = Path(o.data)
        else:
            data = ctx.run_dir("data")
            write_speech(data, {"train": o.train, "dev": o.dev, "test": o.test}, seed=1, workers=2, overwrite=True)
        run_dir = ctx.run_dir(PRESET)
        settings = [
            f"train.max_minutes={o.minutes}",
            "train.epochs=1000",
            f"train.eval_max_sentences={o.dev_sentences}",
        ]
        summary = fit_preset(ctx, PRESET, run_dir, data, settings, seed=ctx.seed_list[0])
        plateau = "train.patience" in (summary.get("stopped_by") or "")  # else its minutes ran out
        dev = curve(run_dir, "dev_exact_match", "minutes")
        model = load(run_dir)
        pairs = [line.split("\t") for line in (data / "test.tsv").read_text(encoding="utf-8").splitlines()]
        paths, references = [str(data / name) for name, _ in pairs], [text for _, text in pairs]
        found = model.search(paths, keep_attention=True)
        outputs = [t.outputs[0] for t in found]
        score = exact_match(outputs, references)
        shares = {slack: monotonic_share(found, slack) for slack in sorted({0, 1, o.slack})}
        share = shares[o.slack]
        numbers = [t for t, r in zip(found, references) if r.isdigit()]
        dates = [t for t, r in zip(found, references) if not r.isdigit()]
        by_kind = {"numbers": monotonic_share(numbers, o.slack), "dates": monotonic_share(dates, o.slack)}
        attention = getattr(model.config.model, "attention", None)  # a window from the previous peak: forward
        forward_only = attention is not None and SCORERS.get(attention.name).forward_only(
            SCORERS.options(attention, "model.attention")
        )
        reached = first_reaching(dev, EXACT_MATCH)
        errors = [(r, h) for r, h in zip(references, outputs) if r != h]
        table = Table(
            [
                "preset",
                "parameters",
                "updates",
                "training minutes",
                "best dev exact match",
                f"minutes to dev {EXACT_MATCH:.0%}",
                "test exact match",
                "monotonic test attention",
            ],
            [
                [
                    f"`{PRESET}`",
                    f"{summary['parameters']:,}",
                    f"{summary['step']:,}",
                    f"{summary['train_seconds'] / 60:.1f}",
                    f"{max(dev.y, default=0.0):.1%}",
                    "not reached" if reached is None else f"{reached:.1f}",
                    f"**{score:.1%}**",
                    f"**{share:.1%}** (slack {o.slack})",
                ]
            ],
            caption=(
                f"One run of {o.minutes:.3g} wall-clock minutes (dev evaluations included), the best dev "
                f"checkpoint decoded greedily on the {len(references)} test utterances (texts never in "
                "training). Monotonic: every output token's most attended listener step at or after the one "
                "before it (the end-of-output step left out) "
                + "; ".join(f"with slack {k}: {v:.1%}" for k, v in shares.items())
                + "."
            ),
        )
        figures = [self._curve(dev), *self._attention(model, found, paths, references)]
        return Result(
            summary=(
                f"test exact match {score:.1%} after {summary['train_seconds'] / 60:.1f} minutes of training; "
                f"monotonic attention on {share:.1%} of the test utterances"
            ),
            tables=[table],
            figures=figures,
            runs=[
                RunRecord(
                    PRESET,
                    ctx.seed_list[0],
                    round(summary["wall_seconds"] / 60, 2) if plateau else o.minutes,
                    o.minutes,
                    plateau,
                    unit="minutes",
                    **how_it_ended(run_dir),
                )
            ],
            setup=[
                (
                    f"Data: the folder {o.data}, written by `attnseq data speech`"
                    if o.data
                    else f"Data: `attnseq data speech --train {o.train} --dev {o.dev} --test {o.test}` (seed 1)"
                )
                + ": numbers "
                "of 1-6 digits and dates in four English patterns said as written, by espeak-ng in 8 English "
                "voices with 12 variants, 140-210 words a minute, pitch 25-75, white noise at 15-40 dB SNR, "
                "16 kHz; dev and test texts never in training.",
                "Features: 40 log-mel bands of 25 ms frames every 10 ms, each band normalised over the utterance.",
                f"Model: `configs/{PRESET}.yaml`: 3 frames joined, a BLSTM and 2 pBLSTM layers (12 frames a "
                f"listener step), 128 units; a Luong speller with input feeding and {attention_words(attention)}; "
                "Adam 2e-3 halved on a dev plateau, batches of 32, one thread.",
                "The paper: 3 pBLSTM layers of 256 units a direction, a 2-layer speller of 512, on 2,000 hours of "
                "Google voice search, 14.1% WER (10.3% with a language model).",
            ],
            budget=f"{o.minutes:.3g} minutes of training, 1 seed",
            data={
                "test_exact_match": score,
                "monotonic_share": {str(k): v for k, v in shares.items()},
                "slack": o.slack,
                "monotonic_by_kind": by_kind,
                "kinds": {"numbers": len(numbers), "dates": len(dates)},
                "reach": reach(found),
                "forward_by_construction": forward_only,
                "dev_curve": {"minutes": dev.x, "exact_match": dev.y},
                "steps": summary["step"],
                "train_minutes": summary["train_seconds"] / 60,
                "budget_minutes": o.minutes,
                "bars": {"exact_match": EXACT_MATCH, "monotonic": MONOTONIC},
                "test_items": len(references),
                "errors": [[r, h] for r, h in errors[:8]],
                "error_count": len(errors),
            },
        )

    @staticmethod
    def judge(data: dict) -> tuple[list[Finding], list[Phrase]]:
        score, minutes, bars = data["test_exact_match"], data["train_minutes"], data["bars"]
        share = data["monotonic_share"][str(data["slack"])]
        findings = [
            Finding(
                score >= bars["exact_match"] and minutes <= data["budget_minutes"],
                Phrase(
                    "test exact match {:.1%} after {:.1f} minutes of training (the bar: {:.0%} within {:g} minutes).",
                    score,
                    minutes,
                    bars["exact_match"],
                    data["budget_minutes"],
                ),
            ),
            Finding(
                share >= bars["monotonic"],
                Phrase(
                    "the attention moves forward over the frames on {:.1%} of the {} test utterances (slack "
                    "{}; the bar: {:.0%}).",
                    share,
                    data["test_items"],
                    data["slack"],
                    bars["monotonic"],
                ),
            ),
        ]
        kinds = data["monotonic_by_kind"]
        observations = [
            Phrase(
                "monotonic by kind (slack {}): {:.1%} of the {} numbers, {:.1%} of the {} dates.",
                data["slack"],
                kinds["numbers"],
                data["kinds"]["numbers"],
                kinds["dates"],
                data["kinds"]["dates"],
            )
        ]
        if "reach" in data:  # pages written before it have none
            observations.append(
                Phrase(
                    "the last output character's most attended listener step lies {:.0%} of the "
                    "way through its utterance on average.",
                    data["reach"],
                )
            )
        if data.get("forward_by_construction"):
            observations.append(
                Phrase(
                    "the preset's attention window starts at the previous step's most attended "
                    "listener step (model.attention: location, anchor: peak), so no step can "
                    "attend most to an earlier one: the monotonic share holds by construction, "
                    "and the exact match and the reach above say whether the attention reads "
                    "the utterance."
                )
            )
        errors = [Phrase('"{}" -> "{}"', r, h) for r, h in data["errors"]]
        observations.append(
            Phrase("{} test errors", data["error_count"])
            + (Phrase(": ") + joined(errors, "; ") + "." if errors else Phrase("."))
        )
        return findings, observations

    def _curve(self, dev):
        path = dev_exact_match_figure(
            self.context.figure("curve"),
            [dev],
            f"`{PRESET}`",
            EXACT_MATCH,
            "Listen, Attend and Spell on spoken numbers and dates",
        )
        return path, "Dev exact match against minutes of training."

    def _attention(self, model, found, paths, references):
        """The spectrogram and attention of the first spoken date and the first number of the test set."""
        from ..viz.audio_attention import plot_audio_attention

        chosen = [
            next(i for i, r in enumerate(references) if r[:1].isalpha()),
            next(i for i, r in enumerate(references) if r.isdigit()),
        ]
        figures = []
        for number, i in enumerate(chosen, 1):
            t = found[i]
            features = model.pipeline.read_file(paths[i]).ids
            path = plot_audio_attention(
                features,
                t.attention[0],
                t.output_tokens[0],
                self.context.figure(f"attention{number}"),
                title=t.outputs[0],
            )
            figures.append(
                (
                    path,
                    f"Test utterance {i + 1}: its log-mel spectrogram (a line at each output "
                    "character's most attended listener step) and the attention of every character.",
                )
            )
        return figures
