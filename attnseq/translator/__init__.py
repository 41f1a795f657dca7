"""A trained model with its text pipeline, ready to translate: the base every engine's
translator shares (base.py), and the torch model's (torch_model.py, imported on its own so
that the NumPy engine never loads torch).

    import attnseq
    model = attnseq.load("runs/demo/run")
    model.translate(["september 27, 1994"])            # -> ["1994-09-27"]
    outputs, attention = model.translate([...], return_attention=True)
"""

from .base import Translation, Translator

__all__ = ["Translation", "Translator"]
