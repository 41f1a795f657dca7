"""skip-connections: a deep attention seq2seq with skip (residual) connections between its
encoder's LSTM layers against the same depth without them, on the book's date task (the book's
section 4.3 on deeper models)."""

from __future__ import annotations

from dataclasses import dataclass

from ..viz import pyplot, save_figure
from .base import REPRODUCTIONS, Finding, Quote, Reproduction, Result, Table, budget
from .datasets import BookTaskOptions, counts
from .plots import draw_seeds, seeds_note
from .spread import Spread, better_finding, spreads
from .training import (
    PlateauOptions,
    compare_variants,
    curve,
    first_reaching,
    run_records,
    step_budget,
    steps_to,
    value_at,
)
from .wording import Phrase

# label, model.encoder
VARIANTS = (("skip", "residual"), ("plain", "stacked"))
COLORS = {"skip": "tab:green", "plain": "tab:gray"}
STEPS_PER_EPOCH = 348  # the book's 44,500 training dates in batches of 128


@dataclass
class SkipConnectionsOptions(BookTaskOptions, PlateauOptions):
    steps: int = budget(4500)  # the cap of updates of every run (batch 128; at 1,500 all were still climbing)
    eval_every: int = 150  # updates between dev evaluations (the curves)
    layers: int = 3  # LSTM layers of the encoder and of the decoder (the book's figure: 3)
    hidden_size: int = 64  # LSTM units (the book: 256; a quarter, so 2 designs x 3 seeds x 3 layers fit the budget)
    dev_sentences: int = 300  # dev dates held out of the book's training part, decoded at each evaluation


@REPRODUCTIONS.register("skip-connections", options=SkipConnectionsOptions)
class SkipConnections(Reproduction):
    title = "A deep attention seq2seq with and without skip connections"
    claim = (
        "With skip (residual) connections between layers, a deeper attention seq2seq learns smoothly: the "
        "gradient passes through the additions unchanged, so the deep model trains better than the same depth "
        "without them."
    )
    quotes = (
        Quote(
            "所谓残差连接，就是指“跨层连接”，在残差连接的连接处，有两个输出被相加。因为加法在反向传播时“按原样”传播梯度，所以残差连接中"
            "的梯度可以不受任何影响地传播到前一个层。这样一来，即便加深了层，梯度也能正常传播，而不会发生梯度消失（或者梯度爆炸），学习"
            "可以顺利进行。",
            "seed document 000 (*Deep Learning from Scratch 2*, chapter 8), §4.3",
            "a residual connection is a connection across layers, where two outputs are added. Because addition "
            "passes the gradient on unchanged in backpropagation, the gradient in a residual connection reaches "
            "the earlier layer unaffected; so even when layers are added the gradient propagates normally, "
            "without vanishing (or exploding), and learning proceeds smoothly.",
        ),
    )
    source = (
        "*Deep Learning from Scratch 2*, §8.4.3, as seed document 000 gives it (3 LSTM layers in the encoder "
        "and the decoder, skip connections across them); `configs/book-attention.yaml` with `model.encoder` "
        "residual or stacked. attnseq's residual connections are in the encoder (`nn/rnn/encoders.py`); its "
        "decoder layers are stacked in both models."
    )
    default_seeds = 3
    nominal_minutes = 28.0

    def run(self) -> Result:
        o, ctx = self.options, self.context
        data = o.split(ctx.run_dir("data"))
        common = [
            f"model.hidden_size={o.hidden_size}",
            f"model.encoder_layers={o.layers}",
            f"model.decoder_layers={o.layers}",
            *step_budget(o.steps, o.eval_every, o.dev_sentences, o),
        ]
        rows = compare_variants(
            ctx, [(label, "book-attention", [f"model.encoder={encoder}"]) for label, encoder in VARIANTS], data, common
        )
        curves = {label: [curve(r["run_dir"], "dev_exact_match") for r in rs] for label, rs in rows.items()}
        half = max(o.eval_every, (o.steps // 2) // o.eval_every * o.eval_every)
        at_half = {label: Spread([100 * (value_at(c, half) or 0.0) for c in cs]) for label, cs in curves.items()}
        test = {label: Spread([100 * v for v in spreads(rs, "test_exact_match").values]) for label, rs in rows.items()}
        reach = {label: [first_reaching(c, 0.9) for c in cs] for label, cs in curves.items()}
        table = Table(
            [
                "model",
                "encoder",
                "parameters",
                "tokens/s",
                f"dev exact match at step {half}",
                "test exact match",
                "steps to 90% dev",
            ],
            [
                [
                    label,
                    f"{o.layers} LSTM layers, {encoder}",
                    f"{rows[label][0]['parameters']:,}",
                    f"{Spread([r['tokens_per_second'] for r in rows[label]]).mean:,.0f}",
                    at_half[label].format(unit="%"),
                    test[label].format(unit="%"),
                    steps_to(reach[label]),
                ]
                for label, encoder in VARIANTS
            ],
            caption=(
                f"The book's date task, {o.layers} LSTM layers in the encoder and in the decoder, each run to its "
                f"plateau or {o.steps} updates ({seeds_note(ctx.seeds)}); test: the best dev checkpoint's exact "
                "match on the book's test dates, greedy."
            ),
        )
        summary = (
            "test exact match "
            + ", ".join(f"{label} {test[label].mean:.1f}%" for label, _ in VARIANTS)
            + f"; dev exact match at update {half}: "
            + ", ".join(f"{label} {at_half[label].mean:.1f}%" for label, _ in VARIANTS)
            + f" ({ctx.seeds} seeds, {o.layers} layers)"
        )
        return Result(
            summary=summary,
            tables=[table],
            figures=[self._figure(curves)],
            runs=run_records(rows, o.steps, ctx.seed_list),
            setup=[
                "Data: the book's date.txt split as `attnseq data book` splits it (dev dates from its training "
                f"part, its test dates): {counts(data)}; padding spaces kept, the question reversed.",
                f"Models: `configs/book-attention.yaml` (embeddings 16, dot attention, the book's initialisation, "
                f"batch 128, Adam 1e-3, clip 5) with `model.encoder_layers={o.layers}`, "
                f"`model.decoder_layers={o.layers}`, `model.hidden_size={o.hidden_size}` (the book has 256), and "
                "`model.encoder` residual (each layer above the first adds its input to its output) or stacked.",
                f"Trained with `attnseq.compare`'s train-and-evaluate: dev exact match on {o.dev_sentences} dates "
                f"every {o.eval_every} updates, {o.plateau_words()}, at most {o.steps} updates; the best dev "
                "checkpoint scored on the test dates.",
                'Tests: "better" by Welch\'s t over the seeds, on the test exact match (how well each trains) and '
                "on the dev exact match halfway through the cap (how fast).",
            ],
            budget=f"at most {o.steps} updates per run (about {o.steps / STEPS_PER_EPOCH:.1f} epochs), "
            f"{o.plateau_words()}; 2 models x {ctx.seeds} seeds",
            data={
                "test_exact_match": {k: v.values for k, v in test.items()},
                "dev_at_half": {k: v.values for k, v in at_half.items()},
                "half": half,
                "layers": o.layers,
            },
        )

    def _figure(self, curves):
        plt = pyplot()
        fig, ax = plt.subplots(figsize=(7.5, 4.3), dpi=110)
        for label, encoder in VARIANTS:
            draw_seeds(ax, curves[label], f"{label}: {encoder} encoder", color=COLORS[label], scale=100)
        ax.set_xlabel("update (batch of 128 dates)")
        ax.set_ylabel("dev exact match (%)")
        ax.set_ylim(-2, 102)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8, loc="upper left")
        ax.set_title(
            f"{self.options.layers}-layer attention seq2seq on the book's dates ({seeds_note(self.context.seeds)})",
            fontsize=10,
        )
        return save_figure(fig, self.context.figure("curves")), (
            "Dev exact match during training, with and without skip connections in the encoder."
        )

    @staticmethod
    def judge(data: dict) -> tuple[list[Finding], list[Phrase]]:
        test = {k: Spread(v) for k, v in data["test_exact_match"].items()}
        at_half = {k: Spread(v) for k, v in data["dev_at_half"].items()}
        return [
            better_finding(
                Phrase("{} layers, test exact match: ", data["layers"]), "skip", test["skip"], "plain", test["plain"]
            ),
            better_finding(
                Phrase("dev exact match at update {}: ", data["half"]),
                "skip",
                at_half["skip"],
                "plain",
                at_half["plain"],
            ),
        ], []
