"""speech: Listen, Attend and Spell on spoken numbers and dates. The LAS preset's listener and
speller with location-aware attention and no window (the paper's speller had none), against the same
listener and speller without attention (the context at every step, Cho et al.) and, as a disclosed
ablation, the preset's attention held to a window from the previous alignment; each trained to its
plateau on utterances espeak-ng speaks here, over seeds: test exact match, and whether the attention
moves forward over the frames as it spells (the share of test utterances, and the spectrogram with
the attention of two of them)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from .base import REPRODUCTIONS, Finding, Reproduction, Result, Table, budget
from .datasets import count
from .plots import draw_seeds, seeds_note
from .spread import Spread, bar_finding, better_finding
from .texts import texts
from .training import PlateauOptions, curve, fit_seeds, step_budget
from .wording import Phrase, joined

PRESET = "chan2016-las"
# label, overrides of the preset; the preset's own attention is the windowed one
ARMS = (
    ("las", ["model.attention={name: location, filters: 10, width: 15}"]),  # no window: the paper's speller
    ("las-window", []),  # the preset: a window of 8 listener steps from the previous alignment's median
    ("no-attention", ["model.decoder=cho2014", "model.attention=null"]),  # the listener's summary at every step
)
MAIN, WINDOW, NONE = (label for label, _ in ARMS)
OBSERVED = (WINDOW,)  # the ablation: reported, never deciding
ATTENDING = (MAIN, WINDOW)
EXACT_MATCH = 0.95  # issue 29's bar: the mean test exact match over seeds
MONOTONIC = 0.95  # and the mean share of test utterances whose attention moves forward
COLORS = {MAIN: "tab:red", WINDOW: "tab:orange", NONE: "tab:gray"}
TEXT = texts("speech")


@dataclass
class SpeechOptions(PlateauOptions):
    steps: int = budget(6000)  # the cap of updates of every run (batch 32)
    eval_every: int = 300  # updates between dev evaluations (the curves)
    train: int = 12000  # training utterances (attnseq data speech --train)
    dev: int = 500
    test: int = 1000
    dev_sentences: int = 300  # dev utterances decoded at each evaluation
    # listener steps (12 frames, 120 ms) an output character's most attended step may lie before the
    # one before it: a spoken word spans several steps and spells several characters in each
    slack: int = 1
    data: str = ""  # a folder attnseq data speech wrote (its own sizes and seed); empty: speak one into the runs folder


def attention_words(attention) -> str:
    """A model's attention (model.attention, a Variant or None) as the page's setup describes it."""
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
    default_seeds = 5
    nominal_minutes = (
        170.0  # speaking the utterances (about 6 minutes on 2 cores), 15 runs, decoding the test set 15 times
    )

    def run(self) -> Result:
        from ..api import load
        from ..data.corpora.speech import write_speech
        from ..eval.alignment import monotonic_share, reach
        from ..eval.metrics import exact_match
        from ..runs import read_metrics

        o, ctx = self.options, self.context
        if o.data:
            data = Path(o.data)
        else:
            data = ctx.run_dir("data")
            sizes = {"train": o.train, "dev": o.dev, "test": o.test}
            # spoken once: a resumed page (or a rerun) keeps the utterances already spoken there (seed 1)
            if not all((data / f"{s}.tsv").exists() and count(data, s) == n for s, n in sizes.items()):
                write_speech(data, sizes, seed=1, workers=2, overwrite=True)
        settings = [
            "train.max_minutes=0",
            # one precision for every run: auto times each model and picked bfloat16 for some seeds of an
            # arm and float32 for others on a loaded AMX machine, a difference between runs no seed should make
            "train.precision=fp32",
            *step_budget(o.steps, o.eval_every, o.dev_sentences, o),
        ]
        runs, records = fit_seeds(ctx, [(label, PRESET, extra) for label, extra in ARMS], data, settings, o.steps)
        for record in records:
            record.core = record.label not in OBSERVED
        pairs = [line.split("\t") for line in (data / "test.tsv").read_text(encoding="utf-8").splitlines()]
        paths, references = [str(data / name) for name, _ in pairs], [text for _, text in pairs]
        kinds = {"numbers": [r.isdigit() for r in references], "dates": [not r.isdigit() for r in references]}
        slacks = sorted({0, 1, o.slack})
        exact = {label: [] for label, _ in ARMS}
        monotonic = {str(s): {label: [] for label in ATTENDING} for s in slacks}
        by_kind = {label: {kind: [] for kind in kinds} for label in ATTENDING}
        reached = {label: [] for label in ATTENDING}
        curves = {label: [] for label, _ in ARMS}
        parameters, attention, shown, errors, precisions = {}, {}, {}, [], {}
        updates = {label: [r.trained for r in records if r.label == label] for label, _ in ARMS}
        for seed, label, run_dir in runs:
            model = load(run_dir)
            found = model.search(paths, keep_attention=label in ATTENDING)
            outputs = [t.outputs[0] for t in found]
            exact[label].append(100 * exact_match(outputs, references))
            curves[label].append(curve(run_dir, "dev_exact_match"))
            start = next((r for r in read_metrics(run_dir) if r.get("type") == "start"), {})
            parameters[label] = start.get("parameters", 0)
            precisions.setdefault(start.get("precision", "fp32"), []).append(f"{label}-seed{seed}")
            attention[label] = getattr(model.config.model, "attention", None)
            if label in ATTENDING:
                for s in slacks:
                    monotonic[str(s)][label].append(100 * monotonic_share(found, s))
                for kind, chosen in kinds.items():
                    share = monotonic_share([t for t, keep in zip(found, chosen) if keep], o.slack)
                    by_kind[label][kind].append(100 * share)
                reached[label].append(100 * reach(found))
                if seed == ctx.seed_list[0]:
                    shown[label] = (model, found)
            if label == MAIN and seed == ctx.seed_list[0]:
                errors = [(r, h) for r, h in zip(references, outputs) if r != h]
        spread = lambda values: Spread(values).format(unit="%")  # noqa: E731
        table = Table(
            [
                "model",
                "attention",
                "parameters",
                "updates",
                "test exact match",
                *(f"monotonic test attention (slack {s})" for s in slacks),
                f"monotonic on dates (slack {o.slack})",
            ],
            [
                [
                    label,
                    attention_words(attention[label]),
                    f"{parameters[label]:,}",
                    f"{Spread(updates[label]).mean:,.0f}",
                    spread(exact[label]),
                    *(spread(monotonic[str(s)][label]) if label in ATTENDING else "-" for s in slacks),
                    spread(by_kind[label]["dates"]) if label in ATTENDING else "-",
                ]
                for label, _ in ARMS
            ],
            caption=TEXT.format("caption", test=len(references), seeds_note=seeds_note(ctx.seeds), steps=o.steps),
        )
        figures = [self._curves(curves), *self._attention(shown[MAIN], paths, references)]
        return Result(
            summary=TEXT.format(
                "summary",
                las=Spread(exact[MAIN]).mean,
                none=Spread(exact[NONE]).mean,
                window=Spread(exact[WINDOW]).mean,
                monotonic=Spread(monotonic[str(o.slack)][MAIN]).mean,
                monotonic_window=Spread(monotonic[str(o.slack)][WINDOW]).mean,
                slack=o.slack,
                seeds=ctx.seeds,
            ),
            tables=[table],
            figures=figures,
            runs=records,
            setup=[
                (
                    TEXT.format("setup.folder", folder=o.data)
                    if o.data
                    else TEXT.format("setup.command", train=o.train, dev=o.dev, test=o.test)
                )
                + TEXT.format("setup.data"),
                *TEXT.paragraphs(
                    "setup.rest",
                    preset=PRESET,
                    las=attention_words(attention[MAIN]),
                    window=attention_words(attention[WINDOW]),
                    steps=o.steps,
                    eval_every=o.eval_every,
                    dev_sentences=o.dev_sentences,
                    plateau=o.plateau_words(),
                    slack=o.slack,
                    precision="; ".join(f"{p}: {len(runs)} runs" for p, runs in sorted(precisions.items())),
                ),
            ],
            budget=TEXT.format("budget", steps=o.steps, plateau=o.plateau_words(), seeds=ctx.seeds),
            data={
                "test_exact_match": exact,
                "monotonic_share": monotonic,
                "slack": o.slack,
                "monotonic_by_kind": by_kind,
                "kinds": {kind: sum(chosen) for kind, chosen in kinds.items()},
                "reach": reached,
                "bars": {"exact_match": EXACT_MATCH, "monotonic": MONOTONIC},
                "test_items": len(references),
                "errors": [[r, h] for r, h in errors[:8]],
                "error_count": len(errors),
            },
        )

    @staticmethod
    def judge(data: dict) -> tuple[list[Finding], list[Phrase]]:
        """Core, the claim's three points, all of the model without a window: it learns (the mean
        test exact match over seeds, its 95% t interval against the bar), attention improves its
        accuracy (against the same listener and speller without attention, the exact permutation
        test over seeds), and its attention moves forward over the frames (the mean share of test
        utterances, its interval against the bar). The windowed preset (an ablation the paper did
        not have) and the shares by kind: observed."""
        exact = {k: Spread(v) for k, v in data["test_exact_match"].items()}
        slack, bars = data["slack"], data["bars"]
        shares = {k: Spread(v) for k, v in data["monotonic_share"][str(slack)].items()}
        column = "test exact match"
        monotonic_column = f"monotonic test attention (slack {slack})"

        findings = [
            bar_finding(TEXT.phrase("learns"), exact[MAIN], 100 * bars["exact_match"], where=[((MAIN,), column)]),
            better_finding(
                TEXT.phrase("improves"),
                MAIN,
                exact[MAIN],
                NONE,
                exact[NONE],
                where=[((MAIN,), column), ((NONE,), column)],
            ),
            bar_finding(
                TEXT.phrase("monotonic", slack=slack),
                shares[MAIN],
                100 * bars["monotonic"],
                where=[((MAIN,), monotonic_column)],
            ),
        ]
        kinds = data["monotonic_by_kind"]
        observations = [
            TEXT.phrase("window", exact=exact[WINDOW].mean, share=shares[WINDOW].mean, slack=slack),
            TEXT.phrase(
                "by_kind",
                slack=slack,
                numbers=Spread(kinds[MAIN]["numbers"]).mean,
                number_count=data["kinds"]["numbers"],
                dates=Spread(kinds[MAIN]["dates"]).mean,
                date_count=data["kinds"]["dates"],
            ),
            TEXT.phrase("reach", reach=Spread(data["reach"][MAIN]).mean),
        ]
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

    def _curves(self, curves):
        from ..viz import pyplot, save_figure

        plt = pyplot()
        fig, ax = plt.subplots(figsize=(7.5, 4.3), dpi=110)
        for label, _ in ARMS:
            draw_seeds(ax, curves[label], label, color=COLORS[label], scale=100)
        ax.axhline(100 * EXACT_MATCH, color="gray", linestyle=":", linewidth=1)
        ax.set_xlabel("update (batch of 32 utterances)")
        ax.set_ylabel("dev exact match (%)")
        ax.set_ylim(-2, 102)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8, loc="lower right")
        ax.set_title(
            f"Listen, Attend and Spell on spoken numbers and dates ({seeds_note(self.context.seeds)})", fontsize=10
        )
        return save_figure(fig, self.context.figure("curve")), TEXT.format("figure.curve")

    def _attention(self, shown, paths, references):
        """The spectrogram and attention of the first spoken date and the first number of the test
        set, as the model without a window (seed 1's run) spelled them."""
        from ..viz.audio_attention import plot_audio_attention

        model, found = shown
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
