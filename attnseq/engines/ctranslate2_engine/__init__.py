"""``engine: ctranslate2``: Transformer runs exported with ``attnseq export RUN --to ctranslate2``
(attnseq/export/ctranslate2_spec.py), decoded by CTranslate2 (attnseq/engines/ctranslate2_engine/translator.py).
It trains nothing (an Engine, not a TrainingEngine); an exported folder's config.yaml names it, so loading the folder builds its
Translator, and ``load_from`` decodes a torch run through it, exported on the fly."""

from __future__ import annotations

import dataclasses
import tempfile
from pathlib import Path

from ..base import ENGINES, Engine


@ENGINES.register("ctranslate2")
class CTranslate2Engine(Engine):
    """CTranslate2's greedy and beam search of an exported Transformer, float32 or int8."""

    decodes_only = (
        "decodes Transformer runs exported from the torch engine (attnseq export RUN --to ctranslate2); "
        "train with engine: torch"
    )

    def load(self, run_dir, config, checkpoint="best", device="cpu"):
        from .translator import CTranslate2Translator

        return CTranslate2Translator.load(run_dir, config, checkpoint, device)

    def load_from(self, run_dir, config, checkpoint="best", device="cpu"):
        """The torch run ``run_dir`` exported (float32) into a temporary folder, loaded, and the
        folder removed (CTranslate2 and the tokenizers hold what they read)."""
        from ...export.ctranslate2_spec import export_ctranslate2

        with tempfile.TemporaryDirectory(prefix="attnseq-ctranslate2-") as tmp:
            folder = export_ctranslate2(run_dir, Path(tmp) / "model", checkpoint=checkpoint)
            return self.load(folder, dataclasses.replace(config, engine="ctranslate2"), "best", device)
