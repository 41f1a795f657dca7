"""bahdanau-length: Bahdanau et al.'s figure 2. BLEU by source length of an attention model
(bahdanau2014) and of an encoder-decoder that must pass the whole source through one vector
(cho2014), trained under the same budget on English->German gettext messages; and the alignment
of one long sentence."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..viz import pyplot, save_figure
from ..viz.attention import plot_attention
from .base import REPRODUCTIONS, Finding, Quote, Reproduction, Result, RunRecord, Table, budget
from .datasets import count, passages, read_split
from .scoring import bleu_statistics, bucket_label, length_buckets, paired_bleu, slope_gap, translate
from .significance import ALPHA
from .spread import Spread
from .training import PlateauOptions, fit_preset, how_it_ended
from .wording import Phrase, PValue

MODELS = ("cho2014", "bahdanau2014")  # the paper's RNNencdec and RNNsearch
LABELS = {"cho2014": "cho2014 (no attention)", "bahdanau2014": "bahdanau2014 (attention)"}
EDGES = (1, 16, 26, 36, 46, 56, 71, 91, 111)  # each starts a bucket of source subwords


@dataclass
class BahdanauLengthOptions(PlateauOptions):
    steps: int = budget(4000)  # the cap of updates of each model (batches of 32 passages)
    batch_size: int = 32
    eval_every: int = 500  # updates between dev evaluations
    dev_sentences: int = 300  # dev passages decoded at each evaluation (greedy)
    vocab_size: int = 8000  # the joint sentencepiece vocabulary
    min_bucket: int = 100  # test passages a length bucket holds at least (buckets are merged until then)
    beam_size: int = 5  # beam of the test translations (Bahdanau et al. used a beam search)
    train_pairs: int = 20_000  # training passages
    dev_pairs: int = 500  # dev passages
    test_sentences: int = 1_000  # test passages
    min_words: int = 10  # the passages' English words, inclusive
    max_words: int = 80
    samples: int = 1000  # bootstrap resamples of the slope test
    catalogs: str = ""  # a folder of .po/.mo files instead of this machine's German catalogs
    min_delta: float = 0.5  # the rise of dev BLEU (points) that renews the patience


@REPRODUCTIONS.register("bahdanau-length", options=BahdanauLengthOptions)
class BahdanauLength(Reproduction):
    title = "Attention against a fixed-size summary, by sentence length"
    claim = (
        "Without attention (one fixed-length vector) translation quality falls with the source's length faster "
        "than with attention."
    )
    quotes = (
        Quote(
            "不过对于比较长的句子, 那么这个架构的弱点就暴露无疑了.",
            "seed document 002, §1",
            "but for longer sentences, the weakness of this architecture is laid bare.",
        ),
        Quote(
            "seq2seq 中使用编码器对时序数据进行编码，输出是固定长度的向量，问题在于无论输入语句的长度如何，其信息都会被塞入"
            "一个固定长度的向量中。",
            "seed document 000 (*Deep Learning from Scratch 2*, chapter 8), §1",
            "seq2seq encodes the sequence into a fixed-length vector; the problem is that whatever the input "
            "sentence's length, its information is squeezed into one vector of fixed length.",
        ),
    )
    source = (
        "Bahdanau, Cho & Bengio 2014, §5.2.1 and figure 2 (BLEU against sentence length), figure 3 (the "
        "alignment), as seed documents 000, 001 and 002 present the argument; the presets "
        "`configs/bahdanau2014.yaml` and `configs/cho2014.yaml`."
    )
    default_seeds = 1
    nominal_minutes = 86.0

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
            *o.plateau(),
        ]
        outputs, summaries, runs, refs, records = {}, {}, {}, None, []
        for seed in ctx.seed_list:
            for model in MODELS:
                run_dir = ctx.run_dir(f"{model}-seed{seed}")
                summary = fit_preset(ctx, model, run_dir, data, settings, seed=seed)
                summaries.setdefault(model, []).append(summary)
                records.append(
                    RunRecord(model, seed, summary["step"], o.steps, summary["step"] < o.steps, **how_it_ended(run_dir))
                )
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
        table = self._table(scores, buckets, lengths, summaries)
        figures = [self._figure(scores, buckets, lengths), self._alignment(runs["bahdanau2014"][0], test, lengths)]
        overall = scores[-1]
        summary = (
            f"test BLEU {overall['bahdanau2014'].mean:.1f} with attention against {overall['cho2014'].mean:.1f} "
            f"without; BLEU per 10 source subwords {10 * gap['slope_system']:+.2f} with attention and "
            f"{10 * gap['slope_baseline']:+.2f} without ({len(test):,} test passages of {o.min_words}-"
            f"{o.max_words} words)"
        )
        return Result(
            summary=summary,
            tables=[table],
            figures=figures,
            runs=records,
            setup=[
                "Data: English->German passages of this machine's gettext catalogs, made as `attnseq data passages "
                "--lang de` makes them (messages of one split's pool joined until a length drawn for each passage; "
                "dev and test passages hold no message a training passage holds), those of "
                f"{o.min_words}-{o.max_words} English words kept: {count(data, 'train'):,} training, "
                f"{count(data, 'dev'):,} dev and {len(test):,} test passages.",
                "Models: `configs/bahdanau2014.yaml` (bidirectional GRU 2 x 128, GRU decoder 256 attending with "
                "s_{t-1} through the concat score, readout tanh) and `configs/cho2014.yaml` (GRU 256, the source "
                "summary c at every decoder step, no attention), with a joint sentencepiece vocabulary of "
                f"{o.vocab_size:,}, batches of {o.batch_size}, the best dev BLEU checkpoint (greedy, "
                f"{o.dev_sentences} dev passages every {o.eval_every} updates), trained "
                f"{o.plateau_words('BLEU', 1.0)}, at most {o.steps} updates.",
                f"Test translations: beam {o.beam_size}. Buckets by the number of source subwords of the "
                f"attention run's tokenizer, merged until each holds at least {o.min_bucket} passages. BLEU is "
                "sacrebleu's corpus BLEU of each bucket (the mean over seeds); ± the half-width of its 95% "
                "paired-bootstrap interval (seed 1), p the bootstrap p-value of the difference.",
                "The slope test: the least-squares slope of bucket BLEU on the bucket's mean source length, for "
                f"each model; the gap (attention's slope minus the other's) over {o.samples:,} bootstrap "
                "resamples of the test passages within each bucket (the same passages for both models), its 95% "
                "interval and two-sided p. The claim holds when the interval lies above 0.",
            ],
            budget=f"at most {o.steps} updates of {o.batch_size} passages per model (about "
            f"{o.steps * o.batch_size / max(count(data, 'train'), 1):.1f} epochs), "
            f"{o.plateau_words('BLEU', 1.0)}; {ctx.seeds} seed{'s' if ctx.seeds > 1 else ''}",
            data={
                "buckets": [bucket_label(b) for b in buckets] + ["all"],
                "mean_length": means,
                "bleu": {m: [s[m].values for s in scores] for m in MODELS},
                "p": [s["paired"].p_value for s in scores],
                "sentences": [s["sentences"] for s in scores],
                "slope": gap,
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
            caption=(
                f"Test BLEU by source length (cho2014: {params['cho2014']} parameters, "
                f"{speed['cho2014']} target tokens/s; bahdanau2014: {params['bahdanau2014']} parameters, "
                f"{speed['bahdanau2014']} tokens/s)."
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
        return save_figure(fig, self.context.figure("bleu-by-length")), (
            "Test BLEU of each length bucket, with and without attention (Bahdanau et al.'s figure 2 on passages of "
            "gettext messages)."
        )

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
        return path, (
            f"The attention model's alignment of a long test sentence ({len(r.source_tokens)} subwords), as "
            "Bahdanau et al.'s figure 3 draws it: source subwords across, output subwords down."
        )

    @staticmethod
    def judge(data: dict) -> tuple[list[Finding], list[Phrase]]:
        bleu, gap, p_all = data["bleu"], data["slope"], data["p"][-1]
        overall = {m: Spread(bleu[m][-1]).mean for m in MODELS}
        observations = [
            Phrase(
                "over all test passages attention scores {:.1f} BLEU against {:.1f} ({:+.1f}, paired bootstrap p = ",
                overall["bahdanau2014"],
                overall["cho2014"],
                overall["bahdanau2014"] - overall["cho2014"],
            )
            + (Phrase("–") if p_all is None else Phrase("{:.3f}", p_all))
            + ")."
        ]
        if len(data["buckets"]) < 3:  # one bucket and "all"
            return [
                Finding(None, Phrase("one length bucket only: too few test passages to compare lengths."))
            ], observations
        low, high = gap["low"], gap["high"]
        matched = True if low > 0 else False if high < 0 else None
        first, last = data["buckets"][0], data["buckets"][-2]
        finding = Finding(
            matched,
            Phrase(
                "BLEU per ten source subwords: {:+.2f} without attention, {:+.2f} with it (least-squares slopes over the "
                "buckets {} to {}); the gap {:+.2f}, {:.0f}% bootstrap interval [{:+.2f}, {:+.2f}], p {}",
                10 * gap["slope_baseline"],
                10 * gap["slope_system"],
                first,
                last,
                10 * gap["gap"],
                100 * (1 - ALPHA),
                10 * low,
                10 * high,
                PValue(gap["p"]),
            )
            + {
                True: Phrase(": the fixed-length summary loses more with length, as the documents say."),
                False: Phrase(": attention loses more with length here."),
                None: Phrase(": the interval holds zero: the test cannot tell."),
            }[matched],
        )
        return [finding], observations
