"""The paper's methods and baselines as configurations of one model (no forks), and a runner for a table of them.

    table = run_methods("explagraphs", ["zero-shot", "G-Retriever", "TopoRAG"], runs_dir, limits={...})

Each preset is a partial `TrainConfig`; `retrieval` values are merged over the dataset's defaults (on ExplaGraphs
every graph-based method sees the whole graph, as G-Retriever does). Anything in `overrides` applies to every
method alike, so comparisons stay fair.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd

from toporag_lib.model import ModelConfig
from toporag_lib.retrieval import retrieval_defaults
from toporag_lib.train import TrainConfig, merge, run

COT = "\nLet's think step by step."
COT_BAG = "\nLet's construct a graph with the nodes and edges first."

PRESETS: dict[str, dict[str, Any]] = {
    "zero-shot": {"train": False, "model": {"encoder": None}},
    "zero-shot CoT": {"train": False, "model": {"encoder": None}, "question_suffix": COT, "max_new_tokens": 64},
    "CoT-BAG": {"train": False, "model": {"encoder": None}, "question_suffix": COT_BAG, "max_new_tokens": 64},
    "KAPING": {"train": False, "model": {"encoder": None}, "retrieval": {"method": "kaping", "k1": 5}},
    "prompt tuning": {"model": {"encoder": None, "virtual_tokens": 10}},
    "GraphToken": {"model": {"encoder": "gat"}, "graph_text": False, "retrieval": {"method": "gretriever"}},
    "G-Retriever": {"model": {"encoder": "gt"}, "retrieval": {"method": "gretriever"}},
    "G-Retriever + LoRA": {"model": {"encoder": "gt", "lora": True}, "retrieval": {"method": "gretriever"}},
    "LoRA (text only)": {"model": {"encoder": None, "lora": True}, "retrieval": {"method": "gretriever"}},
    "TopoRAG": {"model": {"encoder": "cellular"}, "retrieval": {"method": "toporag"}},
    "TopoRAG + LoRA": {"model": {"encoder": "cellular", "lora": True}, "retrieval": {"method": "toporag"}},
}


def method_config(method: str, dataset: str, overrides: dict[str, Any] | None = None) -> TrainConfig:
    """The TrainConfig of `method` on `dataset`, with `overrides` applied to it (and to every other method)."""
    if method not in PRESETS:
        raise ValueError(f"unknown method {method!r}; known: {sorted(PRESETS)}")
    preset = PRESETS[method]
    values = merge({"dataset": dataset}, {k: v for k, v in preset.items() if k != "retrieval"})
    values = merge(values, overrides or {})
    defaults = retrieval_defaults(dataset)
    if defaults["method"] == "whole_graph" and preset.get("retrieval", {}).get("method") != "kaping":
        values["retrieval"] = defaults  # ExplaGraphs: whole graph for every graph method, as G-Retriever does
    else:
        values["retrieval"] = {**defaults, **preset.get("retrieval", {})}
    model = {**ModelConfig().to_dict(), **values.get("model", {})}
    values["model"] = model
    return TrainConfig.from_dict(values)


def run_methods(dataset: str, methods: list[str], runs_dir: str | Path, overrides: dict[str, Any] | None = None,
                progress: bool = True) -> pd.DataFrame:
    """Run each method (resuming finished or interrupted runs) and return one row of metrics per method."""
    rows = []
    for method in methods:
        config = method_config(method, dataset, overrides)
        out = Path(runs_dir) / dataset / method.replace(" ", "_").replace("+", "plus")
        done = out / "metrics_test.json"
        same = done.exists() and json.loads((out / "config.json").read_text()) == config.to_dict()
        metrics = json.loads(done.read_text()) if same else run(config, out, progress)
        rows.append({"method": method, **{k: v for k, v in metrics.items() if k != "per_family"},
                     **{f"acc_{k}": v for k, v in metrics.get("per_family", {}).items()}, "run": str(out)})
    return pd.DataFrame(rows)
