"""The Translator of a Transformer run exported to CTranslate2 (``attnseq export RUN --to
ctranslate2``, attnseq/export/ctranslate2_spec.py): CTranslate2 decodes, the base class does
the rest (the run's text pipeline, unknown pieces and blank inputs, metrics), so ``translate``,
``evaluate``, ``serve`` and the API read an exported folder as they read a run.

What a search asks of CTranslate2 (``Translator.translate_batch``) and what comes back:

- the source as the export's token strings of attnseq's ids (the vocabularies keep the ids), so
  what the pipeline read as unknown is CTranslate2's unknown token too;
- greedy (beam 1) and beam search, ``n_best`` hypotheses; outputs may end at the first step
  (``min_decoding_length`` 0, as attnseq's search) and keep their end token
  (``return_end_token``), so each hypothesis' length counts eos as attnseq's |Y| does and its
  attention holds the eos step's row, as attnseq's does;
- the output limit of each sentence (decode.max_len, max_len_ratio, max_len_offset) is its own,
  as in attnseq's search, so a sentence's result never depends on the others in its batch:
  CTranslate2 takes one ``max_decoding_length`` a call, so beam search searches the batch in
  groups of one limit, and greedy search bands of limits (the largest at most 1.25 times the
  smallest) each to its largest, cutting the sentences that had not ended within their own
  where it is (the same steps), scored by ``score_batch``;
- scores: without a length penalty the sum of the tokens' log-probabilities (eos included),
  CTranslate2's early stop; with decode.length_penalty = alpha > 0, attnseq's GNMT penalty
  ((5 + |Y|) / 6) ** alpha, which CTranslate2 does not have (it divides by |Y| ** penalty):
  CTranslate2 searches with penalty 1 (the beam's ranking is by sums either way; a nonzero
  penalty only makes it collect ``beam_size`` finished hypotheses), returns them all, and each
  is rescored with GNMT's penalty from its sum (score x |Y|) and the best ``n_best`` kept;
- attention (``return_attention``): the last layer's cross-attention averaged over heads (the
  export sets alignment_layer -1, alignment_heads 0), one row per decoding step from the one
  that fed the start token, over the real source tokens: attnseq's alignment (T_out, S).
  CTranslate2 gives no other layer or head and no encoder self-attention, so the page and the
  plots show the alignment alone (AttentionViews empty).

CTranslate2 searches batches with its own beam: it refills the beam from the next candidates
when a hypothesis ends, where attnseq's search lets the beam narrow, so beam outputs can differ
from the torch engine's when hypotheses score alike; greedy search is the same search.
"""

from __future__ import annotations

import json
import logging
import math
import os
from pathlib import Path

import numpy as np

from ...config import Config, DecodeConfig
from ...ctranslate2_library import import_ctranslate2
from ...data.vocab import Vocab
from ...decoding.common import Hypothesis, gnmt_penalty
from ...decoding.options import output_limits
from ...errors import ConfigError, UserError
from ...hardware import int8_in_hardware, usable_cpus
from ...runs import EXPORT_FILE
from ...translator.base import Translator
from ...utils import whole_number

log = logging.getLogger("attnseq")


def read_export(folder: str | Path) -> dict:
    """The record of an exported model (export.json: format, quantization, checkpoint, run,
    positions); a UserError naming the folder when it is not one."""
    path = Path(folder) / EXPORT_FILE
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
        if record["format"] != "ctranslate2" or not (path.parent / "model.bin").is_file():
            raise ValueError("not an export to ctranslate2")
        if int(record["positions"]) < 1 or record["checkpoint"] not in ("best", "last"):
            raise ValueError(f"positions {record['positions']!r}, checkpoint {record['checkpoint']!r}")
        return record
    except (OSError, ValueError, KeyError, TypeError) as err:
        raise UserError(
            f"{folder}: not a model exported to CTranslate2 ({path.name}: {err}); export a run with "
            "attnseq export RUN --to ctranslate2 --out DIR"
        ) from None


def vocabularies(folder: Path) -> tuple[list[str], list[str]]:
    """(source tokens, target tokens) of the export, token i being attnseq's id i."""
    shared = folder / "shared_vocabulary.json"
    if shared.exists():
        tokens = json.loads(shared.read_text(encoding="utf-8"))
        return tokens, tokens
    return (
        json.loads((folder / "source_vocabulary.json").read_text(encoding="utf-8")),
        json.loads((folder / "target_vocabulary.json").read_text(encoding="utf-8")),
    )


def ctranslate2_device(device: str) -> tuple[str, int]:
    """CTranslate2's (device, device_index) of attnseq's "cpu", "cuda" or "cuda:N"."""
    if device.startswith("cuda"):
        return "cuda", int(device.partition(":")[2] or 0)
    return "cpu", 0


class CTranslate2Translator(Translator):
    """An exported model decoded by CTranslate2 (``ctranslate2.Translator``), with the run's text
    pipeline. ``threads`` (0: OMP_NUM_THREADS, else the cores this process may use) batches are
    decoded at once, one thread each (CTranslate2's inter_threads; intra_threads 1): batches side
    by side scale with the threads where one batch on several threads did not (docs/engines.md).
    A GPU: one batch at a time."""

    def __init__(
        self,
        folder: str | Path,
        pipeline,
        config: Config,
        device: str = "cpu",
        threads: int = 0,
        compute_type: str = "default",
    ):
        try:
            ctranslate2 = import_ctranslate2()
        except ImportError:
            raise UserError(
                f"{folder}: decoding a CTranslate2 export needs the ctranslate2 package: "
                "pip install 'attnseq[ctranslate2]'"
            ) from None
        super().__init__(pipeline, config)
        self.folder = Path(folder)
        self.export = read_export(self.folder)
        self.positions = int(self.export["positions"])
        name, index = ctranslate2_device(device)
        # a GPU decodes one batch at a time (more would each hold a copy of the model on it)
        self.batches_at_once = 1 if name == "cuda" else threads or default_threads()
        try:  # what the folder holds is CTranslate2's to read: a damaged file is its RuntimeError
            self.model = ctranslate2.Translator(
                str(self.folder),
                device=name,
                device_index=index,
                compute_type=compute_type,
                intra_threads=1,
                inter_threads=self.batches_at_once,
            )
            source, target = vocabularies(self.folder)
            if not all(isinstance(t, str) for t in [*source, *target]):
                raise ValueError("a vocabulary is not a list of tokens")
        except Exception as err:  # noqa: BLE001  (CTranslate2's loader of a user's files raises RuntimeError,
            # IndexError, ValueError, ... as the damage goes)
            raise self._damaged("load", err) from None
        if len(source) != len(pipeline.src_vocab) or len(target) != len(pipeline.tgt_vocab):
            raise UserError(
                f"{self.folder}: its CTranslate2 vocabularies ({len(source)}, {len(target)} tokens) are "
                f"not the run's ({len(pipeline.src_vocab)}, {len(pipeline.tgt_vocab)})"
            )
        self.source_tokens, self.target_tokens = source, target
        self.target_ids = {token: i for i, token in enumerate(target)}

    def decode_batch(
        self, src_ids: list[list[int]], decode: DecodeConfig, keep_attention: bool = False
    ) -> list[list[Hypothesis]]:
        """Hypotheses of each source, each searched to its own output limit: greedy search in one
        search of each band of limits (``_greedy``), beam search in groups of one limit. What
        CTranslate2 raises while it decodes (a config.json edited into one it loads but cannot
        decode with: no decoder start token, a setting of another type) is a UserError naming
        the folder."""
        try:
            return self._decode_batch(src_ids, decode, keep_attention)
        except UserError:
            raise
        except Exception as err:  # noqa: BLE001  (what the export's files make CTranslate2 raise)
            raise self._damaged("decode with", err) from None

    def _damaged(self, doing: str, err: Exception) -> UserError:
        """The one line for what CTranslate2 raised on this folder's files while ``doing``; where
        the environment sets CTranslate2's own variables (CT2_VERBOSE=abc raises ValueError
        "stoi" at the load), it names them too, since the files may not be at fault
        (CT2_FORCE_CPU_ISA is checked where CTranslate2 is imported)."""
        read = [
            f"{name}={value!r}"
            for name, value in sorted(os.environ.items())
            if name.startswith("CT2_") and name != "CT2_FORCE_CPU_ISA"
        ]
        also = f"; CTranslate2 also reads {', '.join(read)} from the environment: unset it, or" if read else ";"
        return UserError(
            f"{self.folder}: CTranslate2 cannot {doing} this export ({type(err).__name__}: {err}){also} "
            "export the run again: attnseq export RUN --to ctranslate2 --out DIR --overwrite"
        )

    def _decode_batch(
        self, src_ids: list[list[int]], decode: DecodeConfig, keep_attention: bool
    ) -> list[list[Hypothesis]]:
        self._check_positions(max(len(ids) for ids in src_ids), "source")
        limits = output_limits(
            [len(ids) for ids in src_ids], decode.max_len_ratio, decode.max_len_offset, decode.max_len
        )
        results: list[list[Hypothesis]] = [[] for _ in src_ids]
        if decode.beam_size == 1 and max(limits) < self.positions:  # (score_batch feeds one position more)
            for band in limit_bands(limits):
                for i, nbest in zip(
                    band, self._greedy([src_ids[i] for i in band], [limits[i] for i in band], decode, keep_attention)
                ):
                    results[i] = nbest
            return results
        for limit in sorted(set(limits)):
            rows = [i for i, own in enumerate(limits) if own == limit]
            cap = min(limit, self.positions)
            found = self._search([src_ids[i] for i in rows], cap, decode, keep_attention)
            if cap < limit and any(len(h.tokens) >= cap for nbest in found for h in nbest):
                self._check_positions(cap + 1, "output")  # no end yet where the encodings end
            for i, nbest in zip(rows, found):
                results[i] = nbest
        return results

    def _greedy(
        self, src_ids: list[list[int]], limits: list[int], decode: DecodeConfig, keep_attention: bool
    ) -> list[list[Hypothesis]]:
        """Greedy search of the batch to its largest limit: until its own limit a sentence takes the
        steps a search to that limit takes, so one that had not ended by then is cut there (its
        tokens and attention rows), its score the sum of the kept tokens' log-probabilities
        (CTranslate2's score_batch of them, without the end's)."""
        found = self._search(src_ids, max(limits), decode, keep_attention)
        cut = [i for i, nbest in enumerate(found) if len(nbest[0].tokens) >= limits[i]]
        if cut:
            kept = [found[i][0].tokens[: limits[i]] for i in cut]
            scored = self.model.score_batch(
                [[self.source_tokens[t] for t in src_ids[i]] for i in cut],
                [[self.target_tokens[t] for t in tokens] for tokens in kept],
                max_input_length=0,
            )
            for i, tokens, result in zip(cut, kept, scored):
                alignment = found[i][0].alignment
                found[i] = [
                    Hypothesis(
                        tokens,
                        float(sum(result.log_probs[:-1])),  # the end's is the last
                        None if alignment is None else alignment[: limits[i]],
                    )
                ]
        return found

    def _check_positions(self, length: int, side: str) -> None:
        """A ConfigError naming the key when a sequence of ``length`` positions needs more position
        encodings than the export holds (the torch engine's error for a learned table)."""
        if length <= self.positions:
            return
        positional = self.config.model.positional
        learned = getattr(positional, "name", positional) == "learned"
        key = (
            "model.positional.max_positions"
            if learned
            else ("decode.max_source_len" if side == "source" else "decode.max_len")
        )
        raise ConfigError(
            f"{key}: a {side} reaches position {length}, past the {self.positions} positions the "
            f"export's encodings hold; limit lengths (decode.max_source_len, decode.max_len)"
            + ("" if learned else ", or export again with them raised"),
            key=key,
        )

    def _search(
        self, rows: list[list[int]], limit: int, decode: DecodeConfig, keep_attention: bool
    ) -> list[list[Hypothesis]]:
        """CTranslate2's search of the sources ``rows`` (ids) with at most ``limit`` output tokens."""
        tokens = [[self.source_tokens[i] for i in ids] for ids in rows]
        alpha = decode.length_penalty if decode.beam_size > 1 else 0.0
        penalty = length_exponent(alpha, sum(map(len, rows)) / len(rows)) if alpha else 0.0
        found = self.model.translate_batch(
            tokens,
            beam_size=decode.beam_size,
            num_hypotheses=decode.beam_size if alpha else decode.n_best,
            length_penalty=penalty,
            max_decoding_length=limit,
            min_decoding_length=0,
            max_input_length=0,
            return_scores=True,
            return_end_token=True,
            return_attention=keep_attention,
        )
        first = None
        if keep_attention and decode.beam_size > 1 and len(rows) > 1:
            # CTranslate2 (4.8) gives each sentence of a batched beam search the first step's attention
            # row of sentence (its index // beam_size); every hypothesis shares that step, which
            # one step of greedy search gives right
            first = self.model.translate_batch(
                tokens,
                beam_size=1,
                max_decoding_length=1,
                min_decoding_length=0,
                max_input_length=0,
                return_end_token=True,
                return_attention=True,
            )
        results = []
        for n, result in enumerate(found):
            nbest = []
            for k, output in enumerate(result.hypotheses):
                length = len(output)  # eos included when it was produced: |Y|
                ids = [self.target_ids[t] for t in output]
                if ids and ids[-1] == Vocab.eos_id:
                    ids.pop()
                score = float(result.scores[k])
                if alpha:  # CTranslate2's sum / |Y| ** penalty back to the sum, then GNMT's penalty
                    score = score * length**penalty / gnmt_penalty(length, alpha)
                attention = None
                if keep_attention:
                    attention = np.asarray(result.attention[k], dtype=np.float32)  # (T_out, S)
                    if first is not None:
                        attention[0] = first[n].attention[0][0]
                nbest.append(Hypothesis(ids, score, attention))
            if alpha:
                nbest = sorted(nbest, key=lambda h: -h.score)[: decode.n_best]
            results.append(nbest)
        return results

    @classmethod
    def load(
        cls,
        folder: str | Path,
        config: Config,
        checkpoint: str = "best",
        device: str = "cpu",
        threads: int | None = None,
    ) -> CTranslate2Translator:
        """The model exported in ``folder`` (config: its config.yaml's, decode settings changed as
        asked); ``checkpoint`` must be the one exported (best is taken for whichever was);
        ``threads``: None for the config's train.threads (0: OMP_NUM_THREADS, else the cores)."""
        from ...data.pipeline import TextPipeline

        record = read_export(folder)
        exported = record["checkpoint"]
        if checkpoint not in ("best", exported):
            raise UserError(
                f"--checkpoint {checkpoint}: {folder} holds the weights of the run's {exported} checkpoint "
                f"(attnseq export RUN --checkpoint {checkpoint} exports the other)"
            )
        pipeline = TextPipeline.load(config.data, folder)
        # decode.precision int8 (--precision int8) computes in int8 whatever the export stores
        # (CTranslate2 quantises float32 weights as it loads them); fp32 computes as the export stores
        compute_type = {"int8": "int8", "bf16": "bfloat16"}.get(config.decode.precision, "default")
        if device == "cpu" and (compute_type == "int8" or record.get("quantization") == "int8"):
            has, why_not = int8_in_hardware()
            if not has:  # MKL's int8 products without VNNI saturate: CTranslate2's outputs come out wrong
                log.warning("int8: this CPU %s; CTranslate2 decodes the export in float32", why_not)
                compute_type = "float32"
        if compute_type == "bfloat16":
            from ...hardware import bf16_pays

            pays, why_not = bf16_pays(ctranslate2_device(device)[0])
            if not pays:
                log.warning("bf16: this %s %s; CTranslate2 decodes the export in float32", device, why_not)
                compute_type = "float32"
        translator = cls(
            folder, pipeline, config, device, config.train.threads if threads is None else threads, compute_type
        )
        kind = translator.model.compute_type
        translator.precision = "int8" if kind.startswith("int8") else "bf16" if kind == "bfloat16" else "fp32"
        return translator


def default_threads() -> int:
    """OMP_NUM_THREADS where it is a whole number above 0, else the cores this process may use."""
    return whole_number(os.environ.get("OMP_NUM_THREADS", "")) or usable_cpus()


def length_exponent(alpha: float, length: float) -> float:
    """The exponent p of CTranslate2's length penalty |Y| ** p that equals GNMT's ((5 + |Y|) / 6)
    ** alpha at |Y| = ``length`` (at least 2), near it for lengths around it: what ranks the
    hypotheses CTranslate2 keeps when more end at once than it returns (each is rescored with
    GNMT's penalty from its sum after the search; the search's own ranking is by sums)."""
    length = max(length, 2.0)
    return alpha * math.log((5.0 + length) / 6.0) / math.log(length)


def limit_bands(limits: list[int], spread: float = 1.25) -> list[list[int]]:
    """The indices of ``limits`` in bands whose largest limit is at most ``spread`` times their
    smallest: what one greedy search covers, so that a sentence that never ends runs at most
    that much past its own limit before it is cut."""
    bands: list[list[int]] = []
    for i in sorted(range(len(limits)), key=lambda i: limits[i]):
        if bands and limits[i] <= spread * limits[bands[-1][0]]:
            bands[-1].append(i)
        else:
            bands.append([i])
    return bands
