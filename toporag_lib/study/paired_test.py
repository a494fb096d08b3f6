"""Paired comparison of two runs on the same questions: who is right where, and McNemar's exact test.

Two methods evaluated on the same test split differ on a few questions only; the exact McNemar test asks whether
the questions only one of them gets right split evenly (two-sided binomial test on the discordant pairs). A
command line compares two run folders (as written by `toporag_lib.training.trainer`):

    python -m toporag_lib.study.paired_test runs/topo runs/gretriever [--split test]
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from scipy import stats
from scipy.stats import binomtest

from toporag_lib import atomic
from toporag_lib.data.registry import correct_for
from toporag_lib.training.run_files import CONFIG, predictions_path, read_predictions


def mcnemar_exact(only_a: int, only_b: int) -> float:
    """Two-sided exact McNemar p-value from the discordant counts (1.0 when there are none)."""
    if only_a < 0 or only_b < 0:
        raise ValueError(f"counts must be non-negative, got {only_a} and {only_b}")
    discordant = only_a + only_b
    return binomtest(only_a, discordant, 0.5).pvalue if discordant else 1.0


def mean_difference(diffs: Sequence[float]) -> dict[str, float]:
    """Mean of per-question paired differences d_i, its 95% t-interval mean ± t(0.975, n-1)·s/√n, the paired
    t-test's p, and `detectable`: the true mean difference a two-sided test at α = 0.05 finds with 80% power,
    (t(0.975, n-1) + t(0.8, n-1))·s/√n. Interval and `detectable` are nan below two questions, and where every
    difference is the same (s = 0: two runs that give one answer each, say), since there is no spread to scale them."""
    d = np.asarray(diffs, dtype=float)
    n = len(d)
    if n == 0:
        raise ValueError("no paired differences: nothing to compare")
    mean = float(d.mean())
    if n < 2:
        return {"diff": mean, "ci_lo": float("nan"), "ci_hi": float("nan"), "p": float("nan"),
                "detectable": float("nan"), "n": n}
    sem = d.std(ddof=1) / np.sqrt(n)
    if sem == 0:
        return {"diff": mean, "ci_lo": float("nan"), "ci_hi": float("nan"), "p": 1.0 if mean == 0 else 0.0,
                "detectable": float("nan"), "n": n}
    half = stats.t.ppf(0.975, n - 1) * sem
    p = float(stats.ttest_1samp(d, 0.0).pvalue)
    detectable = (stats.t.ppf(0.975, n - 1) + stats.t.ppf(0.8, n - 1)) * sem
    return {"diff": mean, "ci_lo": mean - half, "ci_hi": mean + half, "p": p, "detectable": float(detectable), "n": n}


def paired_comparison(records_a: list[dict], records_b: list[dict], dataset_name: str,
                      names: tuple[str, str] = ("a", "b")) -> dict[str, Any]:
    """Counts of questions both, only a, only b or neither get right, both scores and McNemar's p.

    Records are prediction records (`index`, `label`, `pred`); both runs must hold the same questions, matched
    by `index`, with the same labels.
    """
    if not records_a:
        raise ValueError(f"run {names[0]!r} has no predictions to compare")
    by_index_b = {r["index"]: r for r in records_b}
    if len(by_index_b) != len(records_b) or len({r["index"] for r in records_a}) != len(records_a):
        raise ValueError("a run repeats a question index; cannot pair its predictions")
    missing = sorted({r["index"] for r in records_a} ^ set(by_index_b))
    if missing:
        raise ValueError(f"runs {names[0]!r} and {names[1]!r} hold different questions "
                         f"({len(missing)} indices in only one, e.g. {missing[:5]})")
    correct = correct_for(dataset_name)
    counts = {"both": 0, "only_a": 0, "only_b": 0, "neither": 0}
    for a in records_a:
        b = by_index_b[a["index"]]
        if a["label"] != b["label"]:
            raise ValueError(f"question {a['index']} has label {a['label']!r} in {names[0]!r} "
                             f"but {b['label']!r} in {names[1]!r}")
        right_a, right_b = correct(a["pred"], a["label"]), correct(b["pred"], b["label"])
        key = "both" if right_a and right_b else "only_a" if right_a else "only_b" if right_b else "neither"
        counts[key] += 1
    n = len(records_a)
    return {"a": names[0], "b": names[1], "n": n, **counts,
            "score_a": (counts["both"] + counts["only_a"]) / n, "score_b": (counts["both"] + counts["only_b"]) / n,
            "mcnemar_p": mcnemar_exact(counts["only_a"], counts["only_b"])}


def load_run(run_dir: str | Path, split: str = "test") -> tuple[str, list[dict]]:
    """(dataset name, prediction records) of a run folder written by `toporag_lib.training.trainer`."""
    run_dir = Path(run_dir)
    config, predictions = run_dir / CONFIG, predictions_path(run_dir, split)
    for path in (config, predictions):
        if not path.exists():
            raise FileNotFoundError(f"{path} is missing: is {run_dir} a finished run evaluated on {split!r}?")
    return atomic.read_json(config)["dataset"], read_predictions(predictions)


def compare_runs(run_a: str | Path, run_b: str | Path, split: str = "test") -> dict[str, Any]:
    """`paired_comparison` of two run folders; both must be on the same dataset."""
    dataset_a, records_a = load_run(run_a, split)
    dataset_b, records_b = load_run(run_b, split)
    if dataset_a != dataset_b:
        raise ValueError(f"{run_a} is on {dataset_a!r} but {run_b} is on {dataset_b!r}")
    return paired_comparison(records_a, records_b, dataset_a, (Path(run_a).name, Path(run_b).name))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("run_a", help="a run folder (config.json, predictions_<split>.jsonl)")
    parser.add_argument("run_b", help="the run folder to compare it with")
    parser.add_argument("--split", default="test")
    args = parser.parse_args(argv)
    print(json.dumps(compare_runs(args.run_a, args.run_b, args.split), indent=1))


if __name__ == "__main__":
    main()
