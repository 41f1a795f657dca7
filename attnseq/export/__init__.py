"""A trained run made ready for another inference engine: ``attnseq export RUN --to FORMAT``.

- ``ctranslate2_spec.py``: CTranslate2 (OpenNMT's inference engine), its Transformer specification
  filled from a torch run's weights, with the vocabularies and the run's text pipeline; the
  folder decodes with ``attnseq translate``, ``evaluate``, ``serve`` and ``attnseq.load``
  (attnseq/engines/ctranslate2_engine/translator.py) as a run does.

Each format's module imports its engine only when it exports, so listing the formats is light.
"""

FORMATS = ("ctranslate2",)  # --to
QUANTIZATIONS = ("float32", "int8")  # --quantization (ctranslate2): the weights' types offered
