"""local-cost: what a decoder step's attention costs as the source grows, global against local
(Luong et al. 2015, section 3.2: global attention "has to attend to all words on the source
side for each target word, which is expensive"; local attention looks at a window of 2D + 1).
attnseq's own `general` and `local_p` scorers are timed on random states of one size, one
decoder step at a time as a decoder calls them; local-p both as it runs (the window's keys and
values gathered) and scoring every position then masking (what it cost before it gathered).
Nothing is trained: a step's arithmetic does not depend on the weights."""

from __future__ import annotations

import math
import statistics
import time
from dataclasses import dataclass
from functools import partial

from ..viz import pyplot, save_figure
from .base import REPRODUCTIONS, Finding, Reproduction, Result, Table, budget
from .significance import against_bar, slope
from .spread import Spread, paired_finding, slope_interval
from .texts import texts
from .wording import Phrase

TEXT = texts("local-cost")
GLOBAL, MASKED, GATHERED = "global", "local-p, all scored", "local-p, window read"
ARMS = (GLOBAL, MASKED, GATHERED)
LSTM = "LSTM step"  # the recurrent step of the same width, for scale
COLORS = {GLOBAL: "tab:red", MASKED: "tab:orange", GATHERED: "tab:blue", LSTM: "tab:gray"}
GROWS = 0.5  # the log-log slope of a step's time over the source length above which it "grows with S"
LONG = 200  # the source lengths from which the slopes are fitted (below, fixed costs hide the growth)


@dataclass
class LocalCostOptions:
    calls: int = budget(200)  # timed calls per arm, length and draw (after warm-up)
    hidden_size: int = 256  # the decoder state and the encoder outputs (Luong et al.: 1000)
    batch: int = 16  # sentences (or beam hypotheses) stepped together
    window: int = 10  # D: local attention's window is 2D + 1 source positions (Luong et al.'s D)
    lengths: tuple[int, ...] = (25, 50, 100, 200, 400, 800, 1600)  # source lengths S


def per_call(call, calls: int) -> float:
    """Microseconds a call of ``call()`` takes: the median of 5 rounds of ``calls`` / 5 calls
    each, after a warm-up round."""
    rounds = 5
    each = max(1, calls // rounds)
    for _ in range(each):
        call()
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        for _ in range(each):
            call()
        times.append((time.perf_counter() - start) / each)
    return 1e6 * statistics.median(times)


def measure(options: LocalCostOptions, seed: int) -> dict[str, dict[str, float]]:
    """One draw: arm -> str(S) -> microseconds per decoder step, and the LSTM step's (one value)."""
    import torch

    from ..nn.attention import Scorer, build_scorer
    from ..schema import Variant

    o = options
    torch.manual_seed(seed)
    size = o.hidden_size
    global_scorer = build_scorer(Variant("general", {}), size, size).eval()
    local = build_scorer(Variant("local_p", {"window": o.window}), size, size).eval()
    cell = torch.nn.LSTMCell(size, size).eval()
    generator = torch.Generator().manual_seed(seed)
    found: dict[str, dict[str, float]] = {arm: {} for arm in ARMS}
    with torch.inference_mode():
        x = torch.randn(o.batch, size, generator=generator)
        state = (torch.zeros(o.batch, size), torch.zeros(o.batch, size))
        lstm = per_call(lambda: cell(x, state), o.calls)
        for length in o.lengths:
            query = torch.randn(o.batch, 1, size, generator=generator)  # (B, 1, H): one decoder step
            memory = torch.randn(o.batch, length, size, generator=generator)  # (B, S, H)
            mask = torch.ones(o.batch, length, dtype=torch.bool)
            # the keys prepared once per sentence, as every decoder does
            whole, windowed = global_scorer.prepare(memory), local.prepare(memory)  # (B, S, H) each
            steps = {
                GLOBAL: partial(global_scorer, query, whole, memory, mask),
                MASKED: partial(Scorer.forward, local, query, windowed, memory, mask),
                GATHERED: partial(local, query, windowed, memory, mask),
            }
            for arm in ARMS:
                found[arm][str(length)] = per_call(steps[arm], o.calls)
    return {**found, LSTM: {"any": lstm}}


@REPRODUCTIONS.register("local-cost", options=LocalCostOptions)
class LocalCost(Reproduction):
    title, claim, quotes, source = TEXT.title, TEXT.claim, TEXT.quotes, TEXT.source
    default_seeds = 5
    nominal_minutes = 1.0

    def run(self) -> Result:
        import torch

        o, ctx = self.options, self.context
        torch.set_num_threads(ctx.threads)
        # arm -> str(S) -> microseconds per step, one per draw
        times: dict[str, dict[str, list[float]]] = {arm: {str(s): [] for s in o.lengths} for arm in ARMS}
        lstm: list[float] = []
        for seed in ctx.seed_list:
            found = measure(o, seed)
            for arm in ARMS:
                for s in o.lengths:
                    times[arm][str(s)].append(found[arm][str(s)])
            lstm.append(found[LSTM]["any"])
        columns = ["source length S", *(f"{arm} (µs a step)" for arm in ARMS), "global / window read"]
        rows = [
            [
                str(s),
                *(Spread(times[arm][str(s)]).format(digits=1) for arm in ARMS),
                f"{Spread([g / w for g, w in zip(times[GLOBAL][str(s)], times[GATHERED][str(s)])]).mean:.2f}x",
            ]
            for s in o.lengths
        ]
        table = Table(
            columns,
            rows,
            caption=TEXT.format(
                "caption",
                batch=o.batch,
                size=o.hidden_size,
                window=o.window,
                span=2 * o.window + 1,
                seeds=ctx.seeds,
                threads=ctx.threads,
                lstm=Spread(lstm).mean,
            ),
        )
        longest = str(o.lengths[-1])
        return Result(
            summary=TEXT.format(
                "summary",
                shortest=o.lengths[0],
                longest=longest,
                global_short=Spread(times[GLOBAL][str(o.lengths[0])]).mean,
                global_long=Spread(times[GLOBAL][longest]).mean,
                local_short=Spread(times[GATHERED][str(o.lengths[0])]).mean,
                local_long=Spread(times[GATHERED][longest]).mean,
            ),
            tables=[table],
            figures=[self._figure(times, lstm)],
            runs=[],
            setup=TEXT.paragraphs(
                "setup",
                batch=o.batch,
                size=o.hidden_size,
                window=o.window,
                span=2 * o.window + 1,
                lengths=", ".join(map(str, o.lengths)),
                calls=o.calls,
                grows=GROWS,
                long=LONG,
                threads=ctx.threads,
            ),
            budget=TEXT.format("budget", calls=o.calls, lengths=len(o.lengths), seeds=ctx.seeds),
            data={"times": times, "lstm": lstm, "lengths": list(o.lengths), "window": o.window},
        )

    def _figure(self, times, lstm):
        plt = pyplot()
        lengths = self.options.lengths
        fig, ax = plt.subplots(figsize=(7.5, 4.3), dpi=110)
        for arm in ARMS:
            spreads = [Spread(times[arm][str(s)]) for s in lengths]
            ax.plot(lengths, [sp.mean for sp in spreads], marker="o", color=COLORS[arm], label=arm)
            ax.fill_between(
                lengths, [sp.low for sp in spreads], [sp.high for sp in spreads], color=COLORS[arm], alpha=0.2
            )
        ax.axhline(Spread(lstm).mean, color=COLORS[LSTM], linestyle=":", label=f"{LSTM} (same width, for scale)")
        ax.set_xscale("log", base=2)
        ax.set_xticks(lengths, [str(s) for s in lengths])
        ax.minorticks_off()
        ax.set_yscale("log")
        ax.set_xlabel("source length S (positions the step may attend to)")
        ax.set_ylabel("µs per decoder step (one thread)")
        ax.grid(alpha=0.3, which="both")
        ax.legend(fontsize=8, loc="upper left")
        ax.set_title(
            f"One decoder step's attention, {self.options.batch} sentences of width {self.options.hidden_size} "
            f"({self.context.seeds} draws: mean, band lowest to highest)",
            fontsize=10,
        )
        return save_figure(fig, self.context.figure("cost")), TEXT.format("figure")

    @staticmethod
    def judge(data: dict) -> tuple[list[Finding], list[Phrase]]:
        """Core, the paper's two points: (1) global attention's step time grows with the source
        length (the log-log slope over the lengths from LONG, one per draw: its 95% interval
        above GROWS); (2) at the longest length local-p's step (its window read) takes less time
        than global's (paired t over draws on the log times). Observed: local-p's own slope, the
        masked local-p against global, the shortest length where the window read is cheaper."""
        times, lengths = data["times"], data["lengths"]
        long = [s for s in lengths if s >= LONG] or lengths[-2:]
        logs = [math.log(s) for s in long]
        draws = len(times[GLOBAL][str(lengths[0])])

        def slopes(arm):
            return [slope(logs, [math.log(times[arm][str(s)][i]) for s in long]) for i in range(draws)]

        interval, words = slope_interval(slopes(GLOBAL), 2, Phrase("{:.1f}", GROWS))
        grows = against_bar(interval, GROWS)
        longest = str(lengths[-1])
        gathered, whole = times[GATHERED][longest], times[GLOBAL][longest]
        column = {arm: f"{arm} (µs a step)" for arm in ARMS}
        findings = [
            Finding(
                grows,
                TEXT.phrase("grows", low=long[0], high=long[-1]) + words,
                True,
                Phrase("" if grows is not None else "the interval straddles the bar"),
            ),
            paired_finding(  # cheaper: global's log time above the window read's
                TEXT.phrase("cheaper", longest=lengths[-1]),
                "global",
                [math.log(v) for v in whole],
                "local-p",
                [math.log(v) for v in gathered],
                "",
                3,
                where=[((longest,), column[GLOBAL]), ((longest,), column[GATHERED])],
                shown=(Spread(whole).mean, Spread(gathered).mean),
                by="draw",
            ),
        ]
        cheaper_from = next(
            (s for s in lengths if Spread(times[GATHERED][str(s)]).mean < Spread(times[GLOBAL][str(s)]).mean), None
        )
        observed = [
            TEXT.phrase("local_slope", slope=Spread(slopes(GATHERED)).mean, low=long[0], high=long[-1]),
            TEXT.phrase(
                "masked",
                slope=Spread(slopes(MASKED)).mean,
                masked=Spread(times[MASKED][longest]).mean,
                whole=Spread(whole).mean,
                longest=lengths[-1],
            ),
            TEXT.phrase("from", length=cheaper_from)
            if cheaper_from is not None
            else TEXT.phrase("never", longest=lengths[-1]),
            TEXT.phrase("lstm", lstm=Spread(data["lstm"]).mean),
        ]
        return findings, observed
