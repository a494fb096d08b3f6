"""Ledger records that a later fix made obsolete. They stay in the ledger as what they were; every table marks them,
and the tables that compare methods leave them out.

Three fixes so far:
- before the first, on datasets whose retrieval is the whole graph (ExplaGraphs), every graph-text row kept the
  graph's 2-cells, so its text ended with TopoRAG's cycle table (`retrieval.textualize`). Only TopoRAG and the
  ablations that keep 2-cells should read that table (`experiments.CELL_METHODS`);
- before the second, the fitted retrievals (SubgraphRAG, GNN-RAG) were trained on the testbed's evidence cells, its
  answer key, which no real dataset has (`RetrievalConfig.fit_targets`);
- before the third, the testbed was scored by `label in prediction`, which credits a "yes no" hedge; its metric is
  exact match since. The ledger's reader finds the records scored before (`training.record_check`: their scores are
  their predictions' under the earlier metric, not today's) and says so under "scored_under"; their scores are not
  comparable with any later one (nor are their questions: they ran before version 2 of the testbed, on what is now
  `version=1`, though their configs, written before the option existed, do not say so).
"""

from __future__ import annotations

from typing import Any

from toporag_lib.data.registry import dataset_spec, earlier_metric
from toporag_lib.retrieval.retrieval_config import FITTED_METHODS, RetrievalConfig, dataset_retrieval

READ_CYCLE_TABLE = "read TopoRAG's cycle table"
FITTED_ON_EVIDENCE = "fitted on the testbed's evidence"
EARLIER_METRIC = "scored under an earlier metric"
EVIDENCE_DATASETS = ("synthetic_scenes",)  # the datasets whose samples carry evidence cells


def reads_foreign_cycle_table(record: dict[str, Any]) -> bool:
    """True for a run of a non-TopoRAG row on a whole-graph dataset that kept every 2-cell and read graph text."""
    config = record["config"]
    if dataset_retrieval(config["dataset"]).method != "whole_graph" or record["name"].startswith("TopoRAG"):
        return False
    retrieval = config.get("retrieval", {})
    k2 = retrieval.get("k2", RetrievalConfig().k2)
    return retrieval.get("method") == "whole_graph" and k2 > 0 and config.get("graph_text", True)


def fitted_on_evidence(record: dict[str, Any]) -> bool:
    """True for a fitted retrieval on the testbed trained on its evidence cells (runs made before `fit_targets`)."""
    config = record["config"]
    retrieval = config.get("retrieval", {})
    return (config["dataset"] in EVIDENCE_DATASETS and retrieval.get("method") in FITTED_METHODS
            and retrieval.get("fit_targets", "evidence") == "evidence")


def superseded(record: dict[str, Any]) -> str:
    """Why the record is superseded, or "" when it stands."""
    if record.get("scored_under"):
        earlier = earlier_metric(record["config"]["dataset"], record["scored_under"])
        today = dataset_spec(record["config"]["dataset"]).metric_name
        return f"{EARLIER_METRIC} ({earlier.name}; {today} since {earlier.until})"
    if reads_foreign_cycle_table(record):
        return READ_CYCLE_TABLE
    return FITTED_ON_EVIDENCE if fitted_on_evidence(record) else ""


def standing(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [r for r in records if not superseded(r)]
