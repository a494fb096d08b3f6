"""`results/README.md`: the paper's Tables 1, 2, 5, 6 and 7 beside ours, each of our numbers labelled with the
model, hardware, data and seeds that produced it. Notebooks record their setup with `write_setup`; the last
notebook calls `write_results_readme`.
"""

from __future__ import annotations

import json
import os
import platform
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pandas as pd

from toporag_lib import atomic, paper


def hardware() -> str:
    """A short description of where this process runs."""
    import torch

    if torch.cuda.is_available():
        return f"{torch.cuda.get_device_name(0)} x{torch.cuda.device_count()}"
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return f"CPU, {cores} cores ({platform.machine()})"


def write_setup(path: str | Path, **parameters: Any) -> dict[str, Any]:
    """Save a notebook's parameters with the hardware, library versions and time, as JSON beside its results."""
    import torch
    import transformers

    record = {**parameters, "llm": Path(parameters["llm_path"]).name if parameters.get("llm_path")
              else "SmolLM2-135M-Instruct (bundled)", "hardware": hardware(), "torch": torch.__version__,
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
    path = results / name
    return pd.read_csv(path) if path.exists() else None


def _setup(results: Path, name: str) -> dict[str, Any]:
    path = results / name
    return json.loads(path.read_text()) if path.exists() else {}


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
    ours = _read(results, "04_training_results.csv")
    if ours is None:
        return None
    wide = ours.pivot_table(index="method", columns="dataset", values="score", sort=False).reset_index()
    wide = wide.rename(columns={"explagraphs": "ours ExplaGraphs", "synthetic_scenes": "ours synthetic scenes"})
    if "acc_loop" in ours:
        loops = ours[ours.dataset == "synthetic_scenes"][["method", "acc_loop"]]
        wide = wide.merge(loops.rename(columns={"acc_loop": "ours loop questions"}), on="method", how="left")
    table = paper.TABLE1.rename(columns={"explagraphs": "paper ExplaGraphs", "scenegraphs": "paper SceneGraphs",
                                         "webqsp_hit": "paper WebQSP (Hit)"}).merge(wide, on="method", how="right")
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
    sections = [
        ("Table 1 · main results", table1(results), _label(s04, "ExplaGraphs (test questions of its 1,659/553/554 "
                                                                "split) and synthetic scenes (ours, in place of "
                                                                "SceneGraphs)")),
        ("Table 2 · ablations", _side_by_side(_read(results, "05_table2_ablations.csv"), paper.TABLE2, scores),
         _label(s05, "synthetic scenes; the paper's columns are ExplaGraphs and WebQSP")),
        ("Table 5 · cycle bases", _side_by_side(_read(results, "05_table5_cycle_bases.csv"), paper.TABLE5,
                                                scores + ["mean_2cell_length", "coverage_loop"]),
         _label(s05, "synthetic scenes; mean_2cell_length and coverage need no LLM")),
        ("Table 6 · cells per dimension", _read(results, "05_table6_cells_per_dimension.csv"),
         "_Ours: retrieval only (no LLM), synthetic scenes; the paper's row is SceneGraphs._"),
        ("Table 7 · time per epoch", table7(results), _label(s06, "ExplaGraphs training split")),
    ]
    lines = [
        "# Results",
        "",
        f"Written by `notebooks/07_results.ipynb` under the `{profile}` profile. Every number labelled *ours* was "
        "measured by the notebooks of this run; every *paper* number is the TopoRAG paper's (Llama-2-7B on two "
        "A6000 GPUs, as reported, not re-measured). Our default runs use a 135M-parameter LLM on a CPU with "
        "subsets of the data and one epoch: they show the pipeline and the *direction* of each effect, not the "
        "paper's ceiling. The executed notebooks (with every figure) are in `notebooks/`, also as HTML.",
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
