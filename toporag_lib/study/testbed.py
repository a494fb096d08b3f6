"""What the synthetic testbed's questions demand: the floors a model must beat, per question family.

For each family of a split: the majority answer and its rate (what a constant answer scores under exact match),
the score of answering "yes no" to everything under G-Retriever's `label in prediction` (which a loose metric
rewards), and the two reference solvers' scores (`toporag_lib.data.scene_solvers`).
"""

from __future__ import annotations

from collections import Counter

import pandas as pd

from toporag_lib.data.dataset import QADataset
from toporag_lib.data.metrics import exact_match_correct, scenegraphs_correct
from toporag_lib.data.scene_solvers import SOLVERS


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
