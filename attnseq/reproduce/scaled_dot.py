"""scaled-dot: why the Transformer divides its dot products by sqrt(d_k), measured. With query
and key components independent, of mean 0 and variance 1, the dot product q . k has variance
d_k (Vaswani et al. 2017, footnote 4): as d_k grows the unscaled scores spread, the softmax
saturates on one key, and its gradient vanishes; scaled by 1 / sqrt(d_k) they stay put. The
scores come from attnseq's own `dot` and `scaled_dot` scorers; nothing is trained."""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..viz import pyplot, save_figure
from .base import REPRODUCTIONS, Finding, Reproduction, Result, Table, budget
from .significance import against_bar, slope
from .spread import Spread, paired_finding, slope_interval
from .texts import texts
from .wording import Phrase

TEXT = texts("scaled-dot")
SCORER_NAMES = ("dot", "scaled_dot")
VARIANCE, LARGEST, GRADIENT = "score variance", "largest weight", "softmax gradient norm"
MEASURES = (VARIANCE, LARGEST, GRADIENT)
SLOPE_BAND = (0.9, 1.1)  # the log-log slope of the unscaled variance that reads as "grows as d_k"


@dataclass
class ScaledDotOptions:
    queries: int = budget(256)  # queries drawn per width and draw
    keys: int = 32  # keys each query is scored against (a source of 32 tokens)
    widths: tuple[int, ...] = (4, 16, 64, 256, 1024)  # d_k


def measure(scorer, d_k: int, queries: int, keys: int, generator) -> dict[str, float]:
    """For unit-variance random queries (1, Q, d_k) and keys (1, S, d_k): the variance of the
    scores, the mean largest softmax weight, and the mean Frobenius norm of the softmax's
    Jacobian d softmax(s) / d s = diag(p) - p p^T over the queries (how much gradient the
    softmax passes back to its scores)."""
    import torch

    q = torch.randn(1, queries, d_k, generator=generator)  # (1, Q, d_k)
    k = torch.randn(1, keys, d_k, generator=generator)  # (1, S, d_k)
    scores = scorer.score(q, k)[0]  # (Q, S)
    p = torch.softmax(scores, dim=-1)  # (Q, S)
    jacobian = torch.diag_embed(p) - p.unsqueeze(2) * p.unsqueeze(1)  # (Q, S, S)
    return {
        VARIANCE: float(scores.var()),
        LARGEST: float(p.max(dim=-1).values.mean()),
        GRADIENT: float(jacobian.flatten(1).norm(dim=1).mean()),
    }


@REPRODUCTIONS.register("scaled-dot", options=ScaledDotOptions)
class ScaledDot(Reproduction):
    title, claim, quotes, source = TEXT.title, TEXT.claim, TEXT.quotes, TEXT.source
    default_seeds = 5
    nominal_minutes = 0.2

    def run(self) -> Result:
        import torch

        from ..nn.attention import SCORERS

        o, ctx = self.options, self.context
        torch.set_num_threads(ctx.threads)
        # scorer -> measure -> str(d_k) -> one value per draw
        values = {s: {m: {str(d): [] for d in o.widths} for m in MEASURES} for s in SCORER_NAMES}
        for seed in ctx.seed_list:
            for d_k in o.widths:
                for name in SCORER_NAMES:
                    generator = torch.Generator().manual_seed(seed * 100_003 + d_k)  # the same draws for both
                    found = measure(SCORERS.get(name)(d_k, d_k, None), d_k, o.queries, o.keys, generator)
                    for m in MEASURES:
                        values[name][m][str(d_k)].append(found[m])
        table = Table(
            ["d_k", *(f"{m}, {s}" for m in MEASURES for s in SCORER_NAMES)],
            [
                [
                    str(d),
                    *(
                        Spread(values[s][m][str(d)]).format(digits=3 if m != VARIANCE else 1)
                        for m in MEASURES
                        for s in SCORER_NAMES
                    ),
                ]
                for d in o.widths
            ],
            caption=TEXT.format("caption", queries=o.queries, keys=o.keys, seeds=ctx.seeds),
        )
        wide, narrow = str(o.widths[-1]), str(o.widths[0])
        return Result(
            summary=TEXT.format(
                "summary",
                narrow=narrow,
                wide=wide,
                largest_narrow=Spread(values["dot"][LARGEST][narrow]).mean,
                largest_wide=Spread(values["dot"][LARGEST][wide]).mean,
                gradient_dot=Spread(values["dot"][GRADIENT][wide]).mean,
                gradient_scaled=Spread(values["scaled_dot"][GRADIENT][wide]).mean,
            ),
            tables=[table],
            figures=[self._figure(values)],
            runs=[],
            setup=TEXT.paragraphs(
                "setup",
                queries=o.queries,
                keys=o.keys,
                widths=", ".join(map(str, o.widths)),
                low=SLOPE_BAND[0],
                high=SLOPE_BAND[1],
            ),
            budget=TEXT.format("budget", queries=o.queries, widths=len(o.widths), seeds=ctx.seeds),
            data={"values": values, "widths": list(o.widths)},
        )

    def _figure(self, values):
        plt = pyplot()
        widths = self.options.widths
        fig, axes = plt.subplots(1, 3, figsize=(12, 3.8), dpi=110)
        colors = {"dot": "tab:red", "scaled_dot": "tab:blue"}
        for ax, m in zip(axes, MEASURES):
            for s in SCORER_NAMES:
                means = [Spread(values[s][m][str(d)]).mean for d in widths]
                ax.plot(widths, means, marker="o", color=colors[s], label=s)
            ax.set_xscale("log", base=2)
            if m == VARIANCE:
                ax.set_yscale("log", base=2)
            ax.set_xlabel("d_k (query and key components)")
            ax.set_ylabel(m)
            ax.grid(alpha=0.3)
            ax.legend(fontsize=8)
        fig.suptitle(
            f"Random unit-variance queries against {self.options.keys} keys: attnseq's dot and scaled_dot scorers "
            f"({self.context.seeds} draws, means)",
            fontsize=10,
        )
        fig.tight_layout()
        return save_figure(fig, self.context.figure("softmax")), TEXT.format("figure")

    @staticmethod
    def judge(data: dict) -> tuple[list[Finding], list[Phrase]]:
        """Core, the paper's two steps: (1) the unscaled scores' variance grows as d_k (the slope
        of log variance over log d_k, one per draw: its 95% interval inside SLOPE_BAND); (2) at
        the widest d_k the unscaled softmax passes back less gradient than the scaled one (paired
        t over draws on the log norms). Observed: the scaled variance's slope, and the unscaled
        gradient's fall from the narrowest to the widest d_k."""
        values, widths = data["values"], data["widths"]
        logs = [math.log(d) for d in widths]
        draws = len(values["dot"][VARIANCE][str(widths[0])])
        slopes = {
            s: [slope(logs, [math.log(values[s][VARIANCE][str(d)][i]) for d in widths]) for i in range(draws)]
            for s in SCORER_NAMES
        }
        low, high = SLOPE_BAND
        interval, grows_words = slope_interval(slopes["dot"], 3, Phrase("{:.1f} to {:.1f}", low, high))
        if interval is None:
            grows = None
        elif against_bar(interval, low) and interval.high95 <= high:
            grows = True
        elif interval.high95 < low or interval.low95 > high:
            grows = False
        else:
            grows = None
        wide = str(widths[-1])
        dot, scaled = values["dot"][GRADIENT][wide], values["scaled_dot"][GRADIENT][wide]
        findings = [
            Finding(
                grows,
                TEXT.phrase("grows") + grows_words,
                True,
                Phrase("" if grows is not None else "the interval straddles the band"),
            ),
            paired_finding(  # smaller unscaled: scaled_dot's log norm above dot's
                TEXT.phrase("vanishes", wide=widths[-1]),
                "scaled_dot",
                [math.log(v) for v in scaled],
                "dot",
                [math.log(v) for v in dot],
                "",
                3,
                where=[((wide,), f"{GRADIENT}, scaled_dot"), ((wide,), f"{GRADIENT}, dot")],
                shown=(Spread(scaled).mean, Spread(dot).mean),
                by="draw",
            ),
        ]
        narrow = str(widths[0])
        observed = [
            TEXT.phrase("scaled_slope", slope=Spread(slopes["scaled_dot"]).mean),
            TEXT.phrase(
                "fall",
                narrow=widths[0],
                wide=widths[-1],
                before=Spread(values["dot"][GRADIENT][narrow]).mean,
                after=Spread(dot).mean,
            ),
        ]
        return findings, observed
