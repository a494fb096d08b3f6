"""The paper's methods and baselines as configurations of one model (no forks), and a runner for a table of them.

    table = run_methods("explagraphs", ["zero-shot", "G-Retriever", "TopoRAG"], runs_dir, limits={...})

Each preset is a partial `TrainConfig` (sparse overrides of its defaults); `retrieval` values are merged over the
dataset's defaults (on ExplaGraphs every graph-based method sees the whole graph, as G-Retriever does, and only
`CELL_METHODS` keep its 2-cells, the cycle table of the text). Anything in
`overrides` applies to every method alike, so comparisons stay fair. Every run is recorded in the results ledger.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pandas as pd

from toporag_lib.data.registry import dataset_spec
from toporag_lib.paths import results_dir
from toporag_lib.retrieval.retrieval_config import dataset_retrieval
from toporag_lib.settings import merge
from toporag_lib.training.ledger import config_digest as digest_of
from toporag_lib.training.ledger import record_run
from toporag_lib.training.run_files import read_metrics
from toporag_lib.training.run_folder import claim_run_folder
from toporag_lib.training.train_config import TrainConfig
from toporag_lib.training.trainer import run

COT = "\nLet's think step by step."
COT_BAG = "\nLet's construct a graph with the nodes and edges first."

# Every row of the paper's Table 1, each with the input its own paper gives it. The LLM-only baselines (inference
# only, prompt tuning, LoRA on text) read G-Retriever's textual graph, as in G-Retriever's code, where every
# baseline reads the retrieved subgraph's text (on ExplaGraphs the whole graph); KAPING reads its top-k triples,
# ranked by the verbalised triple's similarity to the question; GraphToken encodes the whole graph and reads no graph
# text. "G-Retriever" runs at the paper's section 5.1 settings (TopoRAG's top-k and encoder depth); "G-Retriever
# (own code)" at G-Retriever's released defaults (4 layers; top-k edges per dataset in `OWN_CODE_RETRIEVAL`).
# `<dataset task>` in a preset is replaced by the dataset's task prompt (`DatasetSpec.task_prompt`).
TASK = "<dataset task>"
GRETRIEVER_INPUT = {"method": "gretriever"}
PRESETS: dict[str, dict[str, Any]] = {
    "zero-shot": {"train": False, "model": {"encoder": None}, "retrieval": GRETRIEVER_INPUT},
    "zero-shot CoT": {"train": False, "model": {"encoder": None}, "question_suffix": COT,
                      "retrieval": GRETRIEVER_INPUT},
    "CoT-BAG": {"train": False, "model": {"encoder": None}, "question_suffix": COT_BAG, "retrieval": GRETRIEVER_INPUT},
    "KAPING": {"train": False, "model": {"encoder": None}, "edge_text": "triple",
               "retrieval": {"method": "kaping", "k1": 5}},
    "prompt tuning": {"model": {"encoder": None, "virtual_tokens": 10, "virtual_init": TASK},
                      "retrieval": GRETRIEVER_INPUT},
    "GraphToken": {"model": {"encoder": "gat"}, "graph_text": False, "retrieval": {"method": "whole_graph"}},
    "G-Retriever": {"model": {"encoder": "gt"}, "retrieval": GRETRIEVER_INPUT},
    "G-Retriever + LoRA": {"model": {"encoder": "gt", "lora": True}, "retrieval": GRETRIEVER_INPUT},
    "G-Retriever (own code)": {"model": {"encoder": "gt", "num_layers": 4}, "edge_text": "relation",
                               "retrieval": GRETRIEVER_INPUT},
    "G-Retriever (own code) + LoRA": {"model": {"encoder": "gt", "num_layers": 4, "lora": True},
                                      "edge_text": "relation", "retrieval": GRETRIEVER_INPUT},
    "G-Retriever (PyG)": {"engine": "pyg", "model": {"encoder": "gat"}, "retrieval": GRETRIEVER_INPUT},
    "G-Retriever (PyG) + LoRA": {"engine": "pyg", "model": {"encoder": "gat", "lora": True},
                                 "retrieval": GRETRIEVER_INPUT},
    "LoRA (text only)": {"model": {"encoder": None, "lora": True}, "retrieval": GRETRIEVER_INPUT},
    # Adapted to our datasets (retrieval.baselines.fitted.subgraphrag, retrieval.baselines.fitted.gnnrag), each retriever fitted on the training split:
    # SubgraphRAG's frozen LLM reads its top-K triples, GNN-RAG's LoRA-tuned LLM the shortest paths from the
    # question's entities to its GNN's best answer candidates.
    "SubgraphRAG": {"train": False, "model": {"encoder": None}, "edge_text": "triple",
                    "retrieval": {"method": "subgraphrag"}},
    "GNN-RAG": {"model": {"encoder": None, "lora": True}, "retrieval": {"method": "gnnrag"}},
    "TopoRAG": {"model": {"encoder": "cellular"}, "retrieval": {"method": "toporag"}},
    "TopoRAG + LoRA": {"model": {"encoder": "cellular", "lora": True}, "retrieval": {"method": "toporag"}},
}

# G-Retriever's released preprocessing: topk = 3 nodes, topk_e = 5 edges on WebQSP and 3 on SceneGraphs, cost_e 0.5
# (the paper's section 5.1 gives the two top-k the other way round: that is the plain "G-Retriever" row).
_SCENES_OWN = {"k0": 3, "k1": 3, "cost_e": 0.5}
OWN_CODE_RETRIEVAL: dict[str, dict[str, Any]] = {
    "webqsp": {"k0": 3, "k1": 5, "cost_e": 0.5}, "scenegraphs": _SCENES_OWN, "gqa_fixtures": _SCENES_OWN,
    "synthetic_scenes": _SCENES_OWN,
}
OWN_RETRIEVALS = ("kaping", "subgraphrag", "gnnrag")  # methods that are their retrieval: kept on whole-graph datasets
DATASET_RETRIEVAL: dict[str, dict[str, dict[str, Any]]] = {  # per method, changes on one dataset
    "SubgraphRAG": {"webqsp": {"top_k": 100}},  # SubgraphRAG's K on WebQSP (our default 10 suits scene graphs)
    "G-Retriever (own code)": OWN_CODE_RETRIEVAL, "G-Retriever (own code) + LoRA": OWN_CODE_RETRIEVAL,
}

# The methods whose input holds 2-cells (the cellular encoder's cells and the text's cycle table); every other row
# reads the nodes and edges its own paper gives it, on every dataset.
CELL_METHODS = ("TopoRAG", "TopoRAG + LoRA")

# Rows that cannot be what their paper describes on a dataset, with the reason (Table 1 shows it in place of a score,
# and `long_runs` does not run them): ExplaGraphs has no answer entities, so the fitted retrievers have nothing to fit.
NOT_APPLICABLE: dict[tuple[str, str], str] = {
    ("SubgraphRAG", "explagraphs"): "no answer entities to fit its triple scorer on (it would be the frozen LLM "
                                    "reading the whole graph as triples)",
    ("GNN-RAG", "explagraphs"): "no answer entities to fit its GNN on (it would be LoRA on the whole graph's text: "
                                "the LoRA (text only) row)",
}

# Every row of the paper's Table 1, in its order, with G-Retriever at its code's settings beside its paper's.
TABLE1_METHODS = ["zero-shot", "zero-shot CoT", "CoT-BAG", "KAPING", "prompt tuning", "GraphToken", "G-Retriever",
                  "G-Retriever (own code)", "SubgraphRAG", "TopoRAG", "LoRA (text only)", "G-Retriever + LoRA",
                  "G-Retriever (own code) + LoRA", "GNN-RAG", "TopoRAG + LoRA"]


# Table 2 of the paper, as changes to TopoRAG: w/o CRL keeps the graph (no 2-cells are retrieved, so the cellular
# network runs on nodes and edges only), w/o TSR retrieves shortest paths, w/o MTR encodes with a GCN.
ABLATIONS: dict[str, dict[str, Any]] = {
    "TopoRAG": {},
    "w/o CRL (no 2-cells)": {"retrieval": {"k2": 0}},
    "w/o TSR (shortest path)": {"retrieval": {"method": "shortest_path"}},
    "w/o MTR (GCN)": {"model": {"encoder": "gcn"}},
}

# Table 5: the spanning tree that picks the fundamental cycles, plus our minimum cycle basis.
CYCLE_BASES: dict[str, dict[str, Any]] = {
    "BFS": {"lift": {"basis": "fundamental", "tree": "bfs"}},
    "DFS": {"lift": {"basis": "fundamental", "tree": "dfs"}},
    "random": {"lift": {"basis": "fundamental", "tree": "random"}},
    "minimum basis": {"lift": {"basis": "minimum"}},
}


def method_config(method: str, dataset: str, overrides: dict[str, Any] | None = None) -> TrainConfig:
    """The TrainConfig of `method` on `dataset`, with `overrides` applied to it (and to every other method).

    Retrieval is the dataset's defaults, then the method's, then any `retrieval` in `overrides`.
    """
    if method not in PRESETS:
        raise ValueError(f"unknown method {method!r}; known: {sorted(PRESETS)}")
    preset = json.loads(json.dumps(PRESETS[method]).replace(TASK, json.dumps(dataset_spec(dataset).task_prompt)[1:-1]))
    overrides = dict(overrides or {})
    retrieval_overrides = overrides.pop("retrieval", {})
    values = merge({"dataset": dataset}, {k: v for k, v in preset.items() if k != "retrieval"})
    values = merge(values, overrides)
    whole_graph = dataset_retrieval(dataset).method == "whole_graph"
    preset_retrieval = preset.get("retrieval", {})
    if whole_graph and preset_retrieval.get("method") not in OWN_RETRIEVALS:
        # ExplaGraphs: the whole graph for every graph method, as G-Retriever does; the cycle table of its text only
        # for the methods whose input 2-cells are (GraphToken reads no text, and its GAT only the 1-skeleton)
        reads_cycle_table = method in CELL_METHODS or not values.get("graph_text", True)
        preset_retrieval = {} if reads_cycle_table else {"k2": 0}
    else:
        preset_retrieval = {**preset_retrieval, **DATASET_RETRIEVAL.get(method, {}).get(dataset, {})}
    values["retrieval"] = {**preset_retrieval, **retrieval_overrides}
    return TrainConfig.from_dict(values)


def config_digest(config: TrainConfig) -> str:
    return digest_of(config.to_dict())


def run_folder(config: TrainConfig, name: str, runs_dir: str | Path) -> Path:
    """`runs_dir/<dataset>/<name>-<config hash>`, or the folder a run of the same config has there under any name."""
    digest = config_digest(config)
    slug = re.sub(r"[^A-Za-z0-9]+", "_", name.replace("+", "plus")).strip("_")
    same = sorted((Path(runs_dir) / config.dataset).glob(f"*-{digest}"))
    return same[0] if same else Path(runs_dir) / config.dataset / f"{slug}-{digest}"


def run_cached(config: TrainConfig, name: str, runs_dir: str | Path, progress: bool = True,
               ledger: str | Path | None = None) -> dict[str, Any]:
    """Train and evaluate `config` in `runs_dir/<dataset>/<name>-<config hash>`: a run with the same config, under
    any name (whichever notebook ran it), is read back when finished and resumed when interrupted. The finished run
    is recorded in `ledger` (default: `results/runs`). One flat row of metrics."""
    out = run_folder(config, name, runs_dir)
    with claim_run_folder(out):  # one writer from the read-back to the record
        metrics = read_metrics(out, "test") or run(config, out, progress)
        record_run(out, ledger if ledger is not None else results_dir() / "runs", name)
    return {**{k: v for k, v in metrics.items() if k != "per_family"},
            **{f"acc_{k}": v for k, v in metrics.get("per_family", {}).items()}, "run": str(out)}


def run_methods(dataset: str, methods: list[str], runs_dir: str | Path, overrides: dict[str, Any] | None = None,
                progress: bool = True) -> pd.DataFrame:
    """Run each method (reusing finished runs, resuming interrupted ones); one row of metrics per method."""
    return pd.DataFrame([{"method": method, **run_cached(method_config(method, dataset, overrides), method, runs_dir,
                                                         progress)} for method in methods])


def variant_config(method: str, dataset: str, change: dict[str, Any], overrides: dict[str, Any] | None = None,
                   seed: int = 42) -> TrainConfig:
    """`method`'s config with `overrides`, then the variant's `change`, then `seed`."""
    return method_config(method, dataset, merge(merge(overrides or {}, change), {"seed": seed}))


def run_variants(dataset: str, variants: dict[str, dict[str, Any]], runs_dir: str | Path,
                 overrides: dict[str, Any] | None = None, seeds: list[int] | tuple[int, ...] = (42,),
                 method: str = "TopoRAG", progress: bool = True) -> pd.DataFrame:
    """Run `method` once per variant (a dict of config changes over `overrides`) and seed; one row per run."""
    rows = []
    for name, change in variants.items():
        for seed in seeds:
            config = variant_config(method, dataset, change, overrides, seed)
            rows.append({"variant": name, "seed": seed, **run_cached(config, f"{method} {name}", runs_dir, progress)})
    return pd.DataFrame(rows)


def mean_and_std(table: pd.DataFrame, by: str = "variant") -> pd.DataFrame:
    """Mean, standard deviation (over seeds; NaN with one seed) and number of runs of every score column."""
    scores = [c for c in table if c == "score" or c.startswith("acc_")]
    grouped = table.groupby(by, sort=False)[scores]
    out = pd.concat([grouped.mean(), grouped.std().add_suffix("_std"), grouped.size().rename("runs")], axis=1)
    return out.reset_index()
