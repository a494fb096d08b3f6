"""The error for malformed dataset content, and the checks every loader shares.

A loader refuses what it cannot read as meant instead of coercing it: a string where a list belongs is not split
into letters, a `null` name is not printed as "None", a float node id is not truncated. It raises
`DatasetFormatError` at load time, before any embedding or lifting, naming the file, the record (row, image,
graph) and the field.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from numbers import Integral, Real
from typing import Any


class DatasetFormatError(ValueError):
    """Dataset content that is malformed: the message names the file, the record (row, image, graph) and the field."""


def shown(value: Any, limit: int = 60) -> str:
    """`value` for a message: its type and a cut repr."""
    text = repr(value)
    return f"{type(value).__name__} {text[:limit]}{'...' if len(text) > limit else ''}"


def named(value: Any) -> str:
    """An id (record, image, object) for a message: as is, or its repr when it is not UTF-8 text (a message that
    holds a lone surrogate cannot itself be printed)."""
    return value if isinstance(value, str) and unencodable(value) is None else repr(value)


def unencodable(text: str) -> str | None:
    """Why `text` is not UTF-8 text (a lone surrogate, which JSON's `\\ud800` escapes carry), or None if it is."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as err:
        return f"{err.reason} at character {err.start} ({text[err.start]!r})"
    return None


def check_text(value: Any, where: str, field: str) -> str:
    """`value` if it is a string UTF-8 can encode; else a DatasetFormatError naming `where` and `field`."""
    if not isinstance(value, str):
        raise DatasetFormatError(f"{where}: {field} is {shown(value)}, expected a string")
    reason = unencodable(value)
    if reason:
        raise DatasetFormatError(f"{where}: {field} {value[:60]!r} is not UTF-8 text: {reason}")
    return value


def check_texts(values: Sequence[Any], where: str, field: Callable[[int], str]) -> None:
    """Each of `values` a string UTF-8 can encode, `field(i)` naming the i-th in a message. The encodings are
    checked all at once, one by one only to name a failure (a WebQSP graph's thousands of strings cost one encode)."""
    if all(type(v) is str for v in values):
        try:
            "".join(values).encode("utf-8")
            return
        except UnicodeEncodeError:
            pass
    for i, value in enumerate(values):
        check_text(value, where, field(i))


def is_int(value: Any) -> bool:
    """An integer (numpy's too), not a bool and not a float that happens to be whole."""
    return isinstance(value, Integral) and not isinstance(value, bool)


def is_number(value: Any) -> bool:
    """A real number (int or float, numpy's too), not a bool."""
    return isinstance(value, Real) and not isinstance(value, bool)
