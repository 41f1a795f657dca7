"""The Transformer (Vaswani et al. 2017): positional encodings, layers, and the ``transformer``
architecture behind the decoder step protocol. Importing the package registers them."""

from . import layers, model, positional  # noqa: F401  (fill the registries)
