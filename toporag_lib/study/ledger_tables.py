"""The results ledger (`results/runs/`, `training.ledger`) read back as tables: one row per method and setting with
its mean over seeds and the majority-answer floor (`ledger_table`); the paper's Tables 1 and 2 on the full splits
beside the paper's numbers; and the full-split runs compared question by question (`paired_runs`). `report` sets
them into `results/README.md`; notebooks 04 and 05 and `long_runs` read the full-split runs through them.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from toporag_lib.data import load_dataset
from toporag_lib.data.registry import majority_score, scoring_metric
from toporag_lib.study import long_runs, paired_runs, paper
from toporag_lib.study.recipe_search import one_answer_share
from toporag_lib.study.experiments import ABLATIONS, NOT_APPLICABLE
from toporag_lib.study.floors_and_evidence import with_cycle_families
from toporag_lib.study.superseded import standing, superseded
from toporag_lib.training.ledger import config_digest, run_id
from toporag_lib.training.train_config import TrainConfig


def ledger_table(records: list[dict[str, Any]]) -> pd.DataFrame:
    """One row per (dataset, method name, config apart from the seed): mean and standard deviation of the score and
    of each family's accuracy (and twin accuracy, `twin_<family>`, where questions come as twins) over the seeds,
    the closed-answer score (`closed`, where the run has one: `evaluation.closed_answer_metrics`), the
    majority-answer baseline on the same questions, n (test questions), seeds, the LLM's dtype, the setting's config
    digest (`ledger.config_digest` without the seed), the metric its scores are under (`metric`: the dataset's, or
    the earlier one a record read by `ledger.read_ledger` was scored under, its "scored_under"), the first run's
    hardware, command and commit, and why the setting is superseded ("" when it stands: `study.superseded`)."""
    rows = []
    for r in records:
        config = {k: v for k, v in r["config"].items() if k != "seed"}
        metrics, dataset, scored_under = r["metrics"], r["config"]["dataset"], r.get("scored_under", "")
        rows.append({"dataset": dataset, "method": r["name"], "metric": scoring_metric(dataset, scored_under)[0],
                     "seed": r["config"]["seed"], "llm_dtype": r["config"].get("llm_dtype", "bfloat16"),
                     "n": metrics["n"], "score": metrics["score"],
                     "majority": majority_score(dataset, r.get("predictions", []), scored_under),
                     **{f"acc_{k}": v for k, v in metrics.get("per_family", {}).items()},
                     **{f"twin_{k}": v for k, v in metrics.get("twin", {}).items()},
                     **{f"secondary_{k}": v for k, v in metrics.get("secondary", {}).items()},
                     **({"closed": metrics["closed"]["score"]} if "closed" in metrics else {}),
                     "config": config_digest(config),
                     "hardware": r["hardware"], "command": r["command"], "run_id": r["run_id"],
                     "commit": (r.get("commit") or "")[:7], "finished": r.get("finished", ""),
                     "superseded": superseded(r)})
    if not rows:
        return pd.DataFrame(columns=["dataset", "method", "metric", "n", "seeds", "score", "score_std"])
    frame = pd.DataFrame(rows).sort_values("finished", kind="stable")  # "first" is the earliest run
    scores = [c for c in frame if c in ("score", "majority", "closed")
              or c.startswith(("acc_", "twin_", "secondary_"))]
    # keys added later, at their old value, agree; scores under different metrics are never averaged
    grouped = frame.groupby(["dataset", "method", "config", "metric"], sort=False)
    table = grouped[scores].mean()
    table["score_std"] = grouped["score"].std()
    table["seeds"] = grouped["seed"].apply(lambda s: ", ".join(str(x) for x in sorted(s)))
    for column in ("n", "llm_dtype", "hardware", "command", "commit", "superseded"):
        table[column] = grouped[column].first()
    table = table.reset_index()
    front = ["dataset", "method", "llm_dtype", "n", "seeds", "score", "score_std", "majority"]
    return table[front + [c for c in table if c not in front]]


def full_split_records(records: list[dict[str, Any]], dataset: str) -> list[dict[str, Any]]:
    """The ledger records of runs on the dataset with its default options (for the testbed: 1,000 images), every
    split whole."""
    default = TrainConfig(dataset=dataset)
    return [r for r in records if r["config"]["dataset"] == dataset
            and r["config"]["dataset_options"] == default.dataset_options
            and all(v is None for v in r["config"]["limits"].values())]


def full_split_table(records: list[dict[str, Any]], dataset: str) -> pd.DataFrame:
    """`ledger_table` of the full-split runs: per method, mean and std over seeds of the score and of each family's
    accuracy, the majority-answer baseline, n and seeds."""
    return ledger_table(full_split_records(records, dataset))


# Per dataset: its column label, and extra columns shown beside its score (label suffix: `ledger_table` column). The
# testbed's metric is exact match, under which an untrained LLM's sentence scores 0; G-Retriever's `label in
# prediction` ("contains") shows what those rows do answer.
FULL_SPLIT_DATASETS = {"explagraphs": ("ExplaGraphs", {}),
                       "synthetic_scenes": ("testbed", {"contains": "secondary_contains"})}


# The testbed's paired comparisons beyond the frozen TopoRAG / G-Retriever pair (results README): the ablations.
TESTBED_PAIRS = [(base, f"{base} {name}") for base in ("TopoRAG", "TopoRAG + LoRA")
                 for name, change in ABLATIONS.items() if change]

# Table 1's pairs on both datasets: TopoRAG + LoRA against the other LoRA-tuned rows, and the frozen TopoRAG against
# G-Retriever at its released settings.
TABLE1_PAIRS = [("TopoRAG + LoRA", "LoRA (text only)"), ("TopoRAG + LoRA", "G-Retriever + LoRA"),
                ("TopoRAG + LoRA", "GNN-RAG"), ("TopoRAG", "G-Retriever (own code)")]


# ExplaGraphs' pairs split by whether the question's graph has a cycle: what 2-cells can add there, and the baseline.
EXPLAGRAPHS_PAIRS = [("TopoRAG", "TopoRAG w/o CRL (no 2-cells)"), ("TopoRAG", "G-Retriever")]


def full_split_paired(records: list[dict[str, Any]], dataset: str,
                      pairs: list[tuple[str, str]]) -> pd.DataFrame:
    """`paired_runs.pairs` over the dataset's full-split runs with predictions; ExplaGraphs' questions are grouped by
    whether their graph has a cycle (`floors_and_evidence.with_cycle_families`: only those give TopoRAG a 2-cell),
    the testbed's by family. Superseded runs (`study.superseded`) are left out."""
    runs = [r for r in standing(full_split_records(records, dataset)) if r.get("predictions")]
    if runs and dataset == "explagraphs":
        runs = with_cycle_families(runs, load_dataset(dataset))
    return paired_runs.pairs(runs, pairs)


def explagraphs_by_cycles(records: list[dict[str, Any]]) -> pd.DataFrame | None:
    """`EXPLAGRAPHS_PAIRS` on ExplaGraphs' test questions whose graph has a cycle, on the acyclic ones and on all;
    None without such runs."""
    table = full_split_paired(records, "explagraphs", EXPLAGRAPHS_PAIRS)
    return None if table.empty else table


def table1_paired(records: list[dict[str, Any]]) -> pd.DataFrame | None:
    """`TABLE1_PAIRS` on each of `FULL_SPLIT_DATASETS` (`full_split_paired`), one table with a `dataset` column;
    None without such runs."""
    tables = [table.assign(dataset=dataset)[["dataset", *table.columns]] for dataset in FULL_SPLIT_DATASETS
              if not (table := full_split_paired(records, dataset, TABLE1_PAIRS)).empty]
    return pd.concat(tables, ignore_index=True) if tables else None


# The core comparison (`long_runs --suite core`): TopoRAG + LoRA against the same run without its 2-cells (the
# question this project exists for) and against G-Retriever + LoRA.
CORE_PAIRS = [("TopoRAG + LoRA", "TopoRAG + LoRA w/o CRL (no 2-cells)"), ("TopoRAG + LoRA", "G-Retriever + LoRA")]


def core_records(records: list[dict[str, Any]], dataset: str) -> list[dict[str, Any]]:
    """The ledger records of the core suite's runs on `dataset` (`long_runs.core_jobs`, matched by run id)."""
    ids = {run_id(job.config().to_dict()) for job in long_runs.core_jobs() if job.dataset == dataset}
    return [r for r in records if run_id(r["config"]) in ids]


def core_table(records: list[dict[str, Any]]) -> pd.DataFrame | None:
    """`ledger_table` of the core suite's runs on both datasets (mean and std over seeds, the majority floor, per
    family and twin accuracy, the closed-answer score), and `one_answer_max`: over the seeds, the largest share of
    one answer among the loop questions (the testbed) or all questions (ExplaGraphs), the collapse the recipe must
    avoid; None before any has run."""
    runs = [r for d in long_runs.CORE_DATASETS for r in core_records(records, d)]
    table = ledger_table(runs)
    if table.empty:
        return None
    shares = pd.DataFrame([{"dataset": r["config"]["dataset"], "method": r["name"],
                            "one_answer_max": one_answer_share(r["predictions"], "loop" if any(
                                p.get("family") == "loop" for p in r["predictions"]) else None)} for r in runs])
    return table.merge(shares.groupby(["dataset", "method"], as_index=False).one_answer_max.max(), how="left")


def core_paired(records: list[dict[str, Any]]) -> pd.DataFrame | None:
    """`CORE_PAIRS` per dataset over the seeds both ran (`paired_runs.pairs`): the testbed by family and by twin
    pair, ExplaGraphs by whether the question's graph has a cycle; None before a pair has a common seed."""
    tables = []
    for dataset in long_runs.CORE_DATASETS:
        runs = core_records(records, dataset)
        if runs and dataset == "explagraphs":
            runs = with_cycle_families(runs, load_dataset(dataset))
        if not (table := paired_runs.pairs(runs, CORE_PAIRS)).empty:
            tables.append(table.assign(dataset=dataset)[["dataset", *table.columns]])
    return pd.concat(tables, ignore_index=True) if tables else None


def _mean_std(row: pd.Series) -> str:
    std = row["score_std"]
    return f"{row['score']:.3f}" + ("" if pd.isna(std) else f" ± {std:.3f}")


def full_split_side_by_side(records: list[dict[str, Any]], rows: list[tuple[str, str]], theirs: pd.DataFrame,
                            key: str, paper_columns: dict[str, str | None],
                            extras: dict[str, dict[str, str]] | None = None) -> pd.DataFrame:
    """Per (row label, ledger method name) in `rows`' order, for each of `FULL_SPLIT_DATASETS`: our mean ± std over
    seeds on the full split with n, the seeds and the dataset's extra columns (`extras` replaces them), beside the
    paper's number (`theirs[paper_columns[dataset]]` at `theirs[key] == label`; no column where it is None); "not
    run" where the ledger has no full-split run of that method, "n/a" and the reason where the method cannot be run
    as its paper describes on the dataset (`experiments.NOT_APPLICABLE`). Where a method has several settings on a split, a
    standing one before a superseded one (`study.superseded`; shown with the reason), then the one with the most
    seeds (then the newest commit's) is shown. A last row holds each dataset's majority answer."""
    out = []
    tables = {d: full_split_table(records, d) for d in FULL_SPLIT_DATASETS}
    for label, method in rows:
        row: dict[str, Any] = {key: label}
        hardware = set()
        for dataset, (name, default_extras) in FULL_SPLIT_DATASETS.items():
            shown = default_extras if extras is None else extras.get(dataset, {})
            ours = tables[dataset][tables[dataset]["method"] == method] if not tables[dataset].empty else None
            if (method, dataset) in NOT_APPLICABLE:
                row.update({name: f"n/a: {NOT_APPLICABLE[(method, dataset)]}", **{f"{name} {e}": "" for e in shown}})
                row.update({f"{name} n": "", f"{name} seeds": ""})
            elif ours is None or ours.empty:
                row.update({name: "not run", **{f"{name} {e}": "" for e in shown}})
                row.update({f"{name} n": "", f"{name} seeds": ""})
            else:
                ranked = ours.assign(count=ours["seeds"].str.count(","), stands=ours["superseded"] == "")
                best = ranked.sort_values(["stands", "count"], kind="stable").iloc[-1]
                row[name] = _mean_std(best) + (f" (superseded: {best['superseded']})" if best["superseded"] else "")
                for suffix, column in shown.items():
                    value = best.get(column)
                    row[f"{name} {suffix}"] = "" if value is None or pd.isna(value) else f"{value:.3f}"
                row.update({f"{name} n": int(best["n"]), f"{name} seeds": best["seeds"]})
                hardware.add(best["hardware"])
            if paper_columns.get(dataset):
                paper_row = theirs[theirs[key] == label]
                column = paper_columns[dataset]
                row[f"paper {column}"] = float(paper_row[column].iloc[0]) if len(paper_row) else ""
        row["hardware"] = "; ".join(sorted(hardware))
        out.append(row)
    floor: dict[str, Any] = {**dict.fromkeys(out[0] if out else [], ""), key: "majority answer (floor)"}  # no NaN
    for dataset, (name, _) in FULL_SPLIT_DATASETS.items():
        known = tables[dataset]["majority"].dropna() if not tables[dataset].empty else pd.Series(dtype=float)
        floor[name] = f"{known.iloc[0]:.3f}" if len(known) else "not run"
    out.append(floor)
    return pd.DataFrame(out).astype(object).fillna("")


def table1_full_split(records: list[dict[str, Any]], methods: list[str]) -> pd.DataFrame:
    """The paper's Table 1 on full splits: ExplaGraphs (554 test questions) and the testbed (standing in for
    SceneGraphs), a row per method in `methods`' order (`full_split_side_by_side`)."""
    return full_split_side_by_side(records, [(m, m) for m in methods], paper.TABLE1, "method",
                                   {"explagraphs": "explagraphs", "synthetic_scenes": "scenegraphs"})


def table2_full_split(records: list[dict[str, Any]]) -> pd.DataFrame:
    """The paper's Table 2 on full splits: TopoRAG and each of its ablations (`experiments.ABLATIONS`), frozen and
    with LoRA (ledger names "TopoRAG <variant>", "TopoRAG + LoRA <variant>"), with the testbed's loop-family accuracy.
    The paper ablates with LoRA, so its numbers stand beside the LoRA rows only; it has no SceneGraphs column here."""
    rows, theirs = [], paper.TABLE2.copy()
    for base in ("TopoRAG", "TopoRAG + LoRA"):
        rows += [(name, name) for name in (base if not change else f"{base} {variant}"
                                           for variant, change in ABLATIONS.items())]
    theirs["variant"] = ["TopoRAG + LoRA" if v == "TopoRAG" else f"TopoRAG + LoRA {v}" for v in theirs["variant"]]
    return full_split_side_by_side(records, rows, theirs, "variant",
                                   {"explagraphs": "explagraphs", "synthetic_scenes": None},
                                   {"synthetic_scenes": {"loop": "acc_loop", "contains": "secondary_contains"}})
