"""Papermill parameters are checked against their notebook's `parameters` cell before anything is written: a value
of the wrong shape is named with the notebook, the parameter, the type it takes and what it got."""

from __future__ import annotations

import ast
import json
import math

import pytest
from nbformat.v4 import new_code_cell, new_notebook

from toporag_lib.settings import ConfigError
from toporag_lib.study import profiles, reproduce
from toporag_lib.study.notebook_parameters import (
    check_namespace,
    check_parameters,
    parameter_types,
    parameters_source,
)


def write_notebook(path, *sources):
    import nbformat

    nb = new_notebook(cells=[new_code_cell(s) for s in sources])
    nb.cells[0].metadata["tags"] = ["parameters"]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, path)
    return path


@pytest.mark.parametrize("parameters, message", [
    ({"methods": "TopoRAG"}, r"04_training\.ipynb: parameter 'methods' takes list\[str\], got str 'TopoRAG'; "
                             r"papermill's -p passes text: give lists and mappings as YAML with -y"),
    ({"limits": [80, 20, 60]}, r"parameter 'limits' takes dict\[str, int \| None\], got list \[80, 20, 60\]"),
    ({"limits": {"train": "all"}}, r"parameter 'limits' takes .*\(limits\.train: expected int, got 'all'\)"),
    ({"epochs": "3"}, r"parameter 'epochs' takes int, got str '3'"),
    ({"epochs": 2.0}, r"parameter 'epochs' takes int, got float 2\.0"),
    ({"datasets": ["explagraphs", 3]}, r"parameter 'datasets' takes list\[str\], .*\(datasets\[1\]: expected str"),
    ({"training": {"lr": math.nan}}, r"parameter 'training' takes dict, .*training\.lr: expected a finite number"),
    ({"epoch": 3}, r"04_training\.ipynb: no parameter\(s\) \['epoch'\]"),
])
def test_a_parameter_of_the_wrong_shape_is_named(parameters, message):
    with pytest.raises(ConfigError, match=message):
        check_parameters("04_training", parameters)


def test_the_types_come_from_annotations_or_defaults():
    types = parameter_types("06_efficiency")
    assert types["sizes"] == list[int] and types["pyg_limit_s"] is float and types["training"] is dict
    check_parameters("06_efficiency", {"preprocess_questions": None, "pyg_limit_s": 2, "sizes": [10, 20]})
    check_parameters("03_retrieval", {"encoder_path": "/models/roberta", "c2_values": [0, 0.5]})
    with pytest.raises(ConfigError, match=r"03_retrieval\.ipynb: parameter 'encoder_path' takes str \| None"):
        check_parameters("03_retrieval", {"encoder_path": 3})


def test_every_notebook_gives_every_parameter_a_type_and_checks_them_first(tmp_path):
    for path in reproduce.numbered_notebooks():
        types = parameter_types(path)  # a default without a type (None) is refused: it needs an annotation
        assert types, path.name
        cells = json.loads(path.read_text())["cells"]
        at = next(i for i, c in enumerate(cells) if "parameters" in c["metadata"].get("tags", []))
        first = ast.parse("".join(cells[at + 1]["source"])).body
        call = first[1].value  # after its import: check_namespace("<this notebook>", globals())
        assert isinstance(call, ast.Call) and call.func.id == "check_namespace", path.name
        assert ast.literal_eval(call.args[0]) == path.stem, path.name
        namespace = {}
        exec(parameters_source(path), namespace)  # the cell's own defaults pass its own check
        check_namespace(path, namespace)
    undeclared = write_notebook(tmp_path / "01_x.ipynb", "root = None")
    with pytest.raises(ConfigError, match=r"01_x\.ipynb: parameter 'root' = None needs an annotation"):
        parameter_types(undeclared)


def test_reproduce_refuses_a_wrong_shape_before_any_notebook_runs_or_anything_is_written(tmp_path, isolated_cache,
                                                                                          monkeypatch):
    first = write_notebook(tmp_path / "01_first.ipynb", "x = 1",
                           "import os, pathlib; pathlib.Path(os.environ['TOPORAG_RESULTS'], 'ran.txt').write_text('1')")
    second = write_notebook(tmp_path / "02_second.ipynb", "methods = ['TopoRAG']", "print(methods)")
    monkeypatch.setitem(profiles.PROFILES, "cpu-quick", {"02_second": {"methods": "TopoRAG"}})
    with pytest.raises(ConfigError, match=r"02_second\.ipynb: parameter 'methods' takes list\[str\], got str"):
        reproduce.reproduce("cpu-quick", notebooks=[first, second])
    results = isolated_cache / "results"
    assert not results.exists() or not any(results.rglob("*"))  # no notebook, no fingerprint, no result
