"""Typed settings from plain values: what config sections and every variant's options share.

A settings class is a dataclass. ``build(cls, values, "model.")`` checks every key and value
of a dict against it and returns an instance; an unknown key, a value of the wrong type, a
value out of range or an unknown choice raises a ConfigError whose message names the key
(``model.attention.window``) and what it accepts.

Field helpers carry the checks in the field's metadata: ``choice`` (one of a few strings),
``number`` (a range), ``variant`` (a registered variant by name, with options of its own) and
``tagged`` (a section whose dataclass is chosen by one of its keys, e.g. ``model.arch``).
"""

from __future__ import annotations

import dataclasses
import math
import types
import typing
from dataclasses import dataclass, field
from typing import Any

from .errors import ConfigError

MISSING = dataclasses.MISSING


class OptionsError(ConfigError):
    """Raised by a settings dataclass's ``__post_init__`` when its options do not go together
    (``model.attention.width`` even where filters are centred): ``option`` is the field at fault,
    and ``build`` names it with the section's key (``model.attention.head.width`` inside a head),
    so the check is made when the config is read, before any data or model."""

    def __init__(self, option: str, reason: str):
        super().__init__(f"{option}: {reason}", key=option)
        self.option, self.reason = option, reason


@dataclass(frozen=True)
class Variant:
    """A registered variant and its own options: ``attention: {name: local_p, window: 5}``,
    or in short form ``attention: general`` (no options given)."""

    name: str
    options: dict[str, Any] = field(default_factory=dict)

    def plain(self) -> str | dict[str, Any]:
        """The YAML form: the name alone when no options are given."""
        return {"name": self.name, **self.options} if self.options else self.name


def choice(default: str, choices: Any, help: str = "", booleans: bool = False, false_means: str | None = None) -> Any:
    """A string field limited to ``choices``: a tuple of strings, or a registry's names.
    ``booleans``: true and false are taken too (a setting that was a flag before it named its
    choices): false is read as the choice ``false_means`` when it names one, so a config written
    before reads as one written today; true is kept as it is (its reader says what it meant)."""
    return field(
        default=default, metadata={"choices": choices, "help": help, "booleans": booleans, "false_means": false_means}
    )


def number(
    default: float, low: float | None = None, high: float | None = None, low_open: bool = False, high_open: bool = False
) -> Any:
    """A number field limited to [low, high] (``low_open``/``high_open`` exclude the ends)."""
    return field(default=default, metadata={"range": (low, high, low_open, high_open)})


def variant(default: str | None, registry: Any = None) -> Any:
    """A variant field: a name, or a mapping with ``name`` and that variant's options.

    With a ``registry`` the name and options are checked against it here, and the options are
    stored with their defaults filled in; without one (variants implemented by an engine) they
    are checked when the engine resolves the config. A mapping without ``name`` keeps the
    default's name, so ``--set model.encoder.bidirectional=false`` works on the default encoder.
    """
    make = (lambda: None) if default is None else (lambda: Variant(default))
    return field(default_factory=make, metadata={"variant": registry, "default_name": default})


def tagged(default: type, tag: str, classes: dict[str, type]) -> Any:
    """A section whose dataclass is ``classes[values[tag]]`` (``model.arch`` chooses the model's)."""
    return field(default_factory=default, metadata={"tag": tag, "classes": classes, "default": default})


# -- checking values --------------------------------------------------------------------------
# the range of a number field that names none (``number``): a count, a size, an amount of time
COUNT = (0, None, False, False)


def _check_range(key: str, value: float, spec: tuple) -> None:
    low, high, low_open, high_open = spec
    if isinstance(value, float) and math.isnan(value):
        raise ConfigError(f"{key}: expected a number, got nan", key=key)
    too_low = low is not None and (value <= low if low_open else value < low)
    too_high = high is not None and (value >= high if high_open else value > high)
    if too_low or too_high:
        shown = lambda x: str(x) if isinstance(x, int) else f"{x:g}"  # noqa: E731  (2**32 - 1 in full)
        left = "" if low is None else ("(" if low_open else "[") + shown(low)
        right = "" if high is None else shown(high) + (")" if high_open else "]")
        if low is not None and high is not None:
            wanted = f"a value in {left}, {right}"
        elif low is not None:
            wanted = f"a value {'>' if low_open else '>='} {shown(low)}"
        else:
            wanted = f"a value {'<' if high_open else '<='} {shown(high)}"
        raise ConfigError(f"{key}: expected {wanted}, got {shown(value)}", key=key)


def variant_of(key: str, value: Any, default_name: str | None = None) -> Variant:
    """The variant ``value`` names in its YAML form (a name, or a mapping with a name, else
    ``default_name``), unchecked against any registry; a malformed one is refused naming ``key``."""
    if isinstance(value, Variant):
        value = value.plain()
    if isinstance(value, str) and value:
        return Variant(value, {})
    if isinstance(value, dict):
        options = dict(value)
        name = options.pop("name", default_name)
        if not isinstance(name, str) or not name:
            raise ConfigError(f"{key}: give the variant's name (e.g. {key}: {{name: ..., ...}})", key=key)
        return Variant(name, options)
    raise ConfigError(f"{key}: expected a name or a mapping with a name, got {value!r}", key=key)


def _variant(key: str, value: Any, meta: dict) -> Variant:
    found = variant_of(key, value, meta.get("default_name"))
    registry = meta.get("variant")
    return found if registry is None else registry.resolve(found, key)


def convert(key: str, hint: Any, value: Any, meta: dict | None = None) -> Any:
    """``value`` checked against the field type ``hint`` (and its metadata) and converted."""
    meta = meta or {}
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(hint) if a is not type(None)]
        if value is None:
            return None
        hint, origin = args[0], typing.get_origin(args[0])
    if "tag" in meta:
        return _tagged(key, value, meta)
    if dataclasses.is_dataclass(hint) and hint is not Variant:
        if not isinstance(value, dict):
            raise ConfigError(f"{key}: expected a mapping of settings, got {value!r}", key=key)
        return build(hint, value, key + ".")
    if hint is Variant:
        return _variant(key, value, meta)
    if origin is tuple:
        args = typing.get_args(hint)
        if len(args) == 2 and args[1] is Ellipsis:  # tuple[int, ...]: a list of any length but none
            if not isinstance(value, (list, tuple)) or not value:
                raise ConfigError(f"{key}: expected a list of one or more numbers, got {value!r}", key=key)
            args = (args[0],) * len(value)
        if not isinstance(value, (list, tuple)) or len(value) != len(args):
            raise ConfigError(f"{key}: expected a list of {len(args)} numbers, got {value!r}", key=key)
        return tuple(convert(f"{key}[{i}]", a, v, meta) for i, (a, v) in enumerate(zip(args, value)))
    if hint is bool:
        if isinstance(value, bool):
            return value
        raise ConfigError(f"{key}: expected true or false, got {value!r}", key=key)
    if hint is int:
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        if not isinstance(value, int) or isinstance(value, bool):
            raise ConfigError(f"{key}: expected a whole number, got {value!r}", key=key)
    elif hint is float:
        if isinstance(value, str):  # YAML 1.1 reads "3e-4" (no dot) as a string
            try:
                value = float(value)
            except ValueError:
                pass
        if not isinstance(value, (int, float)) or isinstance(value, bool):
            raise ConfigError(f"{key}: expected a number, got {value!r}", key=key)
        value = float(value)
        if math.isinf(value):
            raise ConfigError(f"{key}: expected a finite number, got {value}", key=key)
    elif hint is str:
        if isinstance(value, bool) and meta.get("booleans"):
            return meta["false_means"] if value is False and meta.get("false_means") else value
        if value is None:
            value = ""
        if not isinstance(value, (str, int, float)) or isinstance(value, bool):
            raise ConfigError(f"{key}: expected a string, got {value!r}", key=key)
        value = str(value)
        if "choices" in meta:
            allowed = meta["choices"]
            allowed = tuple(allowed.names()) if hasattr(allowed, "names") else allowed
            if value not in allowed:
                raise ConfigError(f"{key}: unknown value {value!r}; choose one of {', '.join(allowed)}", key=key)
        return value
    else:
        raise TypeError(f"unsupported settings type {hint!r} for {key}")
    _check_range(key, value, meta.get("range", COUNT))
    return value


def _tagged(key: str, value: Any, meta: dict) -> Any:
    if dataclasses.is_dataclass(value):
        value = plain(value)
    if not isinstance(value, dict):
        raise ConfigError(f"{key}: expected a mapping of settings, got {value!r}", key=key)
    tag, classes = meta["tag"], meta["classes"]
    name = value.get(tag, getattr(meta["default"](), tag))
    if not isinstance(name, str) or name not in classes:  # a list or a mapping is no name
        raise ConfigError(
            f"{key}.{tag}: unknown value {name!r}; choose one of {', '.join(classes)}", key=f"{key}.{tag}"
        )
    return build(classes[name], value, key + ".")


def build(cls: type, values: dict[str, Any], prefix: str = "") -> Any:
    """An instance of the dataclass ``cls`` from ``values``, every key and value checked;
    ``prefix`` ("model.") names the keys in errors."""
    hints = typing.get_type_hints(cls)
    fields = {f.name: f for f in dataclasses.fields(cls)}
    kwargs = {}
    for name, value in values.items():
        if name not in fields:
            where = prefix.rstrip(".") or "the top level"
            takes = ", ".join(fields) if fields else "no settings"
            raise ConfigError(f"{prefix}{name}: unknown key; {where} takes {takes}", key=prefix + name)
        kwargs[name] = convert(prefix + name, hints[name], value, dict(fields[name].metadata))
    try:
        obj = cls(**kwargs)
    except OptionsError as err:  # the options' own check across fields, named with the section's key
        raise ConfigError(f"{prefix}{err.option}: {err.reason}", key=prefix + err.option) from None
    for name, f in fields.items():  # defaults that name registered variants are checked too
        if name not in kwargs and f.metadata.get("variant") is not None and getattr(obj, name) is not None:
            setattr(obj, name, convert(prefix + name, hints[name], getattr(obj, name), dict(f.metadata)))
    return obj


def plain(value: Any) -> Any:
    """Dataclasses, variants and tuples as plain dicts, names and lists (what YAML writes)."""
    if isinstance(value, Variant):
        return value.plain()
    if dataclasses.is_dataclass(value):
        return {f.name: plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    return value
