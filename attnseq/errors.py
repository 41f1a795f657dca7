"""Errors that mean "the user asked for something wrong", reported as one line by the CLI."""

from __future__ import annotations


class UserError(Exception):
    """An error caused by the user's input (config, data, arguments), not by a bug."""


class ConfigError(UserError):
    """An invalid configuration: the message names the key and the allowed values.

    ``key`` is the dotted config key at fault (``"decode.beam_size"``), or None where no single
    key is (a whole file); callers such as the server read the field from it, not the message.
    """

    def __init__(self, message: str, *, key: str | None = None):
        super().__init__(message)
        self.key = key


class DataError(UserError):
    """A malformed data file: the message names the file and the line."""
