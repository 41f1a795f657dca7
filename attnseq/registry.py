"""A small checked registry mapping config names to classes, each with its own options.

    @SCORERS.register("local_p", options=LocalPOptions)
    class LocalPredictiveScorer(LocalScorer): ...

A config names a variant as ``attention: local_p`` or ``attention: {name: local_p, window: 5}``;
``resolve`` checks the name and the options against the variant's options dataclass (an unknown
option is an error naming the key), and ``build`` constructs the class with ``options=`` that
dataclass. Unknown names raise a ConfigError listing the choices.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from .errors import ConfigError
from .schema import Variant, plain
from .schema import build as build_settings

T = TypeVar("T")


@dataclass
class NoOptions:
    """The options of a variant that has none."""


class Registry(Generic[T]):
    """Maps names used in configs to classes (or functions) and their options dataclasses.

    ``key`` is the config key whose variants an engine resolves from this registry when the
    config's field does not name it (``model.attention``: the torch engine's scorers), so every
    option of every variant can be found from the registries (``Registry.every``)."""

    every: list[Registry] = []  # every registry made, in the order their modules were imported

    def __init__(self, kind: str, key: str | None = None):
        self.kind = kind
        self.key = key
        self._entries: dict[str, T] = {}
        self._options: dict[str, type] = {}
        Registry.every.append(self)

    def register(self, name: str, options: type = NoOptions) -> Callable[[T], T]:
        """Decorator: ``@SCORERS.register("dot")``; ``options`` is the variant's options dataclass."""

        def add(obj: T) -> T:
            if name in self._entries:
                raise ValueError(f"{self.kind} {name!r} is registered twice")
            self._entries[name] = obj
            self._options[name] = options
            return obj

        return add

    def get(self, name: str, key: str | None = None) -> T:
        """The class registered as ``name``; ``key`` names the config key in the error."""
        try:
            return self._entries[name]
        except KeyError:
            where = f"{key}: " if key else ""
            raise ConfigError(
                f"{where}unknown {self.kind} {name!r}; choose one of {', '.join(self.names())}", key=key
            ) from None

    def options_class(self, name: str) -> type:
        """The options dataclass of ``name``."""
        self.get(name)
        return self._options[name]

    def options(self, variant: Variant | str, key: str) -> Any:
        """The options instance of ``variant`` (a Variant or a bare name), every option checked;
        errors name ``key.option``."""
        if isinstance(variant, str):
            variant = Variant(variant)
        self.get(variant.name, key)
        cls = self._options[variant.name]
        if cls is NoOptions and variant.options:
            option = next(iter(variant.options))
            raise ConfigError(
                f"{key}.{option}: unknown option; {self.kind} {variant.name!r} takes no options", key=f"{key}.{option}"
            )
        return build_settings(cls, variant.options, key + ".")

    def resolve(self, variant: Variant | str, key: str) -> Variant:
        """``variant`` checked, with every option of its dataclass written out (defaults filled)."""
        if isinstance(variant, str):
            variant = Variant(variant)
        return Variant(variant.name, plain(self.options(variant, key)))

    def build(self, variant: Variant | str, key: str, *args: Any, **kwargs: Any) -> Any:
        """``cls(*args, **kwargs, options=...)`` for the variant; ``key`` names it in errors."""
        name = variant if isinstance(variant, str) else variant.name
        options = self.options(variant, key)
        return self.get(name, key)(*args, **kwargs, options=options)

    def names(self) -> list[str]:
        return list(self._entries)

    def __contains__(self, name: object) -> bool:
        return name in self._entries

    def __iter__(self) -> Iterator[str]:
        return iter(self._entries)
