"""Runs a later fix made obsolete are found from their configs, marked in the tables and left out of comparisons."""

from __future__ import annotations

from toporag_lib.paths import PROJECT_ROOT
from toporag_lib.study import ledger_tables
from toporag_lib.study.experiments import TABLE1_METHODS, method_config
from toporag_lib.study.superseded import FITTED_ON_EVIDENCE, READ_CYCLE_TABLE, standing, superseded
from toporag_lib.training.ledger import read_ledger


def record(name: str, dataset: str = "explagraphs", **retrieval) -> dict:
    config = method_config(name, dataset).to_dict()
    config["retrieval"].update(retrieval)
    return {"name": name, "config": config}


def test_a_text_row_that_kept_explagraphs_2_cells_is_superseded_and_its_current_config_is_not():
    assert superseded(record("G-Retriever", k2=2)) == READ_CYCLE_TABLE
    for name in TABLE1_METHODS:
        assert superseded(record(name)) == "", name  # what the presets make today stands
    assert superseded(record("TopoRAG", k2=2)) == "" and superseded(record("GraphToken", k2=2)) == ""
    assert superseded(record("G-Retriever", "synthetic_scenes", k2=2)) == ""  # its retrieval keeps no 2-cell


def test_the_ledgers_old_explagraphs_baselines_are_marked_and_the_tables_prefer_a_standing_setting():
    records = read_ledger(PROJECT_ROOT / "results" / "runs")
    marked = {r["name"] for r in records if superseded(r) and not r["scored_under"]}  # the earlier metric's below
    assert {"zero-shot", "G-Retriever", "G-Retriever + LoRA", "LoRA (text only)"} <= marked
    assert not any(name.startswith("TopoRAG") for name in marked)
    records = [r for r in records if r["name"] != "G-Retriever" or superseded(r)]  # as before its re-run
    table = ledger_tables.table1_full_split(records, ["G-Retriever"])
    assert table.loc[0, "ExplaGraphs"].endswith(f"(superseded: {READ_CYCLE_TABLE})")  # shown, marked
    old = next(r for r in records if r["name"] == "G-Retriever" and superseded(r)
               and r["config"]["limits"]["test"] is None)
    config = {**old["config"], "retrieval": {**old["config"]["retrieval"], "k2": 0}}
    fresh = {**old, "run_id": "re-run", "finished": "9999", "config": config, "metrics": {**old["metrics"], "score": 0.5}}
    table = ledger_tables.table1_full_split([*records, fresh], ["G-Retriever"])
    assert table.loc[0, "ExplaGraphs"] == "0.500"  # the standing setting, though it has fewer seeds


def test_a_fitted_retrieval_trained_on_the_testbeds_evidence_is_superseded():
    assert superseded(record("GNN-RAG", "synthetic_scenes", fit_targets="evidence")) == FITTED_ON_EVIDENCE
    old = record("SubgraphRAG", "synthetic_scenes")
    del old["config"]["retrieval"]["fit_targets"]  # a record made before the key existed
    assert superseded(old) == FITTED_ON_EVIDENCE
    assert superseded(record("GNN-RAG", "synthetic_scenes")) == ""  # fitted to answers, as its paper
    assert superseded(record("GNN-RAG", "explagraphs", fit_targets="evidence")) == ""  # no evidence there
    assert any(superseded(r) == FITTED_ON_EVIDENCE for r in read_ledger(PROJECT_ROOT / "results" / "runs"))


def test_the_standing_full_split_records_hold_one_run_per_name_and_seed():
    """What notebook 04 sets side by side (its by-cycles pivot fails on a name and seed given twice)."""
    records = read_ledger(PROJECT_ROOT / "results" / "runs")
    for dataset in ("explagraphs", "synthetic_scenes"):
        runs = [(r["name"], r["config"]["seed"]) for r in ledger_tables.full_split_records(standing(records), dataset)]
        assert runs and len(runs) == len(set(runs)), dataset
