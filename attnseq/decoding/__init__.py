"""Decoding: greedy and beam search written once against the decoder step protocol (torch),
the decode settings of a request (options.py) and the torch engine's Translator."""
