"""Runs that differ only in the LLM's dtype, paired question by question (`study.dtype_agreement`)."""

from __future__ import annotations

import pytest

from toporag_lib.study.dtype_agreement import agreement
from toporag_lib.training.train_config import TrainConfig

LABELS = ["support", "counter", "support", "counter"]


def run(name: str, dtype: str, answers: list[str], seed: int = 42, lr: float = 1e-3) -> dict:
    config = TrainConfig(dataset="explagraphs", seed=seed, llm_dtype=dtype, lr=lr).to_dict()
    predictions = [{"index": i, "label": label, "pred": pred} for i, (label, pred) in enumerate(zip(LABELS, answers))]
    return {"name": name, "config": config, "predictions": predictions}


def test_pairs_only_runs_that_differ_in_their_dtype_alone():
    records = [run("TopoRAG", "bfloat16", ["support", "counter", "counter", "counter"]),
               run("TopoRAG", "float32", ["support", "counter", "support", "support"]),
               run("TopoRAG", "float32", LABELS, seed=43),           # another seed: no partner
               run("TopoRAG", "float32", LABELS, lr=1e-4),           # another setting: no partner
               run("G-Retriever", "bfloat16", LABELS)]               # another method: no partner
    table = agreement(records)
    assert len(table) == 1
    row = table.iloc[0]
    assert (row.method, row.dtype_a, row.dtype_b, row.n) == ("TopoRAG", "bfloat16", "float32", 4)
    assert row.score_a == pytest.approx(0.75) and row.score_b == pytest.approx(0.75)
    assert row.same_answer == pytest.approx(0.5)                   # questions 2 and 3 got other answers
    assert (row.only_a, row.only_b) == (1, 1) and row.mcnemar_p == pytest.approx(1.0)


def test_no_pairs_gives_an_empty_table_with_its_columns():
    table = agreement([run("TopoRAG", "bfloat16", LABELS)])
    assert table.empty and "same_answer" in table.columns
