"""Errors that mean "the user asked for something wrong", reported as one line by the CLI."""
from __future__ import annotations


class UserError(Exception):
    """An error caused by the user's input (config, data, arguments), not by a bug."""


class ConfigError(UserError):
    """An invalid configuration: the message names the key and the allowed values."""


class DataError(UserError):
    """A malformed data file: the message names the file and the line."""
