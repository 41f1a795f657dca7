"""One measurement of the benchmark table, printed as one JSON line (bench/run.py runs these).

    python bench/measure.py ceiling --threads 1
    python bench/measure.py train PRESET --data DIR [--steps 30] [--threads 1] [--set KEY=VALUE]
    python bench/measure.py train reference [--threads 1]
    python bench/measure.py decode PRESET [--beam 5] [--sentences 300] [--threads 1]
    python bench/measure.py decode-int8 PRESET|RUN [--data TSV] [--beam 5] [--sentences 300] [--repeat 3]
    python bench/measure.py engines RUN --data TEST.tsv [--beam 5] [--repeat 3] [--threads 1]

It imports whichever attnseq comes first on the path (PYTHONPATH), and uses only what every
version since 0.1.0 has (load_config of the tree's own preset, build_model, model.loss,
build_optimizer, search; the decoding layout of attnseq.load and the torch engine's allocator
setting where the revision has them), so one script measures two commits alike. ``train`` times
whole training steps (forward, backward, clipping, optimizer) on batches of the data;
``reference`` is a fixed model (bidirectional LSTM 256, LSTM 256 decoder, general attention with
input feeding, 8,000-word vocabularies, batches of 64 sentences of ~20 tokens); ``decode``
searches random sources of 5 to 30 tokens with an untrained preset-sized model (8,000 words),
then counts the same searches' matmul FLOPs; ``decode-int8`` (this checkout only: it runs
bench/decode_speed.py's comparison) decodes the same sources in fp32 and in int8 in this one
process, in turn, ``--repeat`` times, and gives each one's best sentences/s, the share of int8
outputs equal to fp32's and, for a trained run with references (``--data``, default its test
set), each one's exact match and BLEU. Both measure the matmul ceiling again right after
timing (the machine is shared: its speed drifts), and the fraction of it is taken against that.
``engines`` (this tree's own, not of older revisions) decodes a trained Transformer run's test
set with the torch engine (fp32, eager) and with CTranslate2 (the run exported to float32 and to
int8 in temporary folders), each on ``--threads`` threads (CTranslate2: as many batches at
once, a thread each), in turns, ``--repeat`` times, keeping each one's best time, with its BLEU and
how many outputs equal the torch engine's.
Times are wall-clock seconds, or with ``--clock cpu`` the process's CPU seconds (steadier when
something else runs on the machine; with 1 thread only); matmul FLOPs per step are counted with
torch's FlopCounterMode.
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import os
import random
import resource
import sys
import time
from pathlib import Path

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils.flop_counter import FlopCounterMode

REFERENCE = [
    "model.embed_size=256",
    "model.hidden_size=256",
    "model.cell=lstm",
    "model.decoder=luong",
    "model.attention=general",
    "train.batch_size=64",
]


def ceiling(threads: int, sizes=(512, 1024, 1536, 2048), dtype=torch.float32) -> dict:
    """The best matmul rate (GFLOP/s) of square products 512 .. 2048 in ``dtype`` (fp32 by default)."""
    best = 0.0
    for n in sizes:
        a, b = torch.randn(n, n, dtype=dtype), torch.randn(n, n, dtype=dtype)
        for _ in range(2):
            a @ b
        repeats = max(3, int(2e9 / n**3))
        started = time.perf_counter()
        for _ in range(repeats):
            a @ b
        best = max(best, 2 * n**3 * repeats / (time.perf_counter() - started) / 1e9)
    return {"gflops": best}


def reference_config():
    from attnseq.config import load_config

    for bidirectional in (
        ["model.encoder.bidirectional=true", "model.decoder.input_feeding=true"],
        ["model.bidirectional=true", "model.input_feeding=true"],
    ):  # this version / 0.1.0
        try:
            return load_config(None, REFERENCE + bidirectional)
        except Exception:  # noqa: BLE001  (the other version's keys)
            continue
    raise SystemExit("measure: no reference config for this attnseq")


def fitted(preset: str, data: str, overrides: list[str], split: str = "train"):
    """(the preset's config, its pipeline fitted on ``data``'s training pairs, the pairs of
    ``split``); a preset whose sources are files (data.input image) reads them relative to the TSV
    and gets its frontend (revisions without them read text)."""
    from attnseq.config import load_config
    from attnseq.data.pipeline import TextPipeline

    config = load_config(preset, overrides)
    try:
        from attnseq.data.sources import read_pairs

        try:
            from attnseq.engines.torch_engine.trainer import check_source
        except ImportError:  # a revision before train/loop.py became trainer.py
            from attnseq.train.loop import check_source
    except ImportError:  # a revision before sources that are files

        def read(path):
            return [tuple(line.split("\t")) for line in Path(path).read_text(encoding="utf-8").splitlines()]
    else:
        config = check_source(config)

        def read(path):
            return read_pairs(path, config.data)

    pipeline = TextPipeline.fit(config.data, read(Path(data, "train.tsv")), Path(data))
    return config, pipeline, read(Path(data, f"{split}.tsv"))


def examples_of(pairs, pipeline):
    from attnseq.data.batching import Example

    return [Example(pipeline.encode_source(s), pipeline.encode_target(t)) for s, t in pairs]


def random_examples(n: int, vocab: int, seed: int = 0):
    from attnseq.data.batching import Example

    g = torch.Generator().manual_seed(seed)
    lengths = torch.randint(16, 25, (n, 2), generator=g)
    return [
        Example(
            torch.randint(4, vocab, (int(s),), generator=g).tolist(),
            torch.randint(4, vocab, (int(t),), generator=g).tolist(),
        )
        for s, t in lengths
    ]


CLOCK = time.perf_counter


def allocator_as_the_engine_sets_it() -> None:
    """glibc's malloc set as the torch engine sets it to train and to translate, in the revisions
    that do (attnseq.allocator.keep_freed_memory)."""
    try:
        from attnseq.allocator import keep_freed_memory
    except ImportError:
        return
    keep_freed_memory()


def searched(model, src, mask, settings):
    """search() of the attnseq this process measures (this tree's, or --against's): one SourceBatch
    since attnseq has one, the ids and the mask before."""
    from attnseq.decoding.search import search

    try:
        from attnseq.data.batching import SourceBatch
    except ImportError:
        return search(model, src, mask, settings)
    return search(model, SourceBatch(src, mask), settings)


def batch_loss(model, batch):
    """model.loss of a training Batch, in the signature of the attnseq this process measures."""
    if hasattr(batch, "source"):
        return model.loss(batch.source, batch.tgt_in, batch.tgt_out, batch.tgt_mask)
    return model.loss(batch.src, batch.src_mask, batch.tgt_in, batch.tgt_out, batch.tgt_mask)


def peak_rss_mb() -> float:
    """This process's peak resident memory so far (taken before the ceiling and FLOP counts)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def prepared(preset: str, data: str | None, batches: int, overrides: list[str]):
    """(config, model in training mode, its optimizer, the first ``batches`` training batches) of
    ``preset`` fitted on ``data`` (``reference``: the fixed model on random sentences), seeded 0."""
    from attnseq.data.batching import batch_indices, collate
    from attnseq.nn.model import build_model
    from attnseq.train.optim import build_optimizer

    torch.manual_seed(0)
    if preset == "reference":
        config, vocab = reference_config(), 8000
        examples = random_examples(64 * batches, vocab)
        src_vocab = tgt_vocab = vocab
    else:
        config, pipeline, pairs = fitted(preset, data, overrides)
        examples = examples_of(pairs, pipeline)
        src_vocab, tgt_vocab = len(pipeline.src_vocab), len(pipeline.tgt_vocab)
    features = getattr(getattr(pipeline, "inputs", None), "feature_size", 0) if preset != "reference" else 0
    model = build_model(
        config.model,
        src_vocab,
        tgt_vocab,
        shares_vocab=config.data.shared_vocab,
        **({"features": features} if features else {}),
    ).train()
    optimizer = build_optimizer(model.parameters(), config.train)
    indices = batch_indices(examples, config.train.batch_size, True, 1, 0, True)[:batches]
    return config, model, optimizer, [collate([examples[i] for i in idx], idx) for idx in indices]


def training_step(model, optimizer, clip: float, bf16: bool):
    """One whole training step on a batch (forward under bfloat16 autocast where ``bf16``,
    backward, clipping where ``clip``, the optimizer): a function of the batch that returns its
    target tokens."""

    def step(batch) -> int:
        optimizer.zero_grad(set_to_none=True)
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
            loss, tokens = batch_loss(model, batch)
        (loss / tokens).backward()
        if clip:
            torch.nn.utils.clip_grad_norm_(model.parameters(), clip)
        optimizer.step()
        return int(tokens)

    return step


def train(preset: str, data: str | None, steps: int, threads: int, overrides: list[str]) -> dict:
    """CPU seconds per training step, target tokens/s, sentences/s and matmul FLOPs per step.
    With train.precision bf16 the loss runs under bfloat16 autocast as the trainer runs it, its
    products are replayed in the dtypes they ran in, and the ceiling is bfloat16's; any other
    precision (auto included: the trainer's probe is not repeated here) measures float32."""
    allocator_as_the_engine_sets_it()
    config, model, optimizer, batches = prepared(preset, data, steps + 3, overrides)
    clip = config.train.clip_norm
    bf16 = getattr(config.train, "precision", "fp32") == "bf16"
    step = training_step(model, optimizer, clip, bf16)
    flops, replay = matmul_flops(model, lambda: step(batches[0]))
    flops_per_token = flops / int(batches[0].tgt_mask.sum())
    for batch in batches[1:3]:
        step(batch)
    tokens = sentences = 0
    started = CLOCK()
    for batch in batches[3:]:
        tokens += step(batch)
        sentences += batch.tgt_in.shape[0]
    seconds = CLOCK() - started
    rss = peak_rss_mb()
    matmul_seconds = replay()  # after the peak RSS: it holds every operand of the step at once
    return {
        "peak_rss_mb": rss,
        "tokens_per_second": tokens / seconds,
        "sentences_per_second": sentences / seconds,
        "ms_per_step": 1000 * seconds / (len(batches) - 3),
        "gflop_per_token": flops_per_token / 1e9,
        "matmul_ms_per_step": 1000 * matmul_seconds,  # the first batch's products alone
        "ceiling_gflops": ceiling(threads, (1024, 2048), torch.bfloat16 if bf16 else torch.float32)["gflops"],
        "precision": "bf16" if bf16 else "fp32",
    }  # the machine as it was just now


def decode(preset: str, beam: int, sentences: int, threads: int) -> dict:
    """Sentences/s of greedy (beam 1) or beam search, batches of 64 sorted by length."""
    from attnseq.config import load_config
    from attnseq.data.batching import pad
    from attnseq.nn.model import build_model

    config = load_config(preset)
    torch.manual_seed(0)
    vocab = 8000  # the target side one larger: two vocabularies, untied under every revision
    model = build_model(config.model, vocab, vocab + 1).eval()
    try:  # laid out as attnseq.load lays out a model to translate, in the revisions that do
        from attnseq.nn.layout import lay_out_for_decoding
    except ImportError:
        pass
    else:
        lay_out_for_decoding(model)
    allocator_as_the_engine_sets_it()
    rng = random.Random(0)
    sources = sorted(([rng.randrange(4, vocab) for _ in range(rng.randint(5, 30))] for _ in range(sentences)), key=len)
    settings = dataclasses.replace(config.decode, beam_size=beam, n_best=1, batch_size=64)
    outputs = []
    with torch.no_grad():
        src, mask = pad(sources[:64])
        searched(model, src, mask, settings)  # warm-up
        started = CLOCK()
        for start in range(0, len(sources), 64):
            src, mask = pad(sources[start : start + 64])
            outputs += [h[0].tokens for h in searched(model, src, mask, settings)]
        seconds = CLOCK() - started
        rss = peak_rss_mb()
        with MatmulFlops() as count:  # the same searches again, counting their matmul FLOPs
            for start in range(0, len(sources), 64):
                searched(model, *pad(sources[start : start + 64]), settings)
    digest = hashlib.sha1(json.dumps(outputs).encode()).hexdigest()[:12]  # the same outputs?
    return {
        "peak_rss_mb": rss,
        "sentences_per_second": len(sources) / seconds,
        "outputs": digest,
        "gflop_per_sentence": count.total() / len(sources) / 1e9,
        "ceiling_gflops": ceiling(threads, (1024, 2048))["gflops"],
    }


def decode_int8(target: str, beam: int, sentences: int, data: str | None, repeat: int) -> dict:
    """fp32 against int8 (``decode.precision``) in this process: sentences/s of each (the best of
    ``repeat``, timed in turn) on the first ``sentences`` sources, the share of them int8 decodes
    as fp32 does, and for a run (a folder with config.yaml) the quality of each on the whole of
    ``data`` (default: its test set)."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import decode_speed as speed  # this checkout's: int8 is not in the revisions before it

    speed.CLOCK = CLOCK
    precisions = ("fp32", "int8")
    if (Path(target) / "config.yaml").is_file():
        from attnseq.api import load

        translators = {p: load(target, precision=p) for p in precisions}
        pairs = speed.run_pairs(translators["fp32"], data, None, split="test")  # the quality: all of it
        sources, config = speed.source_ids(translators["fp32"], pairs[:sentences]), translators["fp32"].config
        models = {p: t.model for p, t in translators.items()}
        got = translators["int8"].precision  # fp32 where this CPU has no int8 dot products
    else:
        allocator_as_the_engine_sets_it()
        models = {}
        for p in precisions:
            models[p], config = speed.untrained(8000, [], p, preset=target)
        sources, translators, got = speed.random_sources(sentences, 8000), None, "int8"
    settings = dataclasses.replace(config.decode, beam_size=beam, n_best=1, batch_size=64)
    for model in models.values():  # warm-up
        speed.decode_all(model, sources[:64], settings)
    speeds, outputs = speed.in_turn(models, sources, settings, repeat)
    same = sum(a == b for a, b in zip(outputs["int8"], outputs["fp32"])) / len(sources)
    result = {"fp32": speeds["fp32"], "int8": speeds["int8"], "same_outputs": same, "int8_ran_as": got}
    if translators:
        result["quality"] = {p: speed.quality(t, pairs, beam) for p, t in translators.items()}
    return result


def engines(run: str, data: str, beam: int, threads: int, repeat: int) -> dict:
    """Per engine (torch, ctranslate2 float32, ctranslate2 int8): sentences/s (best of ``repeat``
    turns, the engines taking turns), BLEU (as evaluate scores it) and the outputs equal to the
    torch engine's."""
    import tempfile

    import attnseq
    from attnseq.data.sources import evaluation_pairs
    from attnseq.export.ctranslate2_spec import export_ctranslate2
    from attnseq.runs import read_run_config

    try:
        from attnseq.engines.ctranslate2_engine.translator import CTranslate2Translator
    except ImportError:  # a revision before each engine kept its translator
        from attnseq.translator.ctranslate2_model import CTranslate2Translator

    translators = {"torch": attnseq.load(run)}
    config = read_run_config(run)
    pairs = evaluation_pairs(data, config.data)
    with tempfile.TemporaryDirectory() as tmp:
        for quantization in ("float32", "int8"):
            folder = export_ctranslate2(run, Path(tmp) / quantization, quantization)
            translators[f"ctranslate2 {quantization}"] = CTranslate2Translator.load(
                folder, read_run_config(folder), threads=threads
            )
    from attnseq.eval.metrics import sacrebleu_score

    sources = [s for s, _ in pairs]
    results = {name: {"seconds": float("inf")} for name in translators}
    for _ in range(repeat):  # the search (text in, text out), the engines taking turns; the best time of each
        for name, translator in translators.items():
            started = CLOCK()
            found = translator.search(sources, beam_size=beam)
            results[name]["seconds"] = min(results[name]["seconds"], CLOCK() - started)
            results[name]["outputs"] = [r.outputs[0] for r in found]
    references = [translators["torch"].pipeline.normalise(t) for _, t in pairs]  # as evaluate scores them
    for found in results.values():
        found.update(
            sentences=len(pairs),
            sentences_per_second=len(pairs) / found.pop("seconds"),
            bleu=sacrebleu_score("bleu", found["outputs"], references)[0],
            same_outputs=sum(a == b for a, b in zip(found["outputs"], results["torch"]["outputs"])),
        )
    for found in results.values():
        del found["outputs"]
    compute = {name: t.model.compute_type for name, t in translators.items() if name != "torch"}
    return {
        "engines": results,
        "compute_types": compute,
        "cpu_isa": os.environ.get("CT2_FORCE_CPU_ISA"),
        "peak_rss_mb": peak_rss_mb(),
    }


class MatmulFlops:
    """Counts the matmul FLOPs run inside ``with``: torch's count of mm/bmm/attention, plus
    torch's fused recurrent kernels where it cannot see them (2 x positions x weights of every
    layer and direction, forward; twice that again backward when gradients are on), however a
    revision calls them. (Some calls, packed sequences among them, run as ops the count does
    see: those are not added again.)"""

    NAMES = ("lstm", "gru", "rnn_tanh", "rnn_relu")

    def __init__(self):
        import torch._VF as kernels  # what nn.LSTM / nn.GRU / nn.RNN and attnseq's encoders call

        self.kernels, self.fused, self.counter = kernels, 0.0, FlopCounterMode(display=False)
        self.calls: list = []  # (kernel, args) of each fused call the count did not see

    def counted(self, kernel):
        def call(*args):
            packed = isinstance(args[1], torch.Tensor) and not args[1].is_floating_point()  # (data, batch_sizes, ...)
            x = args[0]
            positions = x.shape[0] if packed else x.shape[0] * x.shape[1]
            weights = args[3] if packed else args[2]
            seen = self.counter.get_total_flops()
            out = kernel(*args)
            if self.counter.get_total_flops() == seen:  # a fused kernel the count did not see
                self.calls.append((kernel, args))
                grads = torch.is_grad_enabled() and (x.requires_grad or any(w.requires_grad for w in weights))
                passes = 3 if grads else 1
                self.fused += passes * 2 * positions * sum(w.numel() for w in weights if w.dim() == 2)
            return out

        return call

    def __enter__(self):
        self.originals = {name: getattr(self.kernels, name) for name in self.NAMES}
        for name in self.NAMES:
            setattr(self.kernels, name, self.counted(self.originals[name]))
        self.counter.__enter__()
        return self

    def __exit__(self, *exc):
        self.counter.__exit__(*exc)
        for name in self.NAMES:
            setattr(self.kernels, name, self.originals[name])

    def total(self) -> float:
        return self.counter.get_total_flops() + self.fused


class MatmulShapes(TorchDispatchMode):
    """Records the shapes of every matrix product run inside ``with`` (mm, addmm, bmm, ...)."""

    OPS = {
        "aten::mm": "mm",
        "aten::addmm": "addmm",
        "aten::addmm_": "addmm",
        "aten::bmm": "bmm",
        "aten::baddbmm": "baddbmm",
        "aten::baddbmm_": "baddbmm",
    }

    def __init__(self):
        super().__init__()
        self.products: list[tuple[str, list[tuple[int, ...]], torch.dtype]] = []  # (op, shapes, dtype)

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        name = self.OPS.get(func._schema.name)
        if name:
            tensors = [a for a in args[:3] if isinstance(a, torch.Tensor)]
            self.products.append((name, [tuple(a.shape) for a in tensors], tensors[0].dtype))
        return func(*args, **(kwargs or {}))


def fresh_leaf(value):
    """A detached copy of a floating tensor that requires grad (tuples and lists copied through)."""
    if isinstance(value, (tuple, list)):  # an LSTM's state (h, c), a kernel's weights
        return type(value)(fresh_leaf(v) for v in value)
    if isinstance(value, torch.Tensor) and value.is_floating_point():
        return value.detach().clone().requires_grad_()
    return value


def replay_seconds(products, fused_calls, repeats: int = 3) -> float:
    """The best time of running only a step's matrix products, each at its own shapes on
    contiguous random operands of the dtype it ran in, and its fused recurrent kernels forward
    and backward."""
    operands = [
        (getattr(torch, name), [torch.randn(shape, dtype=dtype) for shape in shapes])
        for name, shapes, dtype in products
    ]
    fused = [(kernel, [fresh_leaf(a) for a in args]) for kernel, args in fused_calls]
    best = float("inf")
    for _ in range(repeats):
        started = time.perf_counter()
        for op, tensors in operands:
            op(*tensors)
        for kernel, args in fused:
            kernel(*args)[0].sum().backward()
        best = min(best, time.perf_counter() - started)
    return best


def matmul_flops(model: torch.nn.Module, run) -> tuple[float, object]:
    """(the matmul FLOPs of ``run()`` (a training step), a function that returns the seconds its
    matrix products and fused recurrent kernels take run alone at their shapes: a bound on the
    step's speed). ``run`` runs twice: once counted, once with its products recorded."""
    with MatmulFlops() as count:
        run()
    with MatmulShapes() as shapes:
        run()
    return count.total(), lambda: replay_seconds(shapes.products, count.calls)


def decode_files(preset: str, data: str, beam: int, sentences: int, threads: int) -> dict:
    """Images/s of greedy (beam 1) or beam search of the preset (untrained) over ``data``'s test
    images, read from their files as translate reads them, batches of 64 sorted by width."""
    from attnseq.data.batching import pad_sources
    from attnseq.nn.model import build_model

    config, pipeline, pairs = fitted(preset, data, [], "test")
    torch.manual_seed(0)
    model = build_model(
        config.model, len(pipeline.src_vocab), len(pipeline.tgt_vocab), features=pipeline.inputs.feature_size
    ).eval()
    allocator_as_the_engine_sets_it()
    paths = [source for source, _ in pairs][:sentences]
    settings = dataclasses.replace(config.decode, beam_size=beam, n_best=1, batch_size=64)
    with torch.no_grad():
        searched(model, *pad_sources([pipeline.read_source(p).ids for p in paths[:8]]), settings)  # warm-up
        started = CLOCK()
        features = sorted((pipeline.read_source(p).ids for p in paths), key=len)
        for start in range(0, len(features), 64):
            searched(model, *pad_sources(features[start : start + 64]), settings)
        seconds = CLOCK() - started
    return {"peak_rss_mb": peak_rss_mb(), "sentences_per_second": len(paths) / seconds}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("what", choices=("ceiling", "train", "decode", "decode-int8", "decode-files", "engines"))
    parser.add_argument("preset", nargs="?")
    parser.add_argument("--data")
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--beam", type=int, default=1)
    parser.add_argument("--sentences", type=int, default=300)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--set", action="append", default=[])
    parser.add_argument("--clock", choices=("wall", "cpu"), default="wall")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    global CLOCK
    CLOCK = time.process_time if args.clock == "cpu" else time.perf_counter
    if args.what == "ceiling":
        result = ceiling(args.threads)
    elif args.what == "train":
        result = train(args.preset, args.data, args.steps, args.threads, args.set)
    elif args.what == "decode-files":
        result = decode_files(args.preset, args.data, args.beam, args.sentences, args.threads)
    elif args.what == "decode-int8":
        result = decode_int8(args.preset, args.beam, args.sentences, args.data, args.repeat)
    elif args.what == "engines":
        result = engines(args.preset, args.data, args.beam, args.threads, args.repeat)
    else:
        result = decode(args.preset, args.beam, args.sentences, args.threads)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
