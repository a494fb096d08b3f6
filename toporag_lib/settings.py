"""Dataclass configs from JSON-like dicts, strictly: an unknown key at any depth, a value of the wrong type, or a
number that is not finite (NaN, infinity: refused at every depth, also where a field takes any value) is a
`ConfigError` that names the key (`TrainConfig.limits.trian`), before any work starts.

    values = merge(loads_config(text, "my.json"), parse_overrides(["epochs=1", "retrieval.k2=0"]))
    config = from_dict(TrainConfig, values)

`loads_config` reads JSON strictly: a key given twice in one object (which `json.loads` resolves silently by
keeping the last) is refused with the file and the key. `merge` updates nested dicts key by key, so
`retrieval.k2=0` changes that key alone.
"""

from __future__ import annotations

import dataclasses
import json
import math
import types
import typing
from typing import Any, TypeVar, Union

T = TypeVar("T")


class ConfigError(ValueError):
    """A config key that does not exist (or is given twice), or a value of the wrong type or out of range; the
    message names the key, and the file when the config was read from one."""


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
        check_finite(value, where)
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
        errors = list(dict.fromkeys(errors))  # the options' checks may agree (a NaN inside a mapping, say)
        deeper = [e for e in errors if e.startswith((f"{where}.", f"{where}["))]  # about one of its keys
        raise ConfigError(errors[0] if len(errors) == 1 else deeper[0] if deeper
                          else f"{where}: {value!r} fits none of {kind}")
    if origin is list or kind is list:
        if not isinstance(value, (list, tuple)):
            raise ConfigError(f"{where}: expected a list, got {value!r}")
        return [convert(args[0] if args else Any, v, f"{where}[{i}]") for i, v in enumerate(value)]
    if origin is dict or kind is dict:
        if not isinstance(value, dict):
            raise ConfigError(f"{where}: expected a mapping, got {value!r}")
        return {k: convert(args[1] if args else Any, v, f"{where}.{k}") for k, v in value.items()}
    if kind is float and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    if kind in (bool, int, float, str):
        if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
            raise ConfigError(f"{where}: expected {kind.__name__}, got {value!r}")
        if kind is float and not math.isfinite(value):
            raise ConfigError(f"{where}: expected a finite number, got {value!r}")
        return value
    if isinstance(kind, type) and isinstance(value, kind):
        return value  # e.g. a Path given in code where a loader takes `str | Path`
    raise ConfigError(f"{where}: cannot check a value against {kind}")


def check_finite(value: Any, where: str) -> None:
    """Refuse NaN and infinities anywhere in `value` (nested dicts and lists included), naming where."""
    if isinstance(value, float) and not math.isfinite(value):
        raise ConfigError(f"{where}: expected a finite number, got {value!r}")
    if isinstance(value, dict):
        for key, item in value.items():
            check_finite(item, f"{where}.{key}")
    elif isinstance(value, (list, tuple)):
        for i, item in enumerate(value):
            check_finite(item, f"{where}[{i}]")


class _Object(dict):
    """A JSON object as parsed by `loads_config`: the keys it held more than once."""

    repeated: list[str]


def _pairs_to_object(pairs: list[tuple[str, Any]]) -> _Object:
    obj = _Object()
    obj.repeated = []
    for key, value in pairs:
        if key in obj and key not in obj.repeated:
            obj.repeated.append(key)
        obj[key] = value
    return obj


def _plain(value: Any, path: str, where: str) -> Any:
    """`value` with every `_Object` a plain dict, after refusing the first key repeated in one (by its path)."""
    if isinstance(value, _Object):
        if value.repeated:
            key = f"{path}.{value.repeated[0]}" if path else value.repeated[0]
            raise ConfigError(f"{where}: key {key!r} is given more than once in one object (JSON would keep the "
                              "last one silently); give it once")
        return {k: _plain(v, f"{path}.{k}" if path else k, where) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v, f"{path}[{i}]", where) for i, v in enumerate(value)]
    return value


def loads_config(text: str, where: str) -> dict[str, Any]:
    """The JSON object in `text` (read from `where`, e.g. a file's path), strictly: not valid JSON, not an object,
    or a key given twice in one object is a ConfigError naming `where` (and the key)."""
    try:
        values = json.loads(text, object_pairs_hook=_pairs_to_object)
    except json.JSONDecodeError as err:
        raise ConfigError(f"{where} is not valid JSON: {err}") from None
    values = _plain(values, "", where)
    if not isinstance(values, dict):
        raise ConfigError(f"{where}: expected a JSON object of config fields, got {type(values).__name__}")
    return values


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
            value = _plain(json.loads(raw, object_pairs_hook=_pairs_to_object), key, f"override {pair!r}")
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
