"""Attention as the reading of a memory: end-to-end memory networks (``memn2n``), the Neural
Turing Machine (``ntm``) and hierarchical attention networks (``han``), each an architecture
behind the Seq2Seq model and the decoder step protocol. Importing the package registers them."""

from . import han, memn2n, ntm  # noqa: F401  (fill the registries)
