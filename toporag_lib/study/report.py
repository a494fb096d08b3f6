"""`results/README.md` and the README's headline table, generated: the paper's Tables 1, 2, 5, 6 and 7 beside ours.

Tables 1 and 2 and the paired comparisons are read from the results ledger (`results/runs/`), as `ledger_tables`
builds them: one row per method and config, its score the mean over the seeds run, with their standard deviation,
the number of test questions, the majority-answer floor and the hardware.
The other tables are the CSVs the notebooks write, each labelled with the setup the notebook recorded
(`write_setup`). The last notebook calls `write_results_readme`; `python -m toporag_lib.study.report` rewrites the
README's headline table between its markers.
"""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pandas as pd

from toporag_lib import atomic, hardware
from toporag_lib.settings import merge
from toporag_lib.study import dtype_agreement, paired_runs, paper, provenance, recipe_search
from toporag_lib.study.experiments import TABLE1_METHODS
from toporag_lib.study.ledger_tables import (TESTBED_PAIRS, core_paired, core_table, explagraphs_by_cycles,
                                             full_split_records, full_split_table, ledger_table, table1_full_split,
                                             table1_paired, table2_full_split)
from toporag_lib.training.ledger import read_ledger
from toporag_lib.training.train_config import TrainConfig


def write_setup(path: str | Path, training: dict[str, Any] | None = None, **parameters: Any) -> dict[str, Any]:
    """Save a notebook's parameters with the hardware, library versions and time, as JSON beside its results.

    `training` (sparse `TrainConfig` overrides) is recorded resolved: every training setting the runs used.
    """
    import torch
    import transformers

    if training is not None:
        resolved = TrainConfig.from_dict(merge({"dataset": "synthetic_scenes"}, training)).to_dict()
        parameters = {**{k: v for k, v in resolved.items() if k not in ("dataset", "retrieval")}, **parameters}
    record = {**parameters, "llm": Path(parameters["llm_path"]).name if parameters.get("llm_path")
              else "SmolLM2-135M-Instruct (bundled)", "hardware": hardware.describe(str(parameters.get("device", "cpu"))), "torch": torch.__version__,
              "transformers": transformers.__version__,
              "written": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")}
    atomic.write_text(Path(path), json.dumps(record, indent=1, default=str))
    return record


def markdown_table(frame: pd.DataFrame, digits: int = 3) -> str:
    """A GitHub markdown table; floats rounded to `digits`, missing values as a dash."""
    def cell(value: Any) -> str:
        if value is None or (isinstance(value, float) and pd.isna(value)):
            return "–"
        if isinstance(value, float):
            return f"{value:.{digits}f}"
        return str(value)

    lines = ["| " + " | ".join(map(str, frame.columns)) + " |", "|" + "---|" * len(frame.columns)]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in frame.itertuples(index=False)]
    return "\n".join(lines)


def _read(results: Path, name: str) -> pd.DataFrame | None:
    """The table a notebook wrote, or None when it wrote none or an empty one."""
    path = results / name
    table = pd.read_csv(path) if path.exists() else None
    return table if table is not None and len(table) else None


def _nonempty(table: pd.DataFrame) -> pd.DataFrame | None:
    return table if len(table) else None


def _columns(table: pd.DataFrame | None, keep: list[str]) -> pd.DataFrame | None:
    return None if table is None else table[[c for c in keep if c in table]]


def _setup(results: Path, name: str) -> dict[str, Any]:
    path = results / name
    return atomic.read_json(path) if path.exists() else {}


def _label(setup: dict[str, Any], data: str) -> str:
    if not setup:
        return "_setup not recorded_"
    seeds = setup.get("seeds", [setup.get("seed")])
    parts = [f"{setup['llm']} ({setup.get('llm_dtype', '')}), {setup['hardware']}", data]
    if setup.get("limits"):
        parts.append("questions per split: " + ", ".join(f"{k} {'all' if v is None else v}"
                                                         for k, v in setup["limits"].items()))
    if setup.get("epochs"):
        parts.append(f"{setup['epochs']} epoch(s)")
    parts += [f"seed(s) {seeds}", f"run {setup['written']}"]
    return "_Ours: " + "; ".join(parts) + "._"


def table1(results: Path) -> str | None:
    ours = ledger_table(read_ledger(results / "runs"))
    if ours.empty:
        return None
    keep = ["method", "dataset", "llm_dtype", "n", "seeds", "score", "score_std", "majority"]
    keep += [c for c in ("acc_loop", "twin_loop") if c in ours]
    ours = ours.sort_values(["dataset", "n", "method", "commit"], ascending=[True, False, True, True], kind="stable")
    wide = ours[keep + ["metric", "config", "commit", "superseded"]].rename(columns={"score": "ours", "score_std": "ours std", "majority": "majority answer",
                                      "acc_loop": "ours loop questions"})
    paper_scores = paper.TABLE1.melt(id_vars=["setting", "method"], var_name="dataset", value_name="paper")
    table = wide.merge(paper_scores[["method", "dataset", "paper"]], on=["method", "dataset"], how="left")
    return markdown_table(table)


def _side_by_side(ours: pd.DataFrame | None, theirs: pd.DataFrame, keep: list[str]) -> str | None:
    if ours is None:
        return None
    columns = ["variant"] + [c for c in keep if c in ours]
    merged = ours[columns].merge(theirs.rename(columns={c: f"paper {c}" for c in theirs if c != "variant"}),
                                 on="variant", how="left")
    return markdown_table(merged)


def table7(results: Path) -> str | None:
    ours = _read(results, "06_table7_epoch_time.csv")
    if ours is None:
        return None
    keep = [c for c in ("method", "seconds_per_step", "minutes_per_epoch", "ratio_vs_G-Retriever") if c in ours]
    theirs = paper.TABLE7[paper.TABLE7.setting == "Frozen LLM w/ PT"][["method", "explagraphs_min_per_epoch"]]
    merged = ours[keep].merge(theirs.rename(columns={"explagraphs_min_per_epoch": "paper min/epoch (ExplaGraphs)"}),
                              on="method", how="left")
    return markdown_table(merged)


def results_readme(results: str | Path, profile: str) -> str:
    """The whole document, from what the notebooks wrote into `results`."""
    results = Path(results)
    s04, s05, s06 = (_setup(results, f"{n}_setup.json") for n in ("04", "05", "06"))
    scores = ["score", "score_std", "acc_attribute", "acc_path", "acc_loop", "runs"]
    records = read_ledger(results / "runs")
    testbed = full_split_records(records, "synthetic_scenes")
    sections = [
        ("What changed, and why", provenance.WHAT_CHANGED, ""),
        ("Which split chose what", provenance.default_choices(),
         "_Every testbed default, its value in the code, the split that chose it and the file that shows the "
         "choice (`study.provenance`)._"),
        ("Table 1 · every row on the full splits", table1_full_split(records, TABLE1_METHODS),
         "_From the ledger's full-split runs (`python -m toporag_lib.study.long_runs --suite table1`), mean ± std "
         "over seeds; the testbed (synthetic scenes v2, 600 test questions, exact match) stands in for SceneGraphs, "
         "so its paper column is a different dataset. `testbed contains` is G-Retriever's `label in prediction` on "
         "the same predictions: it credits an untrained LLM's sentence that names the answer, and also a 'yes no' "
         "hedge (see Testbed · floors), so it is not the primary metric. The bundled 135M LLM on a CPU, one epoch: "
         "not the paper's 7B setting. SubgraphRAG and GNN-RAG are adapted to these datasets "
         "(`retrieval.baselines.fitted`), each fitted on the training split's answers as its paper is; ExplaGraphs "
         "has no answer entities, so their cells there say n/a and why. G-Retriever (own code) runs at "
         "G-Retriever's released settings. A score marked superseded is a run a "
         "later fix made obsolete (`study.superseded`): on ExplaGraphs a text row that read TopoRAG's cycle table "
         "(every text row kept the graph's 2-cells), or on the testbed a fitted retrieval trained on the evidence "
         "cells, its answer key; it is shown until its re-run (`long_runs --suite table1`) is in the ledger, and "
         "left out of every paired comparison._"),
        ("Table 1 · every run in the ledger", table1(results),
         "_Ours: every run in the ledger (`runs/`), one row per method and setting (`config`: a digest of its config "
         "without the seed; `commit`: its first run's): the mean over its seeds, their standard deviation, n test "
         "questions (ExplaGraphs: of its 554; synthetic scenes stand in for SceneGraphs), `metric` the one its "
         "score is under. Each record names its command, commit and hardware, and each score was recomputed from "
         "the record's predictions when it was read (`training.record_check`); `superseded` says why a setting no "
         "longer stands (`study.superseded`), among them the testbed's early runs scored by `label in prediction`, "
         "before its metric became exact match._"),
        ("Table 1 · TopoRAG against the other trained rows, paired", table1_paired(records),
         "_Per dataset, over the seeds both ran (`study.paired_runs`, as in the Testbed sections below): a minus b, "
         "each question's correctness averaged over those seeds, 95% t-interval over questions, paired t-test p and "
         "`detectable` (the true difference found with 80% power at α = 0.05). ExplaGraphs' questions are split by "
         "whether their graph has a cycle (only those give TopoRAG a 2-cell), the testbed's by family._"),
        ("Table 2 · ablations on the full splits", table2_full_split(records),
         "_From the ledger's full-split runs, as Table 1 above; each ablation with the frozen LLM and with LoRA. The "
         "paper ablates with LoRA (its TopoRAG row is its Table 1's TopoRAG + LoRA), so its numbers stand beside our "
         "LoRA rows. `testbed loop`: the loop family's accuracy (200 questions, floor 0.50). Paired differences are in "
         "the Testbed sections below._"),
        ("ExplaGraphs · graphs with and without a cycle, paired", explagraphs_by_cycles(records),
         "_ExplaGraphs' 554 test questions split by whether the question's graph has a cycle, from the ledger's "
         "full-split runs, paired as in the Testbed sections below. Only the graphs with a cycle give TopoRAG a "
         "2-cell to use, and there are few of them, so only a large difference could be found there (`detectable`, "
         "80% power). On the acyclic graphs TopoRAG and w/o CRL read the same subcomplex (no 2-cell exists), so "
         "their difference there is training noise: what ExplaGraphs says about 2-cells is bounded by that noise._"),
        ("Table 2 · ablations, notebook 05's runs",
         _side_by_side(_read(results, "05_table2_ablations.csv"), paper.TABLE2, scores),
         _label(s05, "synthetic scenes; the paper's columns are ExplaGraphs and WebQSP")),
        ("Table 5 · cycle bases", _side_by_side(_read(results, "05_table5_cycle_bases.csv"), paper.TABLE5,
                                                scores + ["mean_2cell_length", "coverage_loop"]),
         _label(s05, "synthetic scenes; mean_2cell_length and coverage need no LLM")),
        ("Table 6 · cells per dimension", _read(results, "05_table6_cells_per_dimension.csv"),
         "_Ours: retrieval only (no LLM), synthetic scenes; the paper's row is SceneGraphs._"),
        ("Table 7 · time per epoch", table7(results), _label(s06, "ExplaGraphs training split")),
        ("Recipe search · validation only", _nonempty(recipe_search.search_table(results / "recipe_search")),
         "_`python -m toporag_lib.study.recipe_search`: TopoRAG + LoRA trained on 800 training questions, every "
         "epoch scored on 200 validation questions, the best epoch kept, early stopping after 2 epochs without a "
         "better one; the test split is never read. One seed each: a search, not an estimate (one standard error "
         "on 200 questions is about 0.035). `majority`: the score of the most common label given to every "
         "validation question, the floor. `question_first`: the question before the graph text in the prompt; "
         "`loop_one_answer_share`: the share of loop questions given the run's most common answer (1.0: one "
         "answer to all); `twin_loop`: both twins of a loop pair right._"),
        ("Core comparison · at the chosen recipe",
         _columns(core_table(records), ["dataset", "method", "n", "seeds", "score", "score_std", "majority",
                                        "acc_attribute", "acc_path", "acc_loop", "twin_loop", "one_answer_max",
                                        "closed", "commit"]),
         "_`python -m toporag_lib.study.long_runs --suite core`: per dataset at the recipe its search chose on "
         "validation (above), trained on its 800 training questions, the epoch chosen on its 200 validation "
         "questions, scored once on the whole test split; mean ± std over seeds. `twin_loop`: both twins of a loop "
         "pair right (a constant answer scores 0); `one_answer_max`: over the seeds, the largest share of the loop "
         "questions (ExplaGraphs: of all) given the run's most common answer; `closed`: the answer in the closed vocabulary the LLM finds most "
         "likely (secondary); `majority`: always the most common label._"),
        ("Core comparison · paired", core_paired(records),
         "_Over the seeds both ran (`study.paired_runs`): a minus b, each question's (or, for `loop twins`, each "
         "twin pair's) correctness averaged over the seeds, 95% t-interval, paired t-test p and `detectable`, the "
         "true difference found with 80% power at α = 0.05. ExplaGraphs by whether the question's graph has a "
         "cycle (only those give TopoRAG a 2-cell)._"),
        ("LLM dtype · the same runs in two dtypes, paired", _nonempty(dtype_agreement.agreement(records)),
         "_Every pair of ledger runs that differ only in `llm_dtype` (`python -m toporag_lib.study.dtype_agreement`: "
         "notebook 04's cpu-quick runs in bfloat16 and float32): both scores, the share of test questions answered "
         "with the same string, the questions only one gets right and McNemar's exact p. `llm_dtype = \"auto\"` "
         "picks float32 on CPUs without native bf16, so this is what that choice does to the answers._"),
        ("Testbed · floors", _read(results, "01_testbed_floors.csv"),
         "_Synthetic scenes v2, test split: the majority answer's rate, 'yes no' under `label in prediction`, and the "
         "two reference solvers (exact match)._"),
        ("Testbed · evidence recall", _columns(_read(results, "03_evidence_recall.csv"),
                                               ["method", "family", "evidence_recall", "evidence_recall_lo",
                                                "evidence_recall_hi", "covers_answer", "tokens", "n"]),
         "_Share of test questions whose evidence cells are all in the retrieved subcomplex, with its 95% Wilson "
         "interval; answer coverage; prompt tokens (no LLM)._"),
        ("Testbed · the loop's token price", _columns(_read(results, "03_budget_frontier.csv"),
                                                      ["method", "tokens", "loop_evidence_recall",
                                                       "path_covers_answer", "n"]),
         "_Per retrieval setting (notebook 03's budget grid and the evidence-recall methods): mean prompt tokens over "
         "the test split, the share of loop questions whose whole loop is retrieved, the share of path questions "
         "whose answer object is (intervals in `03_budget_frontier.csv`)._"),
        ("Testbed v3 · retrieval chosen on validation", _read(results, "03_v3_retrieval_choice.csv"),
         "_Testbed version 3 (twins), validation split only: per setting, the share of yes and of no loop questions "
         "whose whole loop is retrieved, and mean prompt tokens; `chosen` is the cheapest setting holding the loop "
         "for at least 0.90 of each, the registry's version 3 default._"),
        ("Testbed v3 · evidence recall, the test split scored once",
         _columns(_read(results, "03_v3_evidence_recall.csv"),
                  ["method", "family", "evidence_recall", "evidence_recall_lo", "evidence_recall_hi",
                   "covers_answer", "tokens", "n"]),
         "_Version 3's test split, once per setting: the default, the same without 2-cells and G-Retriever at the "
         "same edge texts and prizes (the 2-cells' own effect), a TopoRAG budget chosen on validation to cost no "
         "more tokens than G-Retriever, and the version 2 default. 95% Wilson intervals._"),
        ("Testbed · LLM-free probe", _columns(_read(results, "05_probe.csv"),
                                              ["readout", "encoder", "two_cells", "input", "family", "accuracy",
                                               "std", "twin", "twin_std", "seeds", "n", "pairs"]),
         "_Each encoder's accuracy on the test split (mean and std over seeds), and on loop questions twin accuracy "
         "(both twins right; any rule blind to the loop scores 0, a constant answer 0), per readout: attention "
         "conditioned on the question, or the mean (`study.probe`)._"),
        ("Testbed · LLM-free probe, with against without 2-cells", _read(results, "05_probe_paired.csv"),
         "_Cellular encoder with minus without 2-cells, per readout: mean per-question (`accuracy`) or per-twin-pair "
         "(`twin`) difference in correctness averaged over the seeds, 95% t-interval, paired t-test p and "
         "`detectable`, the true difference found with 80% power at α = 0.05._"),
        ("Testbed · LLM runs on the full split", _columns(_nonempty(full_split_table(
            records, "synthetic_scenes")), ["method", "n", "seeds", "score", "score_std",
                                                                  "majority", "acc_attribute", "acc_path",
                                                                  "acc_loop", "commit"]),
         "_From the ledger: `python -m toporag_lib.study.long_runs` runs, mean and std over seeds; the loop "
         "family's floor is 0.50 (Testbed · floors)._"),
        ("Testbed · TopoRAG against G-Retriever with the LLM, paired", _nonempty(paired_runs.pooled(testbed)),
         "_Over the seeds both ran: each test question's correctness averaged over those seeds, TopoRAG minus "
         "G-Retriever, 95% t-interval over questions, paired t-test p, and `detectable`: the true difference these "
         "questions find with 80% power at α = 0.05 (`study.paired_runs`); `one_answer`: the share of "
         "predictions that are the run's most common one (1.0: the same answer to every question; per-seed "
         "McNemar tests in `05_testbed_llm_paired.csv`)._"),
        ("Testbed · TopoRAG against its ablations, paired", _nonempty(paired_runs.pairs(testbed, TESTBED_PAIRS)),
         "_As above, for each pair over the seeds both ran: TopoRAG minus each ablation of the paper's Table 2 "
         "(w/o CRL: no 2-cells; w/o TSR: shortest-path retrieval; w/o MTR: a GCN encoder), frozen and with LoRA._"),
    ]
    lines = [
        "# Results",
        "",
        f"Written by `notebooks/07_results.ipynb` under the `{profile}` profile. Every number labelled *ours* was "
        "measured by the notebooks of this run; every *paper* number is the TopoRAG paper's (Llama-2-7B on two "
        "A6000 GPUs, as reported, not re-measured). Our default runs use a 135M-parameter LLM on a CPU with "
        "subsets of the data and one epoch: they show the pipeline and the *direction* of each effect, not the "
        "paper's ceiling. The executed notebooks (with every figure) are in `notebooks/`.",
        "",
    ]
    for title, table, label in sections:
        lines += [f"## {title}", ""]
        if table is None:
            lines += ["_not produced in this run_", ""]
            continue
        lines += [table if isinstance(table, str) else markdown_table(table), "", label, ""]
    figures = sorted(p.name for p in results.glob("*.png"))
    lines += ["## Figures", ""] + [f"- [{name}]({name})" for name in figures] + [""]
    return "\n".join(lines)


def write_results_readme(results: str | Path, profile: str) -> Path:
    path = Path(results) / "README.md"
    atomic.write_text(path, results_readme(results, profile))
    return path


HEADLINE_START = "<!-- headline: generated from results/runs/ by `python -m toporag_lib.study.report`; do not edit -->"
HEADLINE_END = "<!-- /headline -->"


HEADLINE_METHODS = ("G-Retriever", "TopoRAG")


def headline(results: str | Path) -> str:
    """The README's headline table: the head-to-head pair's (`HEADLINE_METHODS`) ledger rows on full splits, and on
    subsets those of the newest commit that finished a run (every other method is in `results/README.md`'s Table 1),
    means over seeds, with n, the majority-answer floor and hardware."""
    records = [r for r in read_ledger(Path(results) / "runs") if r["name"] in HEADLINE_METHODS]
    full = [r for r in records if all(v is None for v in r["config"]["limits"].values())]
    subsets = [r for r in records if r not in full]
    if subsets:
        newest = max(subsets, key=lambda r: r["finished"])["commit"]
        subsets = [r for r in subsets if r["commit"] == newest]
    records = full + subsets
    table = ledger_table(records)
    if table.empty:
        return "_No run in the ledger yet._"
    keep = ["dataset", "method", "n", "seeds", "score", "score_std", "majority"]
    keep += [c for c in ("acc_loop", "twin_loop") if c in table]
    ordered = table[keep + ["hardware", "commit", "superseded"]].sort_values(["dataset", "n", "method"],
                                                               ascending=[True, False, True])
    return markdown_table(ordered)


def write_readme_headline(readme: str | Path, results: str | Path) -> Path:
    """Replace the table between the README's headline markers with `headline(results)`."""
    readme = Path(readme)
    text = readme.read_text()
    if HEADLINE_START not in text or HEADLINE_END not in text:
        raise ValueError(f"{readme} has no headline markers ({HEADLINE_START} ... {HEADLINE_END})")
    before, rest = text.split(HEADLINE_START, 1)
    after = rest.split(HEADLINE_END, 1)[1]
    atomic.write_text(readme, f"{before}{HEADLINE_START}\n{headline(results)}\n{HEADLINE_END}{after}")
    return readme


def main() -> None:
    from toporag_lib.paths import PROJECT_ROOT, results_dir

    print(write_readme_headline(PROJECT_ROOT / "README.md", results_dir()))


if __name__ == "__main__":
    main()
