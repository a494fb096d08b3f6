"""The numbered notebooks' parameters, checked against their `parameters` cells before anything is written.

Each parameter's type is its annotation in the cell (`max_graphs: int | None = None`) or, without one, the type of
its default: `epochs = 1` takes an int, `methods = ["zero-shot", "TopoRAG"]` a list of texts, `limits = {...}` a
mapping; a float takes an int too. A value of another shape is a `ConfigError` naming the notebook, the parameter,
the type it takes and what it got, e.g. `papermill ... -p methods TopoRAG` (papermill's `-p` passes text: lists and
mappings go with `-y`). The reproduce driver checks every notebook's parameters before the first one runs
(`reproduce.reproduce`), and each notebook checks its own first thing after its parameters (`check_namespace`),
so that a direct papermill run is refused before it writes under results/ too.

    check_parameters("04_training", {"methods": "TopoRAG"})
    ConfigError: 04_training.ipynb: parameter 'methods' takes list[str], got str 'TopoRAG' ...
"""

from __future__ import annotations

import ast
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from toporag_lib.paths import PROJECT_ROOT
from toporag_lib.settings import ConfigError, convert

NOTEBOOK_DIR = PROJECT_ROOT / "notebooks"
# What an annotation in a parameters cell may name.
ANNOTATION_NAMES: dict[str, Any] = {"int": int, "float": float, "str": str, "bool": bool, "list": list, "dict": dict,
                                    "None": None, "Any": Any}
SCALARS = (bool, int, float, str)


def notebook_path(notebook: str | Path) -> Path:
    """A notebook's file: a path as given, or a stem such as "04_training" in `notebooks/`."""
    path = Path(notebook)
    return path if path.suffix == ".ipynb" else NOTEBOOK_DIR / f"{path.name}.ipynb"


def parameters_source(path: Path) -> str:
    """The source of the notebook's cell tagged `parameters` ("" when it has none)."""
    cells = json.loads(path.read_text())["cells"]
    for cell in cells:
        if "parameters" in cell.get("metadata", {}).get("tags", []):
            source = cell["source"]
            return "".join(source) if isinstance(source, list) else source
    return ""


def default_type(default: Any) -> Any:
    """The type a parameter takes when its cell gives it no annotation: its default's (None has none)."""
    if isinstance(default, SCALARS):
        return type(default)
    if isinstance(default, list):
        kinds = {type(item) for item in default}
        if kinds and kinds <= {int, float}:
            return list[float] if float in kinds else list[int]
        if len(kinds) == 1 and kinds <= set(SCALARS):
            return list[kinds.pop()]
        return list
    if isinstance(default, dict):
        return dict
    raise TypeError(f"no type follows from the default {default!r}")


def parameter_types(notebook: str | Path) -> dict[str, Any]:
    """Each parameter of the notebook's `parameters` cell, by name, with the type it takes."""
    path = notebook_path(notebook)
    types: dict[str, Any] = {}
    for node in ast.parse(parameters_source(path)).body:
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            try:
                types[node.target.id] = eval(compile(ast.Expression(node.annotation), str(path), "eval"),  # noqa: S307
                                             {"__builtins__": {}}, dict(ANNOTATION_NAMES))
            except Exception as err:  # noqa: BLE001 - named below
                raise ConfigError(f"{path.name}: parameter {node.target.id!r} has an annotation this check cannot "
                                  f"read ({ast.unparse(node.annotation)}: {err}); use int, float, str, bool, "
                                  "list[...], dict[...] and | None") from None
        elif isinstance(node, ast.Assign):
            for target in node.targets:
                if not isinstance(target, ast.Name):
                    continue
                try:
                    types[target.id] = default_type(ast.literal_eval(node.value))
                except (ValueError, TypeError, SyntaxError):
                    raise ConfigError(f"{path.name}: parameter {target.id!r} = {ast.unparse(node.value)} needs an "
                                      f"annotation (e.g. `{target.id}: str | None = ...`) to say what it takes") \
                        from None
    return types


def type_name(kind: Any) -> str:
    return kind.__name__ if isinstance(kind, type) else str(kind).replace("typing.", "")


def check_value(notebook: str, name: str, kind: Any, value: Any) -> None:
    """`value` fits `kind`, else a ConfigError naming the notebook, the parameter, its type and the value."""
    try:
        convert(kind, value, name)
    except ConfigError as err:
        detail = str(err)
        message = f"{notebook}: parameter {name!r} takes {type_name(kind)}, got {type(value).__name__} {value!r}"
        if detail.startswith((f"{name}.", f"{name}[")) or "finite" in detail:
            message += f" ({detail})"
        if isinstance(value, str) and (kind in (list, dict) or getattr(kind, "__origin__", None) in (list, dict)):
            message += (f"; papermill's -p passes text: give lists and mappings as YAML with -y, e.g. "
                        f"-y '{name}: [...]'")
        raise ConfigError(message) from None


def check_parameters(notebook: str | Path, parameters: Mapping[str, Any]) -> None:
    """Every name in `parameters` is one of the notebook's parameters, and each value has the type it takes."""
    path = notebook_path(notebook)
    types = parameter_types(path)
    unknown = sorted(set(parameters) - set(types))
    if unknown:
        raise ConfigError(f"{path.name}: no parameter(s) {unknown} (papermill would add them unread); its "
                          f"parameters: {list(types)}")
    for name, value in parameters.items():
        check_value(path.name, name, types[name], value)


def check_namespace(notebook: str | Path, namespace: Mapping[str, Any]) -> None:
    """In a notebook, right after its parameters (papermill's injected ones included): each parameter's value, as it
    now stands in `namespace` (the notebook's `globals()`), has the type its `parameters` cell gives it."""
    path = notebook_path(notebook)
    for name, kind in parameter_types(path).items():
        if name in namespace:
            check_value(path.name, name, kind, namespace[name])
