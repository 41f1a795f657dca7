"""bahdanau-length: Bahdanau et al.'s figure 2. BLEU by source length of an attention model
(bahdanau2014) and of an encoder-decoder that must pass the whole source through one vector
(cho2014), trained under the same budget on English->German gettext messages; and the alignment
of one long sentence."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..viz import pyplot, save_figure
from ..viz.attention import plot_attention
from .base import REPRODUCTIONS, Finding, Reproduction, Result, Table, budget
from .datasets import count, passages, read_split
from .scoring import bleu_statistics, bucket_label, decline_gap, length_buckets, paired_bleu, slope_gap, translate
from .significance import ALPHA
from .spread import Spread
from .texts import texts
from .training import PlateauOptions, fit_preset, record_of
from .wording import Phrase, PValue

MODELS = ("cho2014", "bahdanau2014")  # the paper's RNNencdec and RNNsearch


def end_declines(bleu: dict[str, list]) -> tuple[dict[str, tuple[float, float]], dict[str, float]]:
    """Each model's mean BLEU over the seeds in the shortest and the longest length bucket
    (``bleu``: model -> one list of seeds' BLEU per bucket, the last one all passages), and its
    relative decline between them (0 where the shortest bucket scores 0)."""
    ends = {m: (Spread(bleu[m][0]).mean, Spread(bleu[m][-2]).mean) for m in MODELS}
    return ends, {m: (b / a - 1.0 if a > 0 else 0.0) for m, (a, b) in ends.items()}


LABELS = {"cho2014": "cho2014 (no attention)", "bahdanau2014": "bahdanau2014 (attention)"}
EDGES = (1, 16, 26, 36, 46, 56, 71, 91, 111)  # each starts a bucket of source subwords
TEXT = texts("bahdanau-length")
MATCHED = {True: "matched", False: "unmatched", None: "undecided"}  # the texts of the slope test's ending


@dataclass
class BahdanauLengthOptions(PlateauOptions):
    steps: int = budget(12_000)  # the cap of updates of each model
    batch_size: int = 64
    hidden_size: int = 128  # both models' recurrent units (bahdanau2014: its two encoder directions together)
    lr_patience: int = 3  # Adam's rate halves after this many + 1 evaluations without a better dev BLEU
    eval_every: int = 500  # updates between dev evaluations
    dev_sentences: int = 300  # dev passages decoded at each evaluation (greedy)
    vocab_size: int = 4000  # the joint sentencepiece vocabulary
    min_bucket: int = 100  # test passages a length bucket holds at least (buckets are merged until then)
    beam_size: int = 5  # beam of the test translations (Bahdanau et al. used a beam search)
    train_pairs: int = 20_000  # training passages
    dev_pairs: int = 500  # dev passages
    test_sentences: int = 1_000  # test passages
    min_words: int = 10  # the passages' English words, inclusive
    max_words: int = 50
    samples: int = 1000  # bootstrap resamples of the slope test
    catalogs: str = ""  # a folder of .po/.mo files instead of this machine's German catalogs
    min_delta: float = 0.5  # the rise of dev BLEU (points) that renews the patience

    def model_settings(self, model: str) -> list[str]:
        """The width of ``model`` (a preset of MODELS): its recurrent units and, with attention,
        the concat score's size."""
        width = [f"model.hidden_size={self.hidden_size}"]
        if model == "bahdanau2014":
            width.append(f"model.attention={{name: concat, size: {self.hidden_size}}}")
        return width


@REPRODUCTIONS.register("bahdanau-length", options=BahdanauLengthOptions)
class BahdanauLength(Reproduction):
    title, claim, quotes, source = TEXT.title, TEXT.claim, TEXT.quotes, TEXT.source
    default_seeds = 5
    nominal_minutes = 470.0  # 10 runs to their plateau: cho2014 at 7,000-7,500 updates, bahdanau2014 8,000-12,000

    def run(self) -> Result:
        from ..api import load

        o, ctx = self.options, self.context
        data = passages(
            ctx.run_dir("data"),
            "de",
            o.catalogs,
            (o.train_pairs, o.dev_pairs, o.test_sentences),
            (o.min_words, o.max_words),
        )
        test = read_split(data, "test")
        settings = [
            f"data.tokenizer={{name: sentencepiece, vocab_size: {o.vocab_size}, joint: true}}",
            "data.max_source_len=400",
            "data.max_target_len=400",
            f"train.batch_size={o.batch_size}",
            f"train.max_steps={o.steps}",
            "train.epochs=1000",
            f"train.eval_every={o.eval_every}",
            f"train.eval_max_sentences={o.dev_sentences}",
            "train.select_by=bleu",
            f"train.schedule={{name: plateau, decay: 0.5, patience: {o.lr_patience}}}",
            "train.precision=fp32",
            *o.plateau(),
        ]
        outputs, summaries, runs, refs, records = {}, {}, {}, None, []
        for seed in ctx.seed_list:
            for model in MODELS:
                run_dir = ctx.run_dir(f"{model}-seed{seed}")
                summary = fit_preset(ctx, model, run_dir, data, [*settings, *o.model_settings(model)], seed=seed)
                summaries.setdefault(model, []).append(summary)
                records.append(record_of(model, seed, summary["step"], o.steps, run_dir))
                translator = load(run_dir)
                hyps, references = translate(translator, test, o.beam_size)
                refs = refs or references  # the same text through each run's pipeline; the first run's
                outputs.setdefault(model, []).append(hyps)
                runs.setdefault(model, []).append(translator)
        pieces = runs["bahdanau2014"][0].pipeline  # lengths in the attention run's own subwords
        lengths = [len(pieces.source_tokens(s)) for s, _ in test]
        buckets = length_buckets(lengths, EDGES, o.min_bucket)
        scores = self._scores(outputs, refs, lengths, buckets)
        members = [[i for i, n in enumerate(lengths) if b[0] <= n <= b[1]] for b in buckets]
        means = [float(np.mean([lengths[i] for i in m])) for m in members]
        stats = {m: [bleu_statistics(h, refs) for h in outputs[m]] for m in MODELS}
        gap = slope_gap(stats["cho2014"], stats["bahdanau2014"], members, means, o.samples)
        decline = decline_gap(stats["cho2014"], stats["bahdanau2014"], members, o.samples)
        table = self._table(scores, buckets, lengths, summaries)
        figures = [self._figure(scores, buckets, lengths), self._alignment(runs["bahdanau2014"][0], test, lengths)]
        overall = scores[-1]
        bleu = {m: [s[m].values for s in scores] for m in MODELS}  # per bucket, the last all passages
        ends, declines = end_declines(bleu)
        summary = TEXT.format(
            "summary",
            first=bucket_label(buckets[0]),
            last=bucket_label(buckets[-1]),
            rnn_first=ends["cho2014"][0],
            rnn_last=ends["cho2014"][1],
            rnn_decline=100 * declines["cho2014"],
            attention_first=ends["bahdanau2014"][0],
            attention_last=ends["bahdanau2014"][1],
            attention_decline=100 * declines["bahdanau2014"],
            attention=overall["bahdanau2014"].mean,
            rnn=overall["cho2014"].mean,
            slope_attention=10 * gap["slope_system"],
            slope_rnn=10 * gap["slope_baseline"],
            test=len(test),
            min_words=o.min_words,
            max_words=o.max_words,
        )
        return Result(
            summary=summary,
            tables=[table],
            figures=figures,
            runs=records,
            setup=TEXT.paragraphs(
                "setup",
                min_words=o.min_words,
                max_words=o.max_words,
                train=count(data, "train"),
                dev=count(data, "dev"),
                test=len(test),
                vocab_size=o.vocab_size,
                batch_size=o.batch_size,
                hidden=o.hidden_size,
                half=o.hidden_size // 2,
                lr_patience=o.lr_patience,
                dev_sentences=o.dev_sentences,
                eval_every=o.eval_every,
                plateau=o.plateau_words("BLEU", 1.0),
                steps=o.steps,
                beam_size=o.beam_size,
                min_bucket=o.min_bucket,
                samples=o.samples,
            ),
            budget=TEXT.format(
                "budget",
                steps=o.steps,
                batch_size=o.batch_size,
                epochs=o.steps * o.batch_size / max(count(data, "train"), 1),
                plateau=o.plateau_words("BLEU", 1.0),
                seeds=ctx.seeds,
                plural="s" if ctx.seeds > 1 else "",
            ),
            data={
                "buckets": [bucket_label(b) for b in buckets] + ["all"],
                "mean_length": means,
                "bleu": bleu,
                "p": [s["paired"].p_value for s in scores],
                "sentences": [s["sentences"] for s in scores],
                "slope": gap,
                "decline": decline,
            },
        )

    @staticmethod
    def _scores(outputs, refs, lengths, buckets) -> list[dict]:
        """Per bucket (and last: all sentences): BLEU of each model (Spread over seeds) and seed 1's
        paired bootstrap."""
        rows = []
        for bucket in [*buckets, (1, max(lengths))]:
            idx = [i for i, n in enumerate(lengths) if bucket[0] <= n <= bucket[1]]
            pick = lambda xs, idx=idx: [xs[i] for i in idx]  # noqa: E731
            paired = [
                paired_bleu(pick(c), pick(b), pick(refs)) for c, b in zip(outputs["cho2014"], outputs["bahdanau2014"])
            ]
            rows.append(
                {
                    "sentences": len(idx),
                    "paired": paired[0],
                    "cho2014": Spread([p.baseline for p in paired]),
                    "bahdanau2014": Spread([p.system for p in paired]),
                }
            )
        return rows

    def _table(self, scores, buckets, lengths, summaries) -> Table:
        rows = []
        for bucket, s in zip([*buckets, None], scores):
            p = s["paired"]
            name = "all" if bucket is None else bucket_label(bucket)
            rows.append(
                [
                    name,
                    f"{s['sentences']:,}",
                    f"{s['cho2014'].mean:.1f} ± {p.baseline_ci:.1f}",
                    f"{s['bahdanau2014'].mean:.1f} ± {p.system_ci:.1f}",
                    f"{s['bahdanau2014'].mean - s['cho2014'].mean:+.1f}",
                    "–" if p.p_value is None else f"{PValue(p.p_value):.3f}".removeprefix("= "),
                ]
            )
        params = {m: f"{summaries[m][0]['parameters']:,}" for m in MODELS}
        speed = {m: f"{Spread([x['tokens_per_second'] for x in summaries[m]]).mean:,.0f}" for m in MODELS}
        return Table(
            [
                "source subwords",
                "test sentences",
                "cho2014 BLEU",
                "bahdanau2014 BLEU",
                "difference",
                "p (paired bootstrap)",
            ],
            rows,
            caption=TEXT.format(
                "caption",
                cho_parameters=params["cho2014"],
                cho_speed=speed["cho2014"],
                bahdanau_parameters=params["bahdanau2014"],
                bahdanau_speed=speed["bahdanau2014"],
            ),
        )

    def _figure(self, scores, buckets, lengths):
        plt = pyplot()
        fig, ax = plt.subplots(figsize=(7.8, 4.4), dpi=110)
        xs = np.arange(len(buckets))
        for model, color, marker in (("bahdanau2014", "tab:red", "o"), ("cho2014", "tab:gray", "s")):
            ys = [s[model].mean for s in scores[:-1]]
            ci = [s["paired"].system_ci if model == "bahdanau2014" else s["paired"].baseline_ci for s in scores[:-1]]
            ax.errorbar(xs, ys, yerr=ci, marker=marker, color=color, capsize=3, label=LABELS[model])
        ax.set_xticks(xs, [f"{bucket_label(b)}\n({s['sentences']})" for b, s in zip(buckets, scores)], fontsize=8)
        ax.set_xlabel("source length in subwords (test sentences in the bucket)")
        ax.set_ylabel("BLEU")
        ax.set_ylim(bottom=0)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=9)
        seeds = self.context.seeds
        ax.set_title(
            f"BLEU by source length, English->German passages ({seeds} seed{'s' if seeds > 1 else ''}; "
            "bars: 95% bootstrap interval)",
            fontsize=10,
        )
        return save_figure(fig, self.context.figure("bleu-by-length")), TEXT.format("figure.bleu")

    def _alignment(self, translator, test, lengths):
        """The attention run's alignment of a long test passage (the longest up to 50 subwords)."""
        order = sorted(range(len(test)), key=lambda i: lengths[i])
        fitting = [i for i in order if lengths[i] <= 50] or order
        source = test[fitting[-1]][0]
        r = translator.search([source], keep_attention=True, beam_size=self.options.beam_size)[0]
        path = plot_attention(
            r.attention[0],
            r.source_tokens,
            r.output_tokens[0],
            self.context.figure("alignment"),
            title=f"bahdanau2014: {source[:70]}{'…' if len(source) > 70 else ''}\n→ "
            f"{r.outputs[0][:70]}{'…' if len(r.outputs[0]) > 70 else ''}",
        )
        return path, TEXT.format("figure.alignment", subwords=len(r.source_tokens))

    @staticmethod
    def judge(data: dict) -> tuple[list[Finding], list[Phrase]]:
        """Core, the page's measure of the paper's figure 2: without attention BLEU declines relatively more from the
        shortest length bucket to the longest (the gap of the two declines by a bootstrap over the
        passages within each bucket; untested on a page whose numbers hold no such bootstrap). The
        gap of absolute slopes is a proxy (a model near the floor of BLEU has little to lose): it
        is reported."""
        bleu, gap, p_all = data["bleu"], data["slope"], data["p"][-1]
        overall = {m: Spread(bleu[m][-1]).mean for m in MODELS}
        observations = [
            TEXT.phrase(
                "overall.start",
                attention=overall["bahdanau2014"],
                rnn=overall["cho2014"],
                difference=overall["bahdanau2014"] - overall["cho2014"],
            )
            + (TEXT.phrase("overall.no_p") if p_all is None else TEXT.phrase("overall.p", p=p_all))
            + TEXT.phrase("overall.end")
        ]
        if len(data["buckets"]) < 3:  # one bucket and "all"
            return [Finding(None, TEXT.phrase("one_bucket"), reason=TEXT.phrase("reason.one_bucket"))], observations
        first, last = data["buckets"][0], data["buckets"][-2]
        ends, declines = end_declines(bleu)
        decline = data.get("decline")  # pages written before it have none
        words = TEXT.phrase(
            "decline.start",
            first=first,
            last=last,
            rnn_first=ends["cho2014"][0],
            rnn_last=ends["cho2014"][1],
            rnn=100 * declines["cho2014"],
            attention_first=ends["bahdanau2014"][0],
            attention_last=ends["bahdanau2014"][1],
            attention=100 * declines["bahdanau2014"],
        )
        if decline is None:
            core = Finding(None, words + TEXT.phrase("decline.untested"), reason=TEXT.phrase("reason.untested"))
        else:
            matched = True if decline["low"] > 0 else False if decline["high"] < 0 else None
            core = Finding(
                matched,
                words
                + TEXT.phrase(
                    "decline.test",
                    gap=100 * decline["gap"],
                    level=100 * (1 - ALPHA),
                    low=100 * decline["low"],
                    high=100 * decline["high"],
                    p=PValue(decline["p"]),
                )
                + TEXT.phrase("slope." + MATCHED[matched]),
                reason=Phrase() if matched is not None else TEXT.phrase("reason.interval"),
            )
        low, high = gap["low"], gap["high"]
        matched = True if low > 0 else False if high < 0 else None
        slope = Finding(
            matched,
            TEXT.phrase(
                "slope.start",
                rnn=10 * gap["slope_baseline"],
                attention=10 * gap["slope_system"],
                first=first,
                last=last,
                gap=10 * gap["gap"],
                level=100 * (1 - ALPHA),
                low=10 * low,
                high=10 * high,
                p=PValue(gap["p"]),
            )
            + TEXT.phrase("slope." + MATCHED[matched]),
            core=False,
            reason=Phrase() if matched is not None else TEXT.phrase("reason.interval"),
        )
        return [core, slope], observations
