"""results/README.md and the ledger's tables (`ledger_tables`): the paper's numbers beside ours, each of ours
labelled with its setup."""

from __future__ import annotations

import json
import re
import shutil

import pandas as pd
import pytest
from ledger_records import finished_run, predictions

from toporag_lib.study import ledger_tables, report
from toporag_lib.training.ledger import read_ledger, record_run
from toporag_lib.training.train_config import TrainConfig


def test_markdown_table_rounds_and_marks_missing_values():
    text = report.markdown_table(pd.DataFrame({"method": ["a", "b"], "score": [0.12345, None]}))
    assert text.splitlines() == ["| method | score |", "|---|---|", "| a | 0.123 |", "| b | – |"]


def record(ledger, name: str, dataset: str, seed: int, score: float, families: dict | None = None,
           secondary: dict | None = None, lr: float | None = None, closed: float | None = None) -> None:
    """A finished run (config, metrics, predictions) recorded in the ledger, as the trainer leaves one: 200 test
    predictions that score `score` (`families`: one family's score; `secondary`: the testbed's `contains`)."""
    run = ledger.parent / f"run-{name.replace('/', '_')}-{dataset}-{seed}"
    config = TrainConfig(dataset=dataset, seed=seed, train=name != "zero-shot")  # one config per method, or per lr
    if lr is not None:
        config.lr = lr
    answers = predictions(dataset, score, per_family=families, contains=(secondary or {}).get("contains"),
                          closed=closed)
    finished_run(run, config.to_dict(), answers, without=() if secondary else ("secondary",))
    record_run(run, ledger, name, command=f"python -m toporag_lib.training --set seed={seed}")


def test_ledger_table_takes_means_over_seeds_of_one_setting(tmp_path):
    ledger = tmp_path / "runs"
    for seed, score in ((42, 0.5), (43, 0.7)):
        record(ledger, "TopoRAG", "explagraphs", seed, score, closed=score + 0.1)
    record(ledger, "zero-shot", "explagraphs", 42, 0.3)
    table = ledger_tables.ledger_table(read_ledger(ledger)).set_index("method")
    assert table.loc["TopoRAG", "closed"] == pytest.approx(0.7) and pd.isna(table.loc["zero-shot", "closed"])
    assert table.loc["TopoRAG", "score"] == pytest.approx(0.6) and table.loc["TopoRAG", "seeds"] == "42, 43"
    assert table.loc["TopoRAG", "score_std"] == pytest.approx(0.1414, 1e-3) and table.loc["TopoRAG", "n"] == 200
    assert table.loc["zero-shot", "seeds"] == "42" and pd.isna(table.loc["zero-shot", "score_std"])
    assert table.loc["TopoRAG", "config"] != table.loc["zero-shot", "config"]  # the setting's digest, seed left out
    assert len(table.loc["TopoRAG", "config"]) == 10


def test_a_seed_recorded_before_a_later_key_existed_joins_the_same_setting(tmp_path):
    ledger = tmp_path / "runs"
    for seed, batching in ((42, None), (43, "single"), (44, "length")):
        config = TrainConfig(dataset="explagraphs", seed=seed).to_dict()
        if batching is None:
            del config["embedding_batching"]  # written before the key existed: every text encoded alone
        else:
            config["embedding_batching"] = batching
        run = finished_run(tmp_path / f"run-{seed}", config, predictions("explagraphs", seed / 100))
        record_run(run, ledger, "TopoRAG", command="python -m toporag_lib.training")
    table = ledger_tables.ledger_table(read_ledger(ledger))
    assert sorted(table.seeds) == ["42, 43", "44"]  # "single" is what the code did before; "length" is another setting


def test_table1_on_full_splits_has_a_row_per_method_with_n_seeds_and_the_paper(tmp_path):
    ledger = tmp_path / "runs"
    for seed, score in ((42, 0.5), (43, 0.7)):
        record(ledger, "TopoRAG", "explagraphs", seed, score)
    record(ledger, "zero-shot", "synthetic_scenes", 42, 0.3, secondary={"contains": 0.45})
    table = ledger_tables.table1_full_split(read_ledger(ledger), ["zero-shot", "TopoRAG", "G-Retriever (own code)"])
    rows = table.set_index("method")
    assert rows.loc["TopoRAG", "ExplaGraphs"] == "0.600 ± 0.141" and rows.loc["TopoRAG", "ExplaGraphs seeds"] == "42, 43"
    assert rows.loc["TopoRAG", "ExplaGraphs n"] == 200 and rows.loc["TopoRAG", "paper explagraphs"] == 0.8899
    assert rows.loc["TopoRAG", "testbed"] == "not run" and rows.loc["zero-shot", "testbed"] == "0.300"
    assert rows.loc["zero-shot", "testbed contains"] == "0.450" and rows.loc["TopoRAG", "testbed contains"] == ""
    assert "ExplaGraphs contains" not in table  # ExplaGraphs has one metric
    assert rows.loc["G-Retriever (own code)", "paper explagraphs"] == ""  # not a row of the paper's
    assert list(table["method"])[-1] == "majority answer (floor)"


def test_table1_says_why_a_fitted_retriever_has_no_explagraphs_score(tmp_path):
    ledger = tmp_path / "runs"
    record(ledger, "GNN-RAG", "explagraphs", 42, 0.7)  # an old run: it fitted nothing, so it is not GNN-RAG
    record(ledger, "GNN-RAG", "synthetic_scenes", 42, 0.4)
    rows = ledger_tables.table1_full_split(read_ledger(ledger), ["GNN-RAG", "SubgraphRAG"]).set_index("method")
    assert rows.loc["GNN-RAG", "ExplaGraphs"].startswith("n/a: no answer entities")
    assert rows.loc["SubgraphRAG", "ExplaGraphs"].startswith("n/a: no answer entities")
    assert rows.loc["GNN-RAG", "testbed"] == "0.400" and rows.loc["SubgraphRAG", "testbed"] == "not run"


def test_table2_on_full_splits_ablates_frozen_and_with_lora_and_puts_the_paper_beside_lora(tmp_path):
    ledger = tmp_path / "runs"
    record(ledger, "TopoRAG", "synthetic_scenes", 42, 0.35, {"loop": 0.5}, {"contains": 0.36})
    record(ledger, "TopoRAG w/o CRL (no 2-cells)", "synthetic_scenes", 42, 0.33, {"loop": 0.49}, lr=1e-4)
    record(ledger, "TopoRAG + LoRA w/o CRL (no 2-cells)", "synthetic_scenes", 42, 0.51, {"loop": 0.5}, lr=1e-5)
    table = ledger_tables.table2_full_split(read_ledger(ledger))
    rows = table.set_index("variant")
    assert list(table["variant"])[:8] == [
        "TopoRAG", "TopoRAG w/o CRL (no 2-cells)", "TopoRAG w/o TSR (shortest path)", "TopoRAG w/o MTR (GCN)",
        "TopoRAG + LoRA", "TopoRAG + LoRA w/o CRL (no 2-cells)", "TopoRAG + LoRA w/o TSR (shortest path)",
        "TopoRAG + LoRA w/o MTR (GCN)"]
    ablation = rows.loc["TopoRAG w/o CRL (no 2-cells)"]
    assert ablation["testbed"] == "0.330" and ablation["testbed loop"] == "0.490" and ablation["testbed contains"] == ""
    assert rows.loc["TopoRAG + LoRA w/o CRL (no 2-cells)", "testbed"] == "0.510"
    assert rows.loc["TopoRAG", "testbed contains"] == "0.360"
    assert rows.loc["TopoRAG w/o MTR (GCN)", "testbed"] == "not run" and rows.loc["TopoRAG", "ExplaGraphs"] == "not run"
    assert rows.loc["TopoRAG + LoRA w/o CRL (no 2-cells)", "paper explagraphs"] == 0.8576  # the paper ablates with LoRA
    assert rows.loc["TopoRAG + LoRA", "paper explagraphs"] == 0.9151
    assert rows.loc["TopoRAG w/o CRL (no 2-cells)", "paper explagraphs"] == "" and "paper scenegraphs" not in table
    ran = ledger_tables.full_split_side_by_side(read_ledger(ledger), [("TopoRAG", "TopoRAG")], ledger_tables.paper.TABLE2, "variant",
                                         {"synthetic_scenes": None})
    assert "| 0.350 | 0.360 | 200 | 42 |" in report.markdown_table(ran)  # n stays an integer when every row has one


def test_table1_pairs_toporag_with_lora_against_each_lora_row_on_each_dataset():
    def run(name: str, right: list[bool], limit: int | None = None) -> dict:
        config = TrainConfig(dataset="synthetic_scenes", seed=42).to_dict()
        config["limits"]["test"] = limit
        families = ["loop", "loop", "path", "attribute"]
        return {"name": name, "config": config,
                "predictions": [{"index": i, "label": "yes", "pred": "yes" if r else "no", "family": families[i]}
                                for i, r in enumerate(right)]}

    records = [run("TopoRAG + LoRA", [True, True, False, True]), run("LoRA (text only)", [False, True, False, True]),
               run("GNN-RAG", [True, True, True, True], limit=4)]  # a subset run: not a full-split row
    table = ledger_tables.table1_paired(records)
    assert set(table.dataset) == {"synthetic_scenes"} and set(zip(table.a, table.b)) == {
        ("TopoRAG + LoRA", "LoRA (text only)")}
    rows = table.set_index("family")
    assert rows.loc["all", "diff"] == 0.25 and rows.loc["loop", "diff"] == 0.5 and rows.loc["path", "diff"] == 0
    assert ledger_tables.table1_paired(records[:1]) is None  # nothing to pair


def test_the_core_tables_read_only_the_core_suites_runs_and_pair_its_twins(monkeypatch):
    from toporag_lib.study import long_runs, recipe_search
    testbed = recipe_search.jobs()[10]
    monkeypatch.setattr(recipe_search, "chosen", lambda dataset, ledger=None: testbed if dataset != "explagraphs" else None)
    jobs = {(j.name, j.seed): j for j in long_runs.core_jobs()}

    def run(name: str, seed: int, right: list[bool], config: dict | None = None) -> dict:
        config = config or jobs[(name, seed)].config().to_dict()
        labels, families = ["yes", "no", "red", "no"], ["loop", "loop", "attribute", "path"]
        return {"name": name, "config": config, "metrics": {"n": 4, "score": sum(right) / 4}, "hardware": "CPU",
                "command": "", "run_id": f"{name}-{seed}", "predictions": [
            {"index": i, "label": labels[i], "pred": labels[i] if r else "blue", "family": families[i],
             "pair": "p1" if i < 2 else ""} for i, r in enumerate(right)]}

    records = [run("TopoRAG + LoRA", 42, [True, True, True, False]),
               run("TopoRAG + LoRA w/o CRL (no 2-cells)", 42, [True, False, True, False]),
               run("TopoRAG + LoRA w/o CRL (no 2-cells)", 43, [False, False, True, True]),  # no partner at 43
               run("TopoRAG + LoRA", 43, [False] * 4, TrainConfig(dataset="synthetic_scenes", seed=43).to_dict())]
    assert [r["config"]["seed"] for r in ledger_tables.core_records(records, "synthetic_scenes")] == [42, 42, 43]
    table = ledger_tables.core_paired(records)
    assert set(zip(table.a, table.b)) == {ledger_tables.CORE_PAIRS[0]} and set(table.seeds) == {"42"}
    rows = table.set_index("family")
    assert rows.loc["loop", "diff"] == 0.5 and rows.loc["loop twins", "diff"] == 1.0 and rows.loc["all", "n"] == 4
    assert ledger_tables.core_paired(records[3:]) is None
    table = ledger_tables.core_table(records).set_index("method")
    assert table.loc["TopoRAG + LoRA w/o CRL (no 2-cells)", "seeds"] == "42, 43"
    assert table.loc["TopoRAG + LoRA w/o CRL (no 2-cells)", "one_answer_max"] == 1.0  # seed 43: "blue" to both
    assert table.loc["TopoRAG + LoRA", "one_answer_max"] == 0.5 and len(table) == 2


def test_results_readme_puts_paper_and_ours_side_by_side(tmp_path):
    record(tmp_path / "runs", "TopoRAG", "explagraphs", 42, 0.61)
    record(tmp_path / "runs", "TopoRAG", "synthetic_scenes", 42, 0.25, {"loop": 0.4})
    record(tmp_path / "runs", "zero-shot", "explagraphs", 42, 0.29)
    pd.DataFrame({"variant": ["TopoRAG", "w/o CRL (no 2-cells)"], "score": [0.25, 0.2], "runs": [1, 1]}).to_csv(
        tmp_path / "05_table2_ablations.csv", index=False)
    report.write_setup(tmp_path / "04_setup.json", llm_path=None, llm_dtype="bfloat16", seed=42, epochs=1,
                       limits={"train": 80, "val": 20, "test": 60})
    path = report.write_results_readme(tmp_path, "cpu-quick")
    text = path.read_text()
    row = next(line for line in text.splitlines() if line.startswith("| TopoRAG | explagraphs |"))
    assert "0.890" in row and "0.610" in row and "| 200 | 42 |" in row  # paper 0.8899; ours, n and seeds
    row = next(line for line in text.splitlines() if line.startswith("| TopoRAG | synthetic_scenes |"))
    assert "0.250" in row and "0.400" in row
    assert "| w/o CRL (no 2-cells) | 0.200 |" in text and "0.858" in text  # notebook 05's table; paper's: 0.8576
    assert text.count("_not produced in this run_") == 18  # Table 1 paired; Tables 5-7; by cycles; core 2; dtype; recipes; 9 testbed
    assert "## What changed, and why" in text and "| testbed v3 retrieval | k0 = 5" in text  # generated from code
    llm = text.split("## Testbed · LLM runs on the full split")[1]  # from the ledger: the synthetic run is full-split
    assert "| TopoRAG | 200 | 42 | 0.250 |" in llm and "explagraphs" not in llm.split("## Figures")[0]
    assert json.loads((tmp_path / "04_setup.json").read_text())["hardware"]


def test_headline_keeps_full_split_runs_of_any_commit_and_subset_runs_of_the_newest(tmp_path):
    ledger = tmp_path / "runs"

    def finished(name, limits, commit, when, score):
        config = TrainConfig(dataset="explagraphs", limits=limits, seed=42, train=name != "zero-shot")
        answers = predictions("explagraphs", score, n=554 if limits == {} else 60)
        run = finished_run(tmp_path / f"run-{name}-{commit}", config.to_dict(), answers)
        path = record_run(run, ledger, name) / "record.json"
        path.write_text(json.dumps({**json.loads(path.read_text()), "commit": commit, "finished": when}))

    finished("TopoRAG", {}, "aaaaaaa", "2026-11-01 10:00 UTC", 393 / 554)  # a full split, at an older commit
    finished("G-Retriever", {"test": 60}, "aaaaaaa", "2026-11-01 11:00 UTC", 0.45)
    finished("TopoRAG", {"test": 60}, "bbbbbbb", "2026-11-02 10:00 UTC", 0.35)
    finished("zero-shot", {}, "bbbbbbb", "2026-11-02 11:00 UTC", 166 / 554)  # Table 1's, not the headline's
    text = report.headline(tmp_path)
    assert "| explagraphs | TopoRAG | 554 |" in text and "0.709" in text
    assert "| explagraphs | TopoRAG | 60 |" in text and "G-Retriever" not in text  # an older subset run
    assert "zero-shot" not in text


def test_a_record_names_the_commit_its_process_started_from(tmp_path, monkeypatch):
    from toporag_lib.training import ledger as ledger_module

    monkeypatch.setattr(ledger_module, "STARTED_FROM", "abc1234+changes")
    record(tmp_path / "runs", "TopoRAG", "explagraphs", 42, 0.5)
    assert read_ledger(tmp_path / "runs")[0]["commit"] == "abc1234+changes"


@pytest.mark.parametrize("damaged", ["record.json", "predictions_test.jsonl"])
def test_a_damaged_ledger_file_is_a_named_error(tmp_path, damaged):
    record(tmp_path / "runs", "TopoRAG", "explagraphs", 42, 0.5)
    (path,) = (tmp_path / "runs").glob(f"*/{damaged}")
    path.write_text('{"name": "TopoRAG", "metr\n' if damaged == "record.json" else '{"pred": "a"}\n{"pred": \n')
    where = str(path) + ("" if damaged == "record.json" else ", line 2")
    with pytest.raises(ValueError, match=f"{re.escape(where)} is damaged"):
        read_ledger(tmp_path / "runs")


def test_results_readme_shows_the_recipe_search_from_its_own_ledger(tmp_path):
    from toporag_lib.paths import PROJECT_ROOT

    run = sorted((PROJECT_ROOT / "results" / "recipe_search").glob("explagraphs-*"))[0]
    shutil.copytree(run, tmp_path / "recipe_search" / run.name)
    text = report.results_readme(tmp_path, "cpu-quick")
    section = text.split("## Recipe search · validation only")[1].split("## ")[0]
    score = json.loads((run / "record.json").read_text())["metrics"]["score"]
    assert "question_first" in section and f"{score:.3f}" in section and "test split is never read" in section
