"""Where the testbed's defaults come from, and what the fixes of the fair-comparison pass changed: the two texts
`results/README.md` opens with (`report.results_readme`).

`default_choices()` lists every default the testbed's numbers depend on, its value as the code holds it, the split
that chose it and the file that shows the choice: the rule of this project is validation only, and the table says
where an older choice also looked at the test split.
"""

from __future__ import annotations

import pandas as pd

from toporag_lib.data.registry import TESTBED_LIFT, TESTBED_RETRIEVAL, TESTBED_V3_RETRIEVAL, dataset_spec
from toporag_lib.study.floors_and_evidence import MIN_RECALL_BY_ANSWER


def _settings(values: dict) -> str:
    return ", ".join(f"{k} = {v}" for k, v in values.items())


def default_choices() -> pd.DataFrame:
    """One row per testbed default: what, its value, the split that chose it, and the file with the evidence."""
    spec = dataset_spec("synthetic_scenes")
    rows = [
        ("testbed v2 retrieval", _settings(TESTBED_RETRIEVAL),
         "validation; an earlier pass also looked at test", "03_evidence_recall.csv, 03_budget_frontier.csv"),
        ("testbed lifting", _settings(TESTBED_LIFT), "validation; an earlier pass also looked at test",
         "03_evidence_recall.csv (the basis and digon rows)"),
        ("testbed edge texts", spec.edge_text, "validation; an earlier pass also looked at test",
         "03_evidence_recall.csv (the relation-text row)"),
        ("testbed v3 retrieval", _settings(TESTBED_V3_RETRIEVAL),
         f"validation only (fewest tokens holding the loop for >= {MIN_RECALL_BY_ANSWER} of yes and of no)",
         "03_v3_retrieval_choice.csv; test scored once: 03_v3_evidence_recall.csv"),
        ("v3 TopoRAG setting at G-Retriever's tokens", "notebook 03's pick from TOKEN_MATCH_GRID", "validation only",
         "03_v3_evidence_recall.csv"),
        ("training recipe (ExplaGraphs)", "recipe_search's RECIPES", "validation only (800 / 200 subsets)",
         "recipe_search/ (its own ledger)"),
    ]
    return pd.DataFrame(rows, columns=["default", "value", "chosen on", "evidence"])


WHAT_CHANGED = (
    "The fair-comparison pass changed five things, and every table marks the runs made before it as superseded "
    "(`study.superseded`; they stay in the ledger and out of every paired comparison). (1) Each Table 1 row reads "
    "only its own input: on ExplaGraphs the text rows had read TopoRAG's cycle table, and now only TopoRAG and the "
    "ablations that keep 2-cells do (`tests/study/test_prompts.py` builds every row's prompt on every dataset). (2) "
    "The fitted retrievers are supervised as their papers are: SubgraphRAG on the triples of the shortest paths "
    "from the question's entities to its answer, GNN-RAG on the answer nodes, never on the testbed's evidence "
    "cells; on ExplaGraphs, which has no answer entities, their Table 1 cells say so instead of a score. (3) "
    "Testbed version 3 asks every loop question of two scenes that differ in one `on` edge (counterfactual twins "
    "with opposite answers and identical name-level statistics), and twin accuracy, which any rule blind to the "
    "loop scores 0 on, is reported beside accuracy. (4) Evidence recall is reported for yes and for no loop "
    "questions apart, and version 3's retrieval default holds the loop for both; the 2-cells' own effect is "
    "measured at equal edge texts and at equal prompt tokens. (5) Every version 3 default was chosen on "
    "validation and its test split scored once (the table below says which split chose what)."
)
