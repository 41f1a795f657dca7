"""Where a training step's time goes, float32 against bfloat16: torch's profiler over whole steps
of a preset (forward under autocast as the trainer runs it, backward, clipping, Adam), each
operator's own (self) CPU time summed into kinds, beside the step's matrix products replayed
alone at their shapes and dtypes (bench/measure.py: the bound the products put on the step).

    python bench/profile_step.py configs/recommended-subword.yaml --data DIR [--steps 20] [--top 12]

One thread (the bench's unit). Prints a Markdown table of milliseconds per step by kind for each
precision, the step's total (without the profiler, and under it: the kinds add up to the latter,
the profiler's cost inside them), its products alone, and the operators that take most of the
bf16 step. bf16 only where this CPU has bfloat16 in hardware (bf16_in_hardware); the table says so.
"""

from __future__ import annotations

import argparse
import time
from collections import defaultdict
from pathlib import Path

import torch
from measure import MatmulFlops, MatmulShapes, prepared, replay_seconds, training_step
from torch.profiler import ProfilerActivity, profile

# the kinds of operators, by the first whose names one holds (self times: a product's time is its
# own); the recurrent kernels before the products, whose "mkldnn_" their names hold too
KINDS = (
    ("recurrent kernels", ("aten::lstm", "aten::gru", "aten::_thnn", "aten::mkldnn_rnn", "rnn_")),
    ("products", ("aten::mm", "aten::addmm", "aten::bmm", "aten::baddbmm", "aten::_mkldnn", "mkldnn_", "aten::linear")),
    ("casts and copies", ("aten::to", "aten::_to_copy", "aten::copy_", "aten::clone", "aten::contiguous")),
    ("softmax and loss", ("softmax", "nll_loss", "cross_entropy", "aten::logsumexp")),
    (
        "element-wise",
        (
            "aten::add",
            "aten::sub",
            "aten::mul",
            "aten::div",
            "aten::sigmoid",
            "aten::tanh",
            "aten::exp",
            "aten::neg",
            "aten::where",
            "aten::masked_fill",
            "aten::fill_",
            "aten::zero_",
            "aten::sqrt",
            "aten::lerp",
            "aten::addcmul",
            "aten::addcdiv",
            "aten::clamp",
            "aten::maximum",
            "aten::threshold",
            "aten::relu",
            "aten::dropout",
            "aten::bernoulli",
        ),
    ),
    ("reductions and norms", ("aten::sum", "aten::mean", "aten::norm", "aten::linalg_vector_norm", "aten::_foreach")),
    (
        "indexing and shapes",
        (
            "aten::index",
            "aten::embedding",
            "aten::gather",
            "aten::scatter",
            "aten::cat",
            "aten::stack",
            "aten::select",
            "aten::slice",
        ),
    ),
)


def kind_of(name: str) -> str:
    for kind, parts in KINDS:
        if any(p in name for p in parts):
            return kind
    return "other"


def profiled(preset: str, data: str, steps: int, bf16: bool) -> dict:
    """Milliseconds per step by kind, the step's wall ms, its products replayed alone, the top ops."""
    config, model, optimizer, batches = prepared(preset, data, steps + 3, [])
    step = training_step(model, optimizer, config.train.clip_norm, bf16)

    for batch in batches[:3]:
        step(batch)
    started = time.perf_counter()
    for batch in batches[3:]:
        step(batch)
    wall_ms = 1000 * (time.perf_counter() - started) / steps
    started = time.perf_counter()
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        for batch in batches[3:]:
            step(batch)
    profiled_ms = 1000 * (time.perf_counter() - started) / steps  # the profiler's own cost included
    by_kind: dict[str, float] = defaultdict(float)
    by_op: dict[str, float] = defaultdict(float)
    for event in prof.key_averages():
        ms = event.self_cpu_time_total / 1000 / steps
        by_kind[kind_of(event.key)] += ms
        by_op[event.key] += ms
    with MatmulFlops() as count:
        step(batches[3])
    with MatmulShapes() as shapes:
        step(batches[3])
    products_ms = 1000 * replay_seconds(shapes.products, count.calls)  # one batch's products alone
    tokens = sum(int(b.tgt_mask.sum()) for b in batches[3:]) / steps
    return {
        "wall_ms": wall_ms,
        "profiled_ms": profiled_ms,
        "products_alone_ms": products_ms * tokens / int(batches[3].tgt_mask.sum()),  # scaled to the mean batch
        "by_kind": dict(by_kind),
        "top": sorted(by_op.items(), key=lambda kv: -kv[1]),
        "tokens": tokens,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("preset")
    parser.add_argument("--data", required=True)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--top", type=int, default=12)
    args = parser.parse_args()
    torch.set_num_threads(1)
    from attnseq.hardware import bf16_in_hardware, cpu_model

    precisions = [False, True] if bf16_in_hardware() else [False]
    found = {bf16: profiled(args.preset, args.data, args.steps, bf16) for bf16 in precisions}
    names = ["fp32", "bf16"][: len(precisions)]
    print(f"{Path(args.preset).stem}, {args.steps} steps, 1 thread, {cpu_model()}, torch {torch.__version__}\n")
    print("| ms per step | " + " | ".join(names) + " |")
    print("|---|" + "---|" * len(names))
    kinds = [k for k, _ in KINDS] + ["other"]
    for kind in kinds:
        print(
            f"| {kind} (self time) | "
            + " | ".join(f"{found[b]['by_kind'].get(kind, 0.0):.1f}" for b in precisions)
            + " |"
        )
    print(
        "| step under the profiler, wall clock | "
        + " | ".join(f"{found[b]['profiled_ms']:.1f}" for b in precisions)
        + " |"
    )
    print("| **step, wall clock** | " + " | ".join(f"**{found[b]['wall_ms']:.1f}**" for b in precisions) + " |")
    print(
        "| its products alone, replayed | "
        + " | ".join(f"{found[b]['products_alone_ms']:.1f}" for b in precisions)
        + " |"
    )
    print(
        "| target tokens/s | "
        + " | ".join(f"{1000 * found[b]['tokens'] / found[b]['wall_ms']:,.0f}" for b in precisions)
        + " |"
    )
    last = precisions[-1]
    print(f"\nThe {names[-1]} step's {args.top} costliest operators (self ms per step):\n")
    for name, ms in found[last]["top"][: args.top]:
        print(f"- {name}: {ms:.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
