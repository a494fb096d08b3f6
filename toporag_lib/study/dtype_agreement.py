"""Does the LLM's dtype move the answers? Runs that differ only in `llm_dtype`, compared question by question.

`agreement(records)` finds, in the results ledger, every pair of runs with the same name, dataset, seed and config
apart from `llm_dtype`, and gives per pair both scores, the share of test questions answered with the same string,
the counts of questions only one gets right, and McNemar's exact p. `results/README.md` shows it.

The command trains notebook 04's cpu-quick runs (reusing finished ones) in each dtype and records them:

    python -m toporag_lib.study.dtype_agreement [--dtypes bfloat16 float32] [--methods zero-shot G-Retriever TopoRAG]
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

import pandas as pd

from toporag_lib.hardware import LLM_DTYPES
from toporag_lib.paths import cache_dir, results_dir
from toporag_lib.study.paired_test import paired_comparison
from toporag_lib.training.ledger import config_digest, read_ledger

# Notebook 04's cpu-quick runs: its parameters cell's defaults, as the notebook passes them to `run_methods`.
QUICK_METHODS = ["zero-shot", "G-Retriever", "TopoRAG"]
QUICK_OVERRIDES = {"limits": {"train": 80, "val": 20, "test": 60}, "epochs": 1, "select_by": "val_loss",
                   "seed": 42, "dataset_options": {}}


def _setting(record: dict[str, Any]) -> tuple[str, str, str]:
    """What a run is apart from its LLM dtype: name, dataset and the digest of the rest of its config (seed kept)."""
    config = {k: v for k, v in record["config"].items() if k != "llm_dtype"}
    return record["name"], record["config"]["dataset"], config_digest(config)


def agreement(records: list[dict[str, Any]]) -> pd.DataFrame:
    """One row per pair of runs that differ only in `llm_dtype` (both with test predictions): both dtypes and scores,
    the share of identical answers, and `paired.paired_comparison`'s counts and McNemar p."""
    groups: dict[tuple[str, str, str], dict[str, dict[str, Any]]] = {}
    for r in records:
        if r.get("predictions"):
            groups.setdefault(_setting(r), {})[r["config"].get("llm_dtype", "bfloat16")] = r
    rows = []
    for (name, dataset, _), by_dtype in groups.items():
        dtypes = sorted(by_dtype)
        for i, first in enumerate(dtypes):
            for second in dtypes[i + 1:]:
                a, b = by_dtype[first]["predictions"], by_dtype[second]["predictions"]
                answers = {p["index"]: p["pred"] for p in b}
                rows.append({"dataset": dataset, "method": name, "seed": by_dtype[first]["config"]["seed"],
                             "dtype_a": first, "dtype_b": second,
                             **paired_comparison(a, b, dataset, names=(first, second)),
                             "same_answer": sum(answers.get(p["index"]) == p["pred"] for p in a) / len(a)})
    columns = ["dataset", "method", "seed", "n", "dtype_a", "dtype_b", "score_a", "score_b", "same_answer",
               "only_a", "only_b", "mcnemar_p"]
    return pd.DataFrame(rows, columns=columns)


def main(argv: list[str] | None = None) -> None:
    from toporag_lib.study.experiments import run_methods  # trains: imported only when asked to

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dtypes", nargs="+", default=["bfloat16", "float32"], choices=sorted(LLM_DTYPES))
    parser.add_argument("--methods", nargs="+", default=QUICK_METHODS)
    parser.add_argument("--dataset", default="explagraphs")
    args = parser.parse_args(argv)
    for dtype in args.dtypes:
        print(f"== {dtype}", flush=True)
        run_methods(args.dataset, args.methods, cache_dir() / "runs", {**QUICK_OVERRIDES, "llm_dtype": dtype})
    table = agreement([r for r in read_ledger(results_dir() / "runs") if r["name"] in args.methods])
    print(table.to_string(index=False))


if __name__ == "__main__":
    main(sys.argv[1:])
