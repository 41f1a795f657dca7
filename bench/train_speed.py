"""Training speed of a fixed RNN attention model: target tokens per second and peak memory.

The model: bidirectional LSTM 256 encoder, LSTM 256 decoder, general attention with input
feeding, 8,000-word vocabularies, batch 64, sentences of about 20 tokens (random ids). Prints
one line. Compare figures taken in one run: the machine is shared and noisy.

    python bench/train_speed.py [--threads 1] [--steps 30] [--precision bf16]
"""
from __future__ import annotations

import argparse
import resource
import time

import torch

from attnseq.config import load_config
from attnseq.data.batching import collate
from attnseq.data.pipeline import Example
from attnseq.nn.model import build_model
from attnseq.train.optim import build_optimizer

SETTINGS = [
    "model.embed_size=256", "model.hidden_size=256", "model.cell=lstm", "model.encoder.bidirectional=true",
    "model.decoder=luong", "model.attention=general", "model.decoder.input_feeding=true", "train.batch_size=64",
]


def random_batches(count: int, batch: int, vocab: int, mean_len: int, seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    batches = []
    for _ in range(count):
        lengths = torch.randint(mean_len - 4, mean_len + 5, (batch, 2), generator=g)
        examples = [Example(torch.randint(4, vocab, (int(s),), generator=g).tolist(),
                            torch.randint(4, vocab, (int(t),), generator=g).tolist()) for s, t in lengths]
        batches.append(collate(examples, range(batch)))
    return batches


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--vocab", type=int, default=8000)
    parser.add_argument("--length", type=int, default=20)
    parser.add_argument("--precision", choices=("fp32", "bf16"), default="fp32")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    config = load_config(None, SETTINGS + args.set)
    model = build_model(config.model, args.vocab, args.vocab).train()
    optimizer = build_optimizer(model.parameters(), config.train)
    batches = random_batches(args.warmup + args.steps, config.train.batch_size, args.vocab, args.length)
    tokens = 0
    started = 0.0
    for i, b in enumerate(batches):
        if i == args.warmup:
            tokens, started = 0, time.perf_counter()
        optimizer.zero_grad(set_to_none=True)
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=args.precision == "bf16"):
            loss, n = model.loss(b.src, b.src_mask, b.tgt_in, b.tgt_out, b.tgt_mask)
        (loss / n).backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 5.0)
        optimizer.step()
        tokens += n
    seconds = time.perf_counter() - started
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"train_speed: {tokens / seconds:,.0f} target tokens/s  {seconds / args.steps * 1000:.0f} ms/step  "
          f"peak RSS {peak_mb:,.0f} MB  threads={args.threads} precision={args.precision} "
          f"batch={config.train.batch_size} len~{args.length} vocab={args.vocab} steps={args.steps}")


if __name__ == "__main__":
    main()
