"""speech: Listen, Attend and Spell on spoken numbers and dates: the LAS preset trained for a
budget of CPU minutes on utterances espeak-ng speaks here, its test exact match, and whether its
attention moves forward over the frames as it spells (the share of test items, and the
spectrogram with the attention of two of them)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from .base import REPRODUCTIONS, Finding, Reproduction, Result, RunRecord, Table, budget
from .plots import dev_exact_match_figure
from .spread import count_finding
from .texts import texts
from .training import curve, first_reaching, fit_preset, how_it_ended
from .wording import Phrase, joined

PRESET = "chan2016-las"
EXACT_MATCH = 0.95  # issue 29's bar: test exact match, and the share of monotonic test attentions
MONOTONIC = 0.95
TEXT = texts("speech")


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
    if attention is None:
        return TEXT.format("attention.none")
    if attention.name != "location":
        return TEXT.format("attention.named", name=attention.name)
    o = attention.options
    words = TEXT.format("attention.location", filters=o["filters"], width=o["width"])
    if o.get("window"):
        anchor = TEXT.format("attention.peak") if o.get("anchor") == "peak" else TEXT.format("attention.median")
        words += TEXT.format("attention.window", window=o["window"], anchor=anchor) + (
            TEXT.format("attention.back", back=o["back"]) if o.get("back") else TEXT.format("attention.on")
        )
    return words


@REPRODUCTIONS.register("speech", options=SpeechOptions)
class Speech(Reproduction):
    title, claim, quotes, source = TEXT.title, TEXT.claim, TEXT.quotes, TEXT.source
    default_seeds = 1
    nominal_minutes = 27.0  # speaking the utterances (about 6 minutes on 2 cores), training, decoding the test set

    def run(self) -> Result:
        from ..api import load
        from ..data.corpora.speech import write_speech
        from ..eval.alignment import monotonic_share, reach
        from ..eval.metrics import exact_match
        from ..nn.attention import SCORERS
        from ..nn.attention import forward_only as moves_forward_only

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
        forward_only = attention is not None and moves_forward_only(
            SCORERS.get(attention.name), SCORERS.options(attention, "model.attention")
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
            caption=TEXT.format(
                "caption",
                minutes=o.minutes,
                test=len(references),
                shares="; ".join(TEXT.format("slack", slack=k, share=v) for k, v in shares.items()),
            ),
        )
        figures = [self._curve(dev), *self._attention(model, found, paths, references)]
        return Result(
            summary=TEXT.format("summary", exact_match=score, minutes=summary["train_seconds"] / 60, monotonic=share),
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
                    TEXT.format("setup.folder", folder=o.data)
                    if o.data
                    else TEXT.format("setup.command", train=o.train, dev=o.dev, test=o.test)
                )
                + TEXT.format("setup.data"),
                *TEXT.paragraphs("setup.rest", preset=PRESET, attention=attention_words(attention)),
            ],
            budget=TEXT.format("budget", minutes=o.minutes),
            data={
                "test_exact_match": score,
                "monotonic_share": {str(k): v for k, v in shares.items()},
                "slack": o.slack,
                "monotonic_by_kind": by_kind,
                "kinds": {"numbers": len(numbers), "dates": len(dates)},
                "reach": reach(found),
                "forward_by_construction": forward_only,
                "window": (attention.options.get("window") or None)
                if attention and attention.name == "location"
                else None,
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
        """Core, both points of the claim: the recogniser learns (test exact match at the bar within
        the minutes asked) and its attention moves forward along the utterance (the share of test
        utterances against its bar); each a share of the test items by the exact binomial test.
        Attention held to a window from the previous alignment (the paper's speller had none), or
        forward by construction, says nothing of the paper's attention: that point is undecided."""
        score, minutes, bars, items = data["test_exact_match"], data["train_minutes"], data["bars"], data["test_items"]
        share = data["monotonic_share"][str(data["slack"])]
        row = (f"`{PRESET}`",)
        exact = count_finding(
            TEXT.phrase("exact_match", minutes=minutes, budget=data["budget_minutes"]),
            round(score * items),
            items,
            bars["exact_match"],
            "test utterances right",
            where=[(row, "test exact match")],
        )
        if minutes > data["budget_minutes"]:
            exact = Finding(False, exact.text + TEXT.phrase("late"), evidence=exact.evidence)
        forward = count_finding(
            TEXT.phrase("monotonic", slack=data["slack"]),
            round(share * items),
            items,
            bars["monotonic"],
            "test utterances",
            where=[(row, "monotonic test attention")],
        )
        window = data.get("window")
        if window or data.get("forward_by_construction"):
            forward = Finding(
                None,
                forward.text + (TEXT.phrase("windowed", window=window) if window else TEXT.phrase("forced")),
                reason=TEXT.phrase("held"),
            )
        findings = [exact, forward]
        kinds = data["monotonic_by_kind"]
        observations = [
            TEXT.phrase(
                "by_kind",
                slack=data["slack"],
                numbers=kinds["numbers"],
                number_count=data["kinds"]["numbers"],
                dates=kinds["dates"],
                date_count=data["kinds"]["dates"],
            )
        ]
        if "reach" in data:  # pages written before it have none
            observations.append(TEXT.phrase("reach", reach=data["reach"]))
        if data.get("forward_by_construction"):
            observations.append(TEXT.phrase("by_construction"))
        errors = [TEXT.phrase("errors.error", reference=r, output=h) for r, h in data["errors"]]
        observations.append(
            TEXT.phrase("errors.count", count=data["error_count"])
            + (
                TEXT.phrase("errors.list") + joined(errors, TEXT.format("errors.separator")) + TEXT.phrase("errors.end")
                if errors
                else TEXT.phrase("errors.end")
            )
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
        return path, TEXT.format("figure.curve")

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
            figures.append((path, TEXT.format("figure.attention", number=i + 1)))
        return figures
