"""Finished runs for ledger tests, as the trainer leaves them: predictions that give the wanted scores, and metrics
computed from those predictions (`evaluation.split_metrics`), so that the ledger's reader, which recomputes every
score (`training.record_check`), accepts them."""

from __future__ import annotations

import json
from pathlib import Path
from functools import lru_cache
from typing import Any

from toporag_lib.data import load_dataset
from toporag_lib.training.evaluation import split_metrics
from toporag_lib.training.run_files import write_split_results

OTHER = {"support": "counter", "counter": "support", "yes": "no", "no": "yes"}


def _count(share: float, n: int, what: str) -> int:
    count = round(share * n)
    if abs(count / n - share) > 1e-9:
        raise ValueError(f"{what} {share} is not a whole number of {n} questions")
    return count


@lru_cache(maxsize=None)
def _questions(dataset: str, n: int) -> tuple[tuple[str, str], ...]:
    """ExplaGraphs' first `n` questions and labels (the tables match its predictions to its graphs by question);
    yes/no questions elsewhere."""
    if dataset == "explagraphs":
        return tuple((s.question, s.label) for s in load_dataset("explagraphs")[:n])
    return tuple((f"question {i}", ("yes", "no")[i % 2]) for i in range(n))


def predictions(dataset: str, score: float, n: int = 200, per_family: dict[str, float] | None = None,
                contains: float | None = None, closed: float | None = None) -> list[dict[str, Any]]:
    """`n` prediction records scoring `score` under the dataset's metric (ExplaGraphs: class words; the testbed:
    yes/no, exact match). With `per_family` ({family: score}, at most one family), that family holds half the
    questions at that score and "attribute" the rest; with `contains` (the testbed), enough wrong answers hold the
    label ("yes no") to score that under `label in prediction`; with `closed`, each record's `choice` scores it."""
    rows = [{"index": i, "question": question, "label": label, "family": ""}
            for i, (question, label) in enumerate(_questions(dataset, n))]
    if per_family:
        ((family, share),) = per_family.items()
        groups = {family: rows[:n // 2], "attribute": rows[n // 2:]}
        right = {family: _count(share, n // 2, family)}
        right["attribute"] = _count(score, n, "score") - right[family]
        if not 0 <= right["attribute"] <= n - n // 2:
            raise ValueError(f"score {score} cannot hold {family} at {share}")
    else:
        groups, right = {"": rows}, {"": _count(score, n, "score")}
    for family, members in groups.items():
        for i, row in enumerate(members):
            row.update(family=family, pred=row["label"] if i < right[family] else OTHER[row["label"]])
    hedges = _count(contains, n, "contains") - _count(score, n, "score") if contains is not None else 0
    for row in [r for r in rows if r["pred"] != r["label"]][:hedges]:
        row["pred"] = f"{row['label']} {OTHER[row['label']]}"  # holds the label; not exactly it
    if closed is not None:
        for i, row in enumerate(rows):
            row["choice"] = row["label"] if i < _count(closed, n, "closed") else OTHER[row["label"]]
    return rows


def finished_run(run: Path, config: dict[str, Any], records: list[dict[str, Any]], split: str = "test",
                 without: tuple[str, ...] = (), **metrics: Any) -> Path:
    """A run folder holding `config`, the split's predictions and its metrics computed from them (plus `metrics`;
    less the keys in `without`, as a record written before those metrics existed)."""
    run.mkdir(parents=True, exist_ok=True)
    (run / "config.json").write_text(json.dumps(config))
    computed = {k: v for k, v in split_metrics(config["dataset"], split, records).items() if k not in without}
    write_split_results(run, split, records, {**computed, **metrics})
    return run
