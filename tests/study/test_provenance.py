"""The table of where each testbed default comes from reads its values from the code, and says validation."""

from __future__ import annotations

import json

from toporag_lib.data.registry import TESTBED_V3_RETRIEVAL
from toporag_lib.paths import PROJECT_ROOT
from toporag_lib.study import provenance


def test_every_default_names_its_value_its_split_and_a_file_notebook_03_writes():
    table = provenance.default_choices().set_index("default")
    v3 = table.loc["testbed v3 retrieval"]
    assert all(f"{k} = {v}" in v3.value for k, v in TESTBED_V3_RETRIEVAL.items())
    assert table["chosen on"].str.startswith("validation").all()
    notebook = json.loads((PROJECT_ROOT / "notebooks" / "03_retrieval.ipynb").read_text())
    code = "".join("".join(c["source"]) for c in notebook["cells"])
    named = {word.strip(",;:()") for text in table.evidence for word in text.split() if word.startswith("03_")}
    assert named and all(name in code for name in named)  # each file it cites is one notebook 03 writes
