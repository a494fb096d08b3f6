"""results/README.md: the paper's numbers beside ours, each of ours labelled with its setup."""

from __future__ import annotations

import json

import pandas as pd

from toporag_lib import report


def test_markdown_table_rounds_and_marks_missing_values():
    text = report.markdown_table(pd.DataFrame({"method": ["a", "b"], "score": [0.12345, None]}))
    assert text.splitlines() == ["| method | score |", "|---|---|", "| a | 0.123 |", "| b | – |"]


def test_results_readme_puts_paper_and_ours_side_by_side(tmp_path):
    pd.DataFrame({"dataset": ["explagraphs", "synthetic_scenes", "explagraphs"],
                  "method": ["TopoRAG", "TopoRAG", "zero-shot"], "score": [0.61, 0.25, 0.29],
                  "acc_loop": [None, 0.4, None]}).to_csv(tmp_path / "04_training_results.csv", index=False)
    pd.DataFrame({"variant": ["TopoRAG", "w/o CRL (no 2-cells)"], "score": [0.25, 0.2], "runs": [1, 1]}).to_csv(
        tmp_path / "05_table2_ablations.csv", index=False)
    report.write_setup(tmp_path / "04_setup.json", llm_path=None, llm_dtype="bfloat16", seed=42, epochs=1,
                       limits={"train": 80, "val": 20, "test": 60})
    path = report.write_results_readme(tmp_path, "cpu-quick")
    text = path.read_text()
    row = next(line for line in text.splitlines() if line.startswith("| Frozen LLM w/ PT | TopoRAG |"))
    assert "0.890" in row and "0.610" in row and "0.250" in row and "0.400" in row  # paper 0.8899; ours
    assert "SmolLM2-135M-Instruct (bundled) (bfloat16)" in text and "train 80, val 20, test 60" in text
    assert "| w/o CRL (no 2-cells) | 0.200 |" in text and "0.858" in text  # paper's w/o CRL: 0.8576
    assert text.count("_not produced in this run_") == 3  # Tables 5, 6 and 7 were not written
    assert json.loads((tmp_path / "04_setup.json").read_text())["hardware"]
