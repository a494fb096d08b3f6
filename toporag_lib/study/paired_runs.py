"""Two methods' runs on the same test questions, compared question by question: per seed (McNemar's exact test)
and pooled over the seeds both ran (each question's correctness averaged over them, a paired t-interval; where
questions come as counterfactual twins, each twin pair as one unit too).

The records are ledger records of one dataset and one setting (`ledger_tables.full_split_records`), each with its test
predictions; a method's runs are told apart by seed. Notebook 05 and `results/README.md` read the testbed's
TopoRAG / G-Retriever pair through it.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from toporag_lib.data.registry import correct_for
from toporag_lib.study.paired_test import mean_difference, paired_comparison


def _runs(records: list[dict[str, Any]], names: tuple[str, str]) -> tuple[str, dict[tuple[str, int], dict[str, Any]]]:
    """The records' one dataset, and the two methods' records by (method name, seed)."""
    datasets = {r["config"]["dataset"] for r in records}
    if len(datasets) > 1:
        raise ValueError(f"records from several datasets ({sorted(datasets)}): pair runs of one dataset")
    runs: dict[tuple[str, int], dict[str, Any]] = {}
    for r in (r for r in records if r["name"] in names):
        key = (r["name"], r["config"]["seed"])
        if key in runs:
            raise ValueError(f"two runs of {key[0]!r} with seed {key[1]}: pass the records of one setting")
        runs[key] = r
    return (datasets.pop() if datasets else ""), runs


def by_seed(records: list[dict[str, Any]], a: str = "TopoRAG", b: str = "G-Retriever",
            family: str | None = "loop") -> pd.DataFrame:
    """For every seed that both methods ran: McNemar's exact test of a against b on the family's test questions (all
    questions when `family` is None)."""
    dataset, runs = _runs(records, (a, b))
    rows = []
    for seed in sorted({seed for name, seed in runs if name == a} & {seed for name, seed in runs if name == b}):
        chosen = [[p for p in runs[(m, seed)]["predictions"] if family is None or p.get("family") == family]
                  for m in (a, b)]
        rows.append({"seed": seed, "family": family or "all",
                     **paired_comparison(chosen[0], chosen[1], dataset, names=(a, b))})
    return pd.DataFrame(rows)


def pooled(records: list[dict[str, Any]], a: str = "TopoRAG", b: str = "G-Retriever") -> pd.DataFrame:
    """Over the seeds both methods ran, per family (and all): each question's correctness averaged
    over those seeds, both methods' scores, and `paired.mean_difference` of a minus b (questions are the units, so
    the interval counts each question once however many seeds ran); `one_answer_a`/`_b`: the share of the family's
    predictions that are the run's most common one, averaged over the seeds (1.0: one answer to every question)."""
    dataset, runs = _runs(records, (a, b))
    seeds = sorted({seed for name, seed in runs if name == a} & {seed for name, seed in runs if name == b})
    if not seeds:
        return pd.DataFrame()
    correct = correct_for(dataset)
    rows = [{"method": m, "seed": seed, "question": p["index"], "family": p.get("family", ""),
             "pair": p.get("pair", ""), "correct": float(correct(p["pred"], p["label"])), "pred": p["pred"]}
            for m in (a, b) for seed in seeds for p in runs[(m, seed)]["predictions"]]
    frame = pd.DataFrame(rows)
    mean = frame.groupby(["method", "question"]).correct.mean().unstack(0)
    if mean.isna().any().any():
        raise ValueError(f"{a!r} and {b!r} hold different test questions; cannot pair them")
    family = frame.drop_duplicates("question").set_index("question").family
    out = []
    for name in ["all", *sorted(family.unique())]:
        part = mean if name == "all" else mean[family[mean.index] == name]
        chosen = frame if name == "all" else frame[frame.family == name]
        one_answer = chosen.groupby(["method", "seed"]).pred.agg(lambda p: p.value_counts().iloc[0] / len(p))
        out.append({"family": name, "a": a, "b": b, "seeds": ", ".join(map(str, seeds)),
                    "score_a": part[a].mean(), "score_b": part[b].mean(),
                    **mean_difference((part[a] - part[b]).to_numpy()),
                    "one_answer_a": one_answer[a].mean(), "one_answer_b": one_answer[b].mean()})
    return pd.DataFrame(out + twin_rows(frame, a, b, ", ".join(map(str, seeds))))


def twin_rows(frame: pd.DataFrame, a: str, b: str, seeds: str) -> list[dict[str, Any]]:
    """Per family whose questions come as counterfactual twins (`pair` ids), the pairs as units: a pair counts as
    right in a run when both its questions are (`metrics.twin_accuracy`), averaged over the seeds; both methods'
    twin accuracy and `paired.mean_difference` of a minus b over the pairs (family "<family> twins")."""
    rows = []
    twins = frame[frame.pair != ""]
    for name in sorted(twins.family.unique()):
        runs = twins[twins.family == name].groupby(["method", "seed", "pair"]).correct
        whole = runs.agg(lambda right: float(len(right) == 2 and right.all()))[runs.size() == 2]
        score = whole.groupby(["method", "pair"]).mean().unstack(0).dropna()
        rows.append({"family": f"{name} twins", "a": a, "b": b, "seeds": seeds, "score_a": score[a].mean(),
                     "score_b": score[b].mean(), **mean_difference((score[a] - score[b]).to_numpy())})
    return rows


def pairs(records: list[dict[str, Any]], compared: list[tuple[str, str]]) -> pd.DataFrame:
    """`pooled` for each (a, b) in `compared`, one table; pairs without a seed that both ran are left out."""
    tables = [table for a, b in compared if not (table := pooled(records, a, b)).empty]
    return pd.concat(tables, ignore_index=True) if tables else pd.DataFrame()
