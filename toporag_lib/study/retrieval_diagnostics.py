"""Retrieval diagnostics: cells per dimension (the paper's Table 6), answer coverage, evidence recall (all the cells
an answer depends on are retrieved), prompt size in tokens, and Wilson intervals for the rates."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import pandas as pd

from toporag_lib.data.graph import TextualGraph
from toporag_lib.retrieval.by_method import Subcomplex
from toporag_lib.retrieval.textualize import textualize_subcomplex
from toporag_lib.topology.complex import CellComplex
from toporag_lib.training.preprocess import PreparedDataset


def covers_answer(sub: Subcomplex, answer_nodes: Sequence[int]) -> bool | None:
    """Whether any answer node lies in the subcomplex; None when the question names no answer node."""
    if not answer_nodes:
        return None
    return bool(set(int(v) for v in answer_nodes) & set(sub.nodes.tolist()))


def _pairs(graph: TextualGraph, edges: Sequence[int]) -> set[frozenset[int]]:
    return {frozenset(graph.edges[e][:2]) for e in edges}


def holds_evidence(sub: Subcomplex, evidence: dict[str, Sequence[int]] | None,
                   graph: TextualGraph | None = None) -> bool | None:
    """Whether every evidence node and edge lies in the subcomplex; None when the question records no evidence.

    With `graph`, an evidence edge also counts as held when another edge joining the same two nodes is (a scene's
    spatial relations come in reciprocal pairs, "left of" one way and "right of" the other: either states the fact).
    """
    if not evidence:
        return None
    if not set(evidence["nodes"]) <= set(sub.nodes.tolist()):
        return False
    if graph is None:
        return set(evidence["edges"]) <= set(sub.edges.tolist())
    return _pairs(graph, evidence["edges"]) <= _pairs(graph, sub.edges.tolist())


def evidence_cell(cc: CellComplex, graph: TextualGraph, evidence: dict[str, Sequence[int]] | None) -> int | None:
    """The 2-cell whose boundary joins exactly the node pairs of the evidence's edges (a closed loop's triangle,
    whichever of two reciprocal edges the 2-cell uses), or None."""
    if not evidence or len(evidence["edges"]) < 2:
        return None
    wanted = _pairs(graph, evidence["edges"])
    for c in range(cc.num_cells(2)):
        if _pairs(graph, cc.cell(c).edges.tolist()) == wanted:
            return c
    return None


def wilson_interval(successes: float, n: int, z: float = 1.96) -> tuple[float, float]:
    """The Wilson score interval of a binomial rate (95% by default); (nan, nan) without trials."""
    if n == 0:
        return float("nan"), float("nan")
    p = successes / n
    centre, half = p + z * z / (2 * n), z * (p * (1 - p) / n + z * z / (4 * n * n)) ** 0.5
    return (centre - half) / (1 + z * z / n), (centre + half) / (1 + z * z / n)


def rates_with_intervals(report: pd.DataFrame, by: Sequence[str], rates: Sequence[str]) -> pd.DataFrame:
    """Per group: each rate column's mean over the questions where it is defined, its 95% Wilson interval
    (`<rate>_lo`, `<rate>_hi`), the mean of `tokens` when present, and n (questions in the group)."""
    rows = []
    for key, group in report.groupby(list(by), sort=False):
        row = dict(zip(by, key if isinstance(key, tuple) else (key,)))
        for rate in rates:
            values = group[rate].dropna().astype(float)
            row[rate] = values.mean() if len(values) else float("nan")
            row[f"{rate}_lo"], row[f"{rate}_hi"] = wilson_interval(values.sum(), len(values))
        if "tokens" in group:
            row["tokens"] = group.tokens.mean()
        row["n"] = len(group)
        rows.append(row)
    return pd.DataFrame(rows)


def retrieval_report(prepared: PreparedDataset, subs: Sequence[Subcomplex], indices: Sequence[int] | None = None,
                     count_tokens: Callable[[str], int] | None = None) -> pd.DataFrame:
    """One row per question: cells per dimension, answer coverage, question family and label, and (optionally) the
    subcomplex text's length in tokens of `count_tokens`."""
    indices = range(len(subs)) if indices is None else indices
    rows = []
    for i, sub in zip(indices, subs):
        sample = prepared.sample(i)
        cc = prepared.complex_of(i)
        row = {"sample": i, "family": sample.meta.get("family", ""), "label": sample.label, **sub.counts(),
               "graph_0cells": cc.num_cells(0), "graph_1cells": cc.num_cells(1), "graph_2cells": cc.num_cells(2),
               "covers_answer": covers_answer(sub, sample.meta.get("answer_nodes", [])),
               "evidence_recall": holds_evidence(sub, sample.meta.get("evidence"), sample.graph)}
        cell = evidence_cell(cc, sample.graph, sample.meta.get("evidence")) if sample.label == "yes" else None
        if sample.meta.get("family") == "loop" and sample.label == "yes":
            row["loop_is_2cell"] = cell is not None
            row["loop_2cell_retrieved"] = cell is not None and cell in set(sub.cells2.tolist())
        if count_tokens is not None:
            row["tokens"] = count_tokens(textualize_subcomplex(sample.graph, cc, sub))
        rows.append(row)
    return pd.DataFrame(rows)


def summarize(report: pd.DataFrame, by: Sequence[str] = ()) -> pd.DataFrame:
    """Means of the per-question report (coverage over questions that name an answer node)."""
    columns = [c for c in ("0-cells", "1-cells", "2-cells", "tokens") if c in report]
    report = report.assign(covers_answer=report.covers_answer.astype("float"))
    if by:
        return report.groupby(list(by), dropna=False)[columns + ["covers_answer"]].mean().round(3).reset_index()
    return report[columns + ["covers_answer"]].mean().round(3).to_frame().T
