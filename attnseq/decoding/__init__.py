"""Decoding: greedy and beam search written once against the decoder step protocol (torch),
the decode settings of a request (options.py), what a search returns (common.py) and the
attention views of a hypothesis; the Translators that call them are in attnseq.translator."""
