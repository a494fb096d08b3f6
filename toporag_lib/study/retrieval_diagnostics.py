"""Retrieval diagnostics: cells per dimension (the paper's Table 6), answer coverage, prompt size in tokens."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import pandas as pd

from toporag_lib.retrieval.methods import Subcomplex
from toporag_lib.retrieval.textualize import textualize_subcomplex
from toporag_lib.training.preprocess import PreparedDataset


def covers_answer(sub: Subcomplex, answer_nodes: Sequence[int]) -> bool | None:
    """Whether any answer node lies in the subcomplex; None when the question names no answer node."""
    if not answer_nodes:
        return None
    return bool(set(int(v) for v in answer_nodes) & set(sub.nodes.tolist()))


def retrieval_report(prepared: PreparedDataset, subs: Sequence[Subcomplex], indices: Sequence[int] | None = None,
                     count_tokens: Callable[[str], int] | None = None) -> pd.DataFrame:
    """One row per question: cells per dimension, answer coverage, question family, and (optionally) the
    subcomplex text's length in tokens of `count_tokens`."""
    indices = range(len(subs)) if indices is None else indices
    rows = []
    for i, sub in zip(indices, subs):
        sample = prepared.sample(i)
        cc = prepared.complex_of(i)
        row = {"sample": i, "family": sample.meta.get("family", ""), **sub.counts(),
               "graph_0cells": cc.num_cells(0), "graph_1cells": cc.num_cells(1), "graph_2cells": cc.num_cells(2),
               "covers_answer": covers_answer(sub, sample.meta.get("answer_nodes", []))}
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
