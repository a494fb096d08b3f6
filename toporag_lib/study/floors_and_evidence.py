"""What the synthetic testbed's questions demand, and what retrieval gives them.

`floors`: for each family of a split, the majority answer and its rate (what a constant answer scores under exact
match), the score of answering "yes no" to everything under G-Retriever's `label in prediction` (which a loose
metric rewards), and the two reference solvers' scores (`toporag_lib.data.testbed.solvers`).

`evidence_table`: for retrieval variants (sparse `TrainConfig` overrides: lifting, edge texts, retrieval), per
family, the share of questions whose evidence cells are all retrieved, answer coverage and prompt tokens, with 95%
Wilson intervals. `RETRIEVAL_VARIANTS` are the ones notebook 03 reports.

`choose_setting`: the rule that picks testbed version 3's retrieval default (`V3_RETRIEVAL_GRID`) on its validation
split: the fewest prompt tokens among the settings that hold the whole loop for at least `MIN_RECALL_BY_ANSWER` of
the "yes" and of the "no" loop questions, so that what is retrieved does not tell the answer.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import Any

import pandas as pd

from toporag_lib.data.dataset import QADataset
from toporag_lib.data.metrics import exact_match_correct, scenegraphs_correct
from toporag_lib.data.testbed.solvers import SOLVERS
from toporag_lib.embed import TextEncoder
from toporag_lib.retrieval.retrieval_config import FITTED_METHODS, PAPER_ALGORITHM_3
from toporag_lib.retrieval.retriever import make_retriever
from toporag_lib.study.retrieval_diagnostics import (
    rates_with_intervals,
    retrieval_report,
)
from toporag_lib.training.preprocess import (
    PreparedDataset,
    prepare,
    retrieve_all,
)
from toporag_lib.training.train_config import TrainConfig

OLD_DEFAULT = {"lift": {"basis": "fundamental", "tree": "bfs", "parallel": "digon"}, "edge_text": "relation",
               "retrieval": {"k1": 5, "cells": "top_k"}}
RETRIEVAL_VARIANTS: dict[str, dict[str, Any]] = {
    "TopoRAG (testbed default)": {},
    "TopoRAG, G-Retriever's 0/1-cell prizes": {"retrieval": {"prizes": "gretriever"}},
    "TopoRAG w/o 2-cells (k2 = 0)": {"retrieval": {"k2": 0}},
    "TopoRAG, 2-cells pay for their boundary": {"retrieval": {"cell_cost": "boundary"}},
    "TopoRAG, top-k2 2-cells only": {"retrieval": {"cells": "top_k"}},
    "TopoRAG, BFS fundamental cycles": {"lift": {"basis": "fundamental", "tree": "bfs"}},
    "TopoRAG, DFS fundamental cycles (the paper's tree)": {"lift": {"basis": "fundamental", "tree": "dfs"}},
    "TopoRAG, random-tree fundamental cycles": {"lift": {"basis": "fundamental", "tree": "random"}},
    "TopoRAG, digons kept": {"lift": {"parallel": "digon"}},
    "TopoRAG, relation edge texts": {"edge_text": "relation"},
    "TopoRAG, k1 = 5, c2 = 0.5": {"retrieval": {"k1": 5, "c2": 0.5}},  # fewer edge prizes, cheaper 2-cells
    "TopoRAG, k0 = 5, k1 = 5": {"retrieval": {"k0": 5, "k1": 5}},  # fewer edge prizes, more node prizes
    "TopoRAG, paper's Algorithm 3 (DFS, every 2-cell paying for its boundary)": {
        "lift": {"basis": "fundamental", "tree": "dfs", "parallel": "digon"}, "edge_text": "relation",
        "retrieval": {"k1": 5, **PAPER_ALGORITHM_3}},
    "TopoRAG, before the testbed (BFS, top-k2, relation)": OLD_DEFAULT,
    "G-Retriever": {"lift": OLD_DEFAULT["lift"], "edge_text": "relation", "retrieval": {"method": "gretriever"}},
    "G-Retriever, triple edge texts": {"retrieval": {"method": "gretriever"}},
    "shortest paths (w/o TSR)": {"retrieval": {"method": "shortest_path"}},
    "SubgraphRAG (fitted on the training split)": {"retrieval": {"method": "subgraphrag"}},
    "GNN-RAG (fitted on the training split)": {"retrieval": {"method": "gnnrag"}},
}

# The price of holding the loop: TopoRAG's prize budget (edges prized, edge cost) and which 2-cells enter the PCST,
# on a grid around the testbed default (k1 = 8, cost_e = 0.5, every positive 2-cell); `budget_table` reads it back.
BUDGET_GRID: dict[str, dict[str, Any]] = {
    f"k1 = {k1}, cost_e = {cost_e}, {label}": {"retrieval": {"k1": k1, "cost_e": cost_e, **cells}}
    for k1 in (3, 5, 8) for cost_e in (0.5, 1.5)
    for label, cells in (("every positive 2-cell", {"cells": "all"}), ("top-3 2-cells", {"cells": "top_k", "k2": 3}))}


# Testbed version 3's retrieval: node and edge prizes around the version 2 default (k0 = 3, k1 = 8) and a cheaper
# 2-cell cost, each setting written out in full (the version 3 default is one of them).
V3_RETRIEVAL_GRID: dict[str, dict[str, Any]] = {
    **{f"TopoRAG, k0 = {k0}, k1 = {k1}": {"retrieval": {"k0": k0, "k1": k1}} for k0 in (3, 5) for k1 in (8, 12)},
    "TopoRAG, k0 = 3, k1 = 8, c2 = 0.5": {"retrieval": {"k0": 3, "k1": 8, "c2": 0.5}},
}
MIN_RECALL_BY_ANSWER = 0.90
# Smaller budgets, for a TopoRAG setting as cheap as G-Retriever at version 3's prizes (`within_tokens`).
TOKEN_MATCH_GRID: dict[str, dict[str, Any]] = {
    f"k0 = {k0}, k1 = {k1}, {label}": {"retrieval": {"k0": k0, "k1": k1, **cells}}
    for k0 in (2, 3, 5) for k1 in (3, 5, 8)
    for label, cells in (("every positive 2-cell", {"cells": "all"}), ("top-1 2-cell", {"cells": "top_k", "k2": 1}))}


def choose_setting(evidence: pd.DataFrame, min_recall: float = MIN_RECALL_BY_ANSWER) -> pd.DataFrame:
    """Per method of an `evidence_table` (on a validation split): the loop questions' evidence recall for answer
    "yes" and "no", mean prompt tokens over all questions, `qualifies` (both recalls at least `min_recall`) and
    `chosen` (the qualifying method with the fewest tokens; none when nothing qualifies)."""
    if "tokens" not in evidence:
        raise ValueError("choose_setting needs prompt tokens: build the evidence_table with count_tokens")
    rows = []
    for method, group in evidence.groupby("method", sort=False):
        by_family = group.set_index("family")
        rows.append({"method": method, "loop_yes": by_family.loc["loop, answer yes", "evidence_recall"],
                     "loop_no": by_family.loc["loop, answer no", "evidence_recall"],
                     "loop": by_family.loc["loop", "evidence_recall"],
                     "tokens": mean_tokens(group)})
    table = pd.DataFrame(rows)
    table["qualifies"] = (table.loop_yes >= min_recall) & (table.loop_no >= min_recall)
    table["chosen"] = False
    if table.qualifies.any():
        table.loc[table[table.qualifies].tokens.idxmin(), "chosen"] = True
    return table


def floors(dataset: QADataset, split: str = "test") -> pd.DataFrame:
    """One row per family (and one for all questions): n, majority answer, its rate, the "yes no" score under
    `label in prediction`, and each reference solver's exact-match accuracy."""
    samples = [dataset[i] for i in dataset.split[split]]
    groups = {"all": samples}
    for sample in samples:
        groups.setdefault(sample.meta["family"], []).append(sample)
    answers = {name: [solve(s) for s in samples] for name, solve in SOLVERS.items()}
    position = {id(s): k for k, s in enumerate(samples)}
    rows = []
    for family, members in groups.items():
        labels = [s.label for s in members]
        majority, count = Counter(labels).most_common(1)[0]
        row = {"family": family, "n": len(members), "majority_answer": majority if family != "all" else "",
               "majority_rate": count / len(members) if family != "all" else float("nan"),
               "yes_no_contains": sum(scenegraphs_correct("yes no", y) for y in labels) / len(members)}
        for name, predicted in answers.items():
            row[name] = sum(exact_match_correct(predicted[position[id(s)]], s.label) for s in members) / len(members)
        rows.append(row)
    table = pd.DataFrame(rows)
    return pd.concat([table[table.family != "all"], table[table.family == "all"]], ignore_index=True)


def evidence_table(dataset: QADataset, variants: dict[str, dict[str, Any]], encoder: TextEncoder,
                   count_tokens: Callable[[str], int] | None = None,
                   fit_on: QADataset | None = None) -> pd.DataFrame:
    """Evidence recall, answer coverage and tokens per variant and family on `dataset` (the loop family also by
    answer, "loop, answer yes" and "loop, answer no"), with 95% intervals (see the module docstring); each distinct (lifting, edge text) is prepared once. A learned retrieval (SubgraphRAG,
    GNN-RAG) is fitted on `fit_on` (the training split; never `dataset`); without it such variants are left out.
    Each variant changes the defaults of the dataset's testbed version (`data.registry`)."""
    prepared: dict[tuple[str, str], PreparedDataset] = {}

    def prepared_for(data: QADataset, config: TrainConfig, role: str) -> PreparedDataset:
        key = (role, repr((config.lift, config.edge_text)))
        if key not in prepared:
            prepared[key] = prepare(data, encoder, progress=False, edge_text=config.edge_text,
                                    lift=config.lift)
        return prepared[key]

    version = dataset[0].meta.get("version") if len(dataset) else None
    options = {} if version is None else {"version": version}  # the testbed version's retrieval defaults
    reports = []
    for name, change in variants.items():
        config = TrainConfig.from_dict({"dataset": dataset.name, "dataset_options": options, **change})
        training = ()
        if config.retrieval.method in FITTED_METHODS:
            if fit_on is None:
                continue
            training = prepared_for(fit_on, config, "fit").questions(range(len(fit_on)))
        target = prepared_for(dataset, config, "evaluate")
        subs = retrieve_all(target, make_retriever(config.retrieval, training))
        reports.append(retrieval_report(target, subs, count_tokens=count_tokens).assign(method=name))
    report = pd.concat(reports, ignore_index=True)
    loops = report[report.family == "loop"]  # and by answer: a retrieval that holds the loop for "yes" only leaks it
    report = pd.concat([report, loops.assign(family="loop, answer " + loops.label)], ignore_index=True)
    rates = [r for r in ("evidence_recall", "covers_answer", "loop_2cell_retrieved") if r in report]
    return rates_with_intervals(report, ["method", "family"], rates)


def _asked(question: str, known: dict[str, bool]) -> str:
    """The dataset's question inside a prediction record's, which may end with lines a method appended (a CoT
    suffix): trailing lines are dropped until a known question remains."""
    asked = question
    while asked not in known and "\n" in asked:
        asked = asked.rsplit("\n", 1)[0]
    if asked not in known:
        raise KeyError(f"prediction record's question {question[:80]!r} is not one of the dataset's")
    return asked


def accuracy_by_cycles(records: list[dict], dataset: QADataset, correct: Callable[[str, str], bool]) -> pd.DataFrame:
    """A run's accuracy on the questions whose graph has a cycle and on those whose graph has none (prediction
    records matched to `dataset`'s samples by question text): what a dataset can show about 2-cells depends on the
    first group's size."""
    labelled = with_cycle_families([{"predictions": records}], dataset)[0]["predictions"]
    rows = []
    for name in CYCLE_FAMILIES.values():
        hits = [correct(p["pred"], p["label"]) for p in labelled if p["family"] == name]
        rows.append({"questions": name, "n": len(hits), "accuracy": sum(hits) / len(hits) if hits else float("nan")})
    return pd.DataFrame(rows)


CYCLE_FAMILIES = {True: "graph with a cycle", False: "acyclic graph"}


def with_cycle_families(records: list[dict], dataset: QADataset) -> list[dict]:
    """Copies of ledger records whose predictions' `family` says whether the question's graph has a cycle ("graph
    with a cycle" or "acyclic graph"), so that `paired_runs.pooled` compares two runs on each group."""
    cyclic = {s.question: s.graph.num_independent_cycles() > 0 for s in dataset}
    return [{**r, "predictions": [{**p, "family": CYCLE_FAMILIES[cyclic[_asked(p["question"], cyclic)]]}
                                  for p in r["predictions"]]} for r in records]


def budget_table(evidence: pd.DataFrame) -> pd.DataFrame:
    """Per method of an `evidence_table`: mean prompt tokens over all its questions, the loop questions' evidence
    recall and the path questions' answer coverage, each with its 95% interval."""
    rows = []
    for method, group in evidence.groupby("method", sort=False):
        by_family = group.set_index("family")
        loop, path = by_family.loc["loop"], by_family.loc["path"]
        rows.append({"method": method, "tokens": mean_tokens(group),
                     "loop_evidence_recall": loop.evidence_recall, "loop_evidence_recall_lo": loop.evidence_recall_lo,
                     "loop_evidence_recall_hi": loop.evidence_recall_hi, "path_covers_answer": path.covers_answer,
                     "path_covers_answer_lo": path.covers_answer_lo, "path_covers_answer_hi": path.covers_answer_hi,
                     "n": int(group[~group.family.str.startswith("loop, answer")].n.sum())})
    return pd.DataFrame(rows)


def mean_tokens(group: pd.DataFrame) -> float:
    """Mean prompt tokens over the questions of one method's `evidence_table` rows (each family once: the loop
    family's rows by answer repeat its questions)."""
    families = group[~group.family.str.startswith("loop, answer")]
    return float((families.tokens * families.n).sum() / families.n.sum())


def within_tokens(budget: pd.DataFrame, reference: str, candidates: list[str]) -> pd.Series:
    """The row of a `budget_table` among `candidates` with the highest loop evidence recall whose mean prompt tokens
    are at most those of `reference` (a setting matched to the reference's prompt size)."""
    ceiling = budget.set_index("method").loc[reference, "tokens"]
    within = budget[budget.method.isin(candidates) & (budget.tokens <= ceiling)]
    if within.empty:
        raise ValueError(f"no candidate costs at most {reference!r}'s {ceiling:.0f} tokens")
    return within.sort_values(["loop_evidence_recall", "tokens"], ascending=[False, True]).iloc[0]
