"""transformer-vs-rnn: the Transformer preset against the best recurrent preset at equal CPU
minutes on English->German gettext messages: dev BLEU against training minutes in one plot,
test BLEU of each at the end."""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..viz import pyplot, save_figure
from .base import REPRODUCTIONS, Finding, Reproduction, Result, Table, budget
from .datasets import count, gettext, read_split
from .plots import draw_seeds
from .scoring import paired_bleu, translate
from .significance import ALPHA
from .spread import Spread, evidence_of
from .texts import texts
from .training import cpu_share, cpu_shares, curve, first_reaching, fit_preset
from .wording import Phrase, PValue

MODELS = ("recommended-subword", "transformer-gettext-de")  # the baseline first
LABELS = {"recommended-subword": "RNN (recommended-subword)", "transformer-gettext-de": "Transformer"}
COLORS = {"recommended-subword": "tab:blue", "transformer-gettext-de": "tab:purple"}
TEXT = texts("transformer-vs-rnn")


@dataclass
class TransformerVsRnnOptions:
    minutes: float = budget(11.0)  # wall-clock minutes of each model's training (its dev evaluations included)
    eval_every: int = 200  # updates between dev evaluations (the curve's points)
    dev_sentences: int = 300  # dev sentences decoded (greedy) at each evaluation
    beam_size: int = 5  # beam of the test translations (both presets' decode.beam_size)
    vocab_size: int = 8000  # the joint sentencepiece vocabulary (both presets': 8,000)
    train_pairs: int = 0  # training pairs (0: all)
    test_sentences: int = 0  # test sentences (0: all)
    catalogs: str = ""  # a folder of .po/.mo files instead of this machine's German catalogs


def bleu_column(beam_size: int) -> str:
    """The table's column of test BLEU."""
    return f"test BLEU (beam {beam_size})"


@REPRODUCTIONS.register("transformer-vs-rnn", options=TransformerVsRnnOptions)
class TransformerVsRnn(Reproduction):
    title, claim, quotes, source = TEXT.title, TEXT.claim, TEXT.quotes, TEXT.source
    default_seeds = 1
    nominal_minutes = 23.0

    def run(self) -> Result:
        from ..api import load

        o, ctx = self.options, self.context
        data = gettext(ctx.run_dir("data"), "de", o.catalogs, None, limits=(o.train_pairs, 0, o.test_sentences))
        test = read_split(data, "test")
        settings = [
            f"train.max_minutes={o.minutes}",
            "train.epochs=1000",
            "train.patience=0",
            f"train.eval_every={o.eval_every}",
            f"train.eval_max_sentences={o.dev_sentences}",
            "decode.beam_size=1",
            "decode.n_best=1",
            f"data.tokenizer.vocab_size={o.vocab_size}",
        ]
        summaries, curves, outputs, refs = {}, {}, {}, None
        for seed in ctx.seed_list:
            for model in MODELS:
                run_dir = ctx.run_dir(f"{model}-seed{seed}")
                summaries.setdefault(model, []).append(fit_preset(ctx, model, run_dir, data, settings, seed=seed))
                curves.setdefault(model, []).append(curve(run_dir, "dev_bleu", "minutes"))
                hyps, references = translate(load(run_dir), test, o.beam_size)
                refs = refs or references
                outputs.setdefault(model, []).append(hyps)
        shares = {m: [cpu_share(ctx.run_dir(f"{m}-seed{seed}"), ctx.threads) for seed in ctx.seed_list] for m in MODELS}
        paired = [paired_bleu(r, t, refs) for r, t in zip(outputs[MODELS[0]], outputs[MODELS[1]])]
        bleu = {MODELS[0]: Spread([p.baseline for p in paired]), MODELS[1]: Spread([p.system for p in paired])}
        ci = {MODELS[0]: paired[0].baseline_ci, MODELS[1]: paired[0].system_ci}
        target = min(max(c.y, default=0.0) for cs in curves.values() for c in cs)  # dev BLEU both reached
        reach = {m: Spread([first_reaching(c, target) or float("nan") for c in curves[m]]) for m in MODELS}
        rows = []
        for m in MODELS:
            s = summaries[m]
            rows.append(
                [
                    LABELS[m],
                    f"{s[0]['parameters']:,}",
                    f"{Spread([x['step'] for x in s]).mean:,.0f}",
                    f"{Spread([x['train_seconds'] / 60 for x in s]).mean:.1f}",
                    f"{Spread([x['tokens_per_second'] for x in s]).mean:,.0f}",
                    f"{Spread([max(c.y, default=0.0) for c in curves[m]]).mean:.1f}",
                    "–" if math.isnan(reach[m].mean) else f"{reach[m].mean:.1f}",
                    f"{bleu[m].mean:.1f} ± {ci[m]:.1f}",
                ]
            )
        table = Table(
            [
                "model",
                "parameters",
                "updates",
                "training minutes",
                "tokens/s",
                "best dev BLEU (greedy)",
                f"minutes to dev BLEU {target:.1f}",
                bleu_column(o.beam_size),
            ],
            rows,
            caption=TEXT.format("caption", minutes=o.minutes, test=len(test), target=target),
        )
        figure = self._figure(curves)
        summary = TEXT.format(
            "summary",
            minutes=o.minutes,
            transformer=bleu[MODELS[1]].mean,
            rnn=bleu[MODELS[0]].mean,
            p=PValue(paired[0].p_value),
        )
        return Result(
            summary=summary,
            tables=[table],
            figures=[figure],
            setup=TEXT.paragraphs(
                "setup",
                train=count(data, "train"),
                dev=count(data, "dev"),
                test=len(test),
                minutes=o.minutes,
                dev_sentences=o.dev_sentences,
                eval_every=o.eval_every,
                beam_size=o.beam_size,
                cpu_shares=cpu_shares(shares, ctx.threads),
            ),
            budget=TEXT.format("budget", minutes=o.minutes, seeds=ctx.seeds, plural="s" if ctx.seeds > 1 else ""),
            data={
                "test_bleu": {m: bleu[m].values for m in MODELS},
                "p": paired[0].p_value,
                "updates": {m: [x["step"] for x in summaries[m]] for m in MODELS},
                "tokens_per_second": {m: [x["tokens_per_second"] for x in summaries[m]] for m in MODELS},
                "threads": ctx.threads,
                "beam_size": o.beam_size,
                "minutes": o.minutes,
                "cpu_share": shares,
                "curves": {m: [[c.x, c.y] for c in curves[m]] for m in MODELS},
            },
        )

    def _figure(self, curves):
        plt = pyplot()
        fig, ax = plt.subplots(figsize=(7.5, 4.3), dpi=110)
        for m in MODELS:
            draw_seeds(ax, curves[m], LABELS[m], color=COLORS[m])
        ax.set_xlabel("training minutes on this CPU (updates only; evaluations not counted)")
        ax.set_ylabel("dev BLEU (greedy)")
        ax.set_ylim(bottom=0)
        ax.grid(alpha=0.3)
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=9, loc="lower right")
        seeds = self.context.seeds
        ax.set_title(
            f"English->German gettext: dev BLEU against CPU minutes ({seeds} seed"
            f"{'s' if seeds > 1 else ''}, {self.context.threads} threads)",
            fontsize=10,
        )
        return save_figure(fig, self.context.figure("bleu-by-minute")), TEXT.format("figure")

    @staticmethod
    def judge(data: dict) -> tuple[list[Finding], list[Phrase]]:
        """The one finding, test BLEU after equal minutes on this CPU's threads, is a proxy: the
        claim rests on a GPU's parallelism, so no finding here is core and the page decides
        nothing (its verdict is undecided). Observed: updates and tokens a second, and how much
        each model's dev BLEU still rose in its last interval."""
        rnn, transformer = (Spread(data["test_bleu"][m]).mean for m in MODELS)
        p = data["p"]
        column = bleu_column(data["beam_size"])
        sure = p is not None and p < ALPHA
        ahead = transformer > rnn
        finding = Finding(
            ahead if sure else None,
            TEXT.phrase(
                "bleu.start",
                minutes=data["minutes"],
                transformer=transformer,
                rnn=rnn,
                p=PValue(1.0 if p is None else p),
            )
            + TEXT.phrase("bleu.transformer" if sure and ahead else "bleu.rnn" if sure else "bleu.cannot_tell")
            + TEXT.phrase("bleu.proxy"),
            core=False,
            reason=Phrase() if sure else TEXT.phrase("bleu.reason"),
            evidence=evidence_of(
                [((LABELS[MODELS[1]],), column), ((LABELS[MODELS[0]],), column)],
                (transformer, rnn),
                ("above" if ahead else "below") if sure else "",
            ),
        )
        updates = {m: Spread(data["updates"][m]).mean for m in MODELS}
        speed = {m: Spread(data["tokens_per_second"][m]).mean for m in MODELS}
        observations = [
            TEXT.phrase(
                "speed",
                threads=data["threads"],
                rnn_updates=updates[MODELS[0]],
                rnn_speed=speed[MODELS[0]],
                transformer_updates=updates[MODELS[1]],
                transformer_speed=speed[MODELS[1]],
            )
        ]
        last = {m: data["curves"][m][0][1][-2:] for m in MODELS if data.get("curves", {}).get(m)}
        if len(last) == len(MODELS) and all(len(v) == 2 for v in last.values()):
            observations.append(
                TEXT.phrase(
                    "rising",
                    rnn_before=last[MODELS[0]][0],
                    rnn_after=last[MODELS[0]][1],
                    transformer_before=last[MODELS[1]][0],
                    transformer_after=last[MODELS[1]][1],
                )
            )
        return [finding], observations
