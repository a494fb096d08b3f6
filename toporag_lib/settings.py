"""Dataclass configs from JSON-like dicts, strictly: an unknown key at any depth, or a value of the wrong type, is a
`ConfigError` that names the key (`TrainConfig.limits.trian`), before any work starts.

    config = from_dict(TrainConfig, merge(json.loads(text), parse_overrides(["epochs=1", "retrieval.k2=0"])))

`merge` updates nested dicts key by key, so `retrieval.k2=0` changes that key alone.
"""

from __future__ import annotations

import dataclasses
import json
import types
import typing
from typing import Any, TypeVar, Union

T = TypeVar("T")


class ConfigError(ValueError):
    """A config key that does not exist, or a value of the wrong type; the message names the key."""


def from_dict(cls: type[T], values: Any, where: str | None = None) -> T:
    """An instance of the dataclass `cls` from `values` (a dict, or already an instance), checked at every depth."""
    where = where or cls.__name__
    if isinstance(values, cls):
        return values
    if not isinstance(values, dict):
        raise ConfigError(f"{where}: expected a mapping of {cls.__name__} fields, got {values!r}")
    known = [f.name for f in dataclasses.fields(cls) if f.init]
    unknown = sorted(set(values) - set(known))
    if unknown:
        raise ConfigError(f"{where}: unknown key(s) {unknown}; known: {known}")
    hints = typing.get_type_hints(cls)
    return cls(**{key: convert(hints[key], value, f"{where}.{key}") for key, value in values.items()})


def convert(kind: Any, value: Any, where: str) -> Any:
    """`value` checked against the type annotation `kind` (dataclasses built, ints accepted as floats)."""
    origin, args = typing.get_origin(kind), typing.get_args(kind)
    if kind is Any:
        return value
    if dataclasses.is_dataclass(kind):
        return from_dict(kind, value, where)
    if origin in (Union, types.UnionType):
        if value is None and type(None) in args:
            return None
        errors = []
        for option in (a for a in args if a is not type(None)):
            try:
                return convert(option, value, where)
            except ConfigError as err:
                errors.append(str(err))
        raise ConfigError(errors[0] if len(errors) == 1 else f"{where}: {value!r} fits none of {kind}")
    if origin is list or kind is list:
        if not isinstance(value, (list, tuple)):
            raise ConfigError(f"{where}: expected a list, got {value!r}")
        return [convert(args[0], v, f"{where}[{i}]") for i, v in enumerate(value)] if args else list(value)
    if origin is dict or kind is dict:
        if not isinstance(value, dict):
            raise ConfigError(f"{where}: expected a mapping, got {value!r}")
        return {k: convert(args[1], v, f"{where}.{k}") for k, v in value.items()} if args else dict(value)
    if kind is float and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    if kind in (bool, int, float, str):
        if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
            raise ConfigError(f"{where}: expected {kind.__name__}, got {value!r}")
        return value
    raise ConfigError(f"{where}: cannot check a value against {kind}")


def to_dict(config: Any) -> dict[str, Any]:
    """The config as plain JSON-ready values (nested dataclasses become dicts)."""
    return dataclasses.asdict(config)


def parse_overrides(pairs: list[str]) -> dict[str, Any]:
    """`key=value` pairs (values parsed as JSON when they parse, else kept as strings); `model.x=...` nests."""
    out: dict[str, Any] = {}
    for pair in pairs:
        key, sep, raw = pair.partition("=")
        if not sep or not key:
            raise ConfigError(f"override {pair!r}: expected key=value")
        try:
            value = json.loads(raw)
        except json.JSONDecodeError:
            value = raw
        target = out
        *parents, leaf = key.split(".")
        for parent in parents:
            target = target.setdefault(parent, {})
        target[leaf] = value
    return out


def merge(base: dict[str, Any], update: dict[str, Any]) -> dict[str, Any]:
    """`base` updated by `update`, nested dicts key by key."""
    merged = dict(base)
    for key, value in update.items():
        merged[key] = merge(merged[key], value) if isinstance(value, dict) and isinstance(merged.get(key), dict) \
            else value
    return merged
