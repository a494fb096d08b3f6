"""Notebooks run headless with papermill on small parameters, and write what they promise to results/."""

import json
from pathlib import Path

import nbformat
import pandas as pd
import pytest
from nbformat.v4 import new_code_cell, new_notebook

from toporag_lib.paths import PROJECT_ROOT
from toporag_lib.study import reproduce, floors_and_evidence

NOTEBOOKS = PROJECT_ROOT / "notebooks"


def test_every_notebook_has_a_parameters_cell():
    notebooks = reproduce.numbered_notebooks(NOTEBOOKS)
    assert notebooks, "no numbered notebooks found"
    for path in notebooks:
        tags = [c.metadata.get("tags", []) for c in nbformat.read(path, as_version=4).cells]
        assert sum("parameters" in t for t in tags) == 1, path.name


def test_notebooks_are_committed_without_outputs():
    for path in reproduce.numbered_notebooks(NOTEBOOKS):
        cells = nbformat.read(path, as_version=4).cells
        assert all(not c.get("outputs") for c in cells if c.cell_type == "code"), path.name


def test_01_datasets_writes_table4(isolated_cache):
    outcomes = reproduce.reproduce("cpu-quick", only=["01"], notebooks=[NOTEBOOKS / "01_datasets.ipynb"])
    assert [o.status for o in outcomes] == ["ran"], outcomes
    results = isolated_cache / "results"
    table = pd.read_csv(results / "01_dataset_stats.csv").set_index("dataset")
    assert table.loc["explagraphs", "graphs"] == 2766
    assert table.loc["explagraphs", "avg_nodes"] == pytest.approx(5.17, abs=0.01)
    assert table.loc["explagraphs", "avg_edges"] == pytest.approx(4.25, abs=0.01)
    assert {"synthetic_scenes", "webqsp"} <= set(table.index)
    assert (results / "01_dataset_histograms.png").stat().st_size > 10_000
    assert not (results / "notebooks" / "01_datasets.html").exists()  # one form: the executed notebook
    # unchanged notebook, parameters and library: the second run skips it
    again = reproduce.reproduce("cpu-quick", only=["01"], notebooks=[NOTEBOOKS / "01_datasets.ipynb"])
    assert [o.status for o in again] == ["skipped"]


def write_notebook(path: Path, *sources: str) -> Path:
    nb = new_notebook(cells=[new_code_cell(s) for s in sources])
    nb.cells[0].metadata["tags"] = ["parameters"]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, path)
    return path


def test_a_failure_names_notebook_and_cell_and_the_others_still_run(tmp_path, isolated_cache):
    bad = write_notebook(tmp_path / "01_bad.ipynb", "x = 1", "y = 2", "raise ValueError('boom')")
    good = write_notebook(tmp_path / "02_good.ipynb", "x = 1",
                          "import os, pathlib; pathlib.Path(os.environ['TOPORAG_RESULTS'], 'ok.txt').write_text('1')")
    outcomes = reproduce.reproduce("cpu-quick", notebooks=[bad, good])
    assert [o.status for o in outcomes] == ["failed", "ran"]
    assert "cell [3]" in outcomes[0].error and "boom" in outcomes[0].error
    assert (isolated_cache / "results" / "ok.txt").exists()


def run_one(notebook: str, parameters: dict, tmp_path: Path) -> None:
    """Run one notebook with papermill on small parameters; fail with the cell's error."""
    import papermill

    papermill.execute_notebook(str(NOTEBOOKS / notebook), str(tmp_path / notebook), parameters=parameters,
                               cwd=str(NOTEBOOKS), kernel_name="python3", progress_bar=False)


def test_a_papermill_parameter_of_the_wrong_shape_stops_the_notebook_before_it_writes(tmp_path, isolated_cache):
    import papermill

    with pytest.raises(papermill.PapermillExecutionError) as caught:  # papermill ... -p methods TopoRAG
        run_one("04_training.ipynb", {"methods": "TopoRAG"}, tmp_path)
    assert caught.value.ename == "ConfigError"
    assert "04_training.ipynb: parameter 'methods' takes list[str], got str 'TopoRAG'" in caught.value.evalue
    results = isolated_cache / "results"
    assert not (results / "04_setup.json").exists() and not (results.exists() and any(results.iterdir()))


def test_02_cell_lifting_writes_figures_and_lengths(tmp_path, isolated_cache):
    run_one("02_cell_lifting.ipynb", {"synthetic_images": 12, "max_graphs": 40}, tmp_path)
    results = isolated_cache / "results"
    table = pd.read_csv(results / "02_cell_lengths.csv")
    assert set(table.variant) == {"bfs", "dfs", "random", "minimum"}
    minimum = table[table.variant == "minimum"].set_index("dataset")["mean"]
    dfs = table[table.variant == "dfs"].set_index("dataset")["mean"]
    assert (minimum <= dfs + 1e-9).all()  # a minimum basis never has longer cycles on average
    for name in ("02_cycle_bases.png", "02_gqa_scene_complex.png", "02_cell_length_histograms.png"):
        assert (results / name).stat().st_size > 10_000


def test_03_retrieval_writes_table6_and_coverage(tmp_path, isolated_cache, tiny_encoder_path):
    run_one("03_retrieval.ipynb", {"synthetic_images": 8, "evidence_images": 15, "k2_values": [0, 2],
                                   "c2_values": [1.0],
                                   "count_tokens": False, "encoder_path": str(tiny_encoder_path)}, tmp_path)
    results = isolated_cache / "results"
    table6 = pd.read_csv(results / "03_table6_cells_per_dimension.csv")
    assert sorted(table6.k.unique()) == [1, 2, 3] and (table6["2-cells"] <= table6.k).all()
    coverage = pd.read_csv(results / "03_answer_coverage.csv")
    assert {"TopoRAG", "G-Retriever", "whole graph"} <= set(coverage.method)
    whole = coverage[coverage.method == "whole graph"].covers_answer.dropna()  # yes/no loops name no answer node
    assert len(whole) and (whole == 1.0).all()
    assert (results / "03_retrieval_examples.png").stat().st_size > 10_000
    evidence = pd.read_csv(results / "03_evidence_recall.csv")
    assert {"method", "family", "evidence_recall", "covers_answer", "n"} <= set(evidence.columns)
    assert set(evidence.method) == set(floors_and_evidence.RETRIEVAL_VARIANTS) and evidence.evidence_recall.between(0, 1).all()
    whole_loop = evidence[(evidence.family == "loop") & (evidence.method == "G-Retriever")]
    assert len(whole_loop) == 1 and (evidence.evidence_recall_lo <= evidence.evidence_recall).all()
    assert {"loop, answer yes", "loop, answer no"} <= set(evidence.family)  # recall by answer: no leak


def tiny_training(llm: Path, encoder: Path) -> dict:
    """The `training` parameter of notebooks 04 and 05 for tiny models made in code."""
    return {"llm_path": str(llm), "llm_dtype": "float32", "encoder_path": str(encoder), "batch_size": 2,
            "model": {"hidden_dim": 16}}


def test_04_training_writes_results(tmp_path, isolated_cache, tiny_encoder_path):
    from tiny_models import CHATML, make_tiny_model

    llm = make_tiny_model(tmp_path / "tiny_llm", CHATML)
    run_one("04_training.ipynb", {"datasets": ["synthetic_scenes", "explagraphs"], "methods": ["zero-shot", "TopoRAG"],
                                  "explagraphs_only_methods": ["G-Retriever (PyG)"],
                                  "limits": {"train": 4, "val": 2, "test": 4}, "synthetic_images": 6,
                                  "select_by": "val_score", "training": tiny_training(llm, tiny_encoder_path)}, tmp_path)
    results = isolated_cache / "results"
    table = pd.read_csv(results / "04_training_results.csv")
    assert len(table) == 5 and set(table.method) == {"zero-shot", "TopoRAG", "G-Retriever (PyG)"}
    configs = [json.loads(p.read_text()) for p in (isolated_cache / "cache" / "runs").glob("*/*/config.json")]
    assert len(configs) == 5 and {c["select_by"] for c in configs} == {"val_score"}
    assert table.score.between(0, 1).all()
    assert (table[table.method == "zero-shot"].epochs_run == 0).all()
    assert (results / "04_loss_curves.png").exists() and (results / "04_explagraphs_confusion.csv").exists()
    by_cycles = pd.read_csv(results / "04_explagraphs_by_cycles.csv")
    assert set(by_cycles.questions) == {"graph with a cycle", "acyclic graph"}
    assert by_cycles.groupby("run").n.sum().eq(4).all()  # every test question of each run, in one of the two


def test_05_ablations_writes_tables_and_figures(tmp_path, isolated_cache, tiny_encoder_path):
    from tiny_models import CHATML, make_tiny_model

    llm = make_tiny_model(tmp_path / "tiny_llm", CHATML)
    run_one("05_ablations_sensitivity.ipynb",
            {"synthetic_images": 10, "retrieval_images": 8, "limits": {"train": 4, "val": 2, "test": 4},
             "seeds": [1, 2], "ablations": [], "cycle_bases": ["BFS", "DFS"], "layer_values": [1, 2],
             "k2_values": [0, 2], "probe_images": 20, "probe_seeds": [0, 1], "probe_epochs": 1,
             "probe_inputs": ["retrieved", "whole graph"], "training": tiny_training(llm, tiny_encoder_path)}, tmp_path)
    results = isolated_cache / "results"
    assert pd.read_csv(results / "05_table2_ablations.csv").empty  # no trained ablation asked for (cpu-quick's)
    assert not (results / "05_table2_ablations.png").exists()
    assert pd.read_csv(results / "05_testbed_llm.csv").empty  # the ledger holds no full-split testbed run
    table5 = pd.read_csv(results / "05_table5_cycle_bases.csv").set_index("variant")
    assert set(table5.index) == {"BFS", "DFS", "random", "minimum basis"}
    assert table5.loc["minimum basis", "mean_2cell_length"] <= table5.loc["DFS", "mean_2cell_length"]
    assert table5.loc[["BFS", "DFS"], "score"].notna().all() and table5.loc[["random"], "score"].isna().all()
    probe_table = pd.read_csv(results / "05_probe.csv")
    assert {"encoder", "two_cells", "input", "family", "accuracy", "std", "seeds", "n"} <= set(probe_table.columns)
    assert (probe_table.seeds == 2).all() and set(probe_table.input) == {"retrieved", "whole graph"}
    assert set(probe_table.readout) == {"attention", "mean"} and (probe_table.version == 3).all()
    assert probe_table[probe_table.family == "loop"].twin.between(0, 1).all()  # version 3: loop twins
    paired = pd.read_csv(results / "05_probe_paired.csv")
    assert set(paired.family) >= {"all", "loop"} and set(paired.measure) == {"accuracy", "twin"}
    sensitivity = pd.read_csv(results / "05_sensitivity.csv")
    assert set(sensitivity.parameter) == {"L", "k2"}
    coverage = sensitivity[sensitivity.measure == "answer coverage"].set_index("k2")
    assert sorted(coverage.index) == [0, 1, 2, 3]
    table6 = pd.read_csv(results / "05_table6_cells_per_dimension.csv")
    assert list(table6.k) == [1, 2, 3] and (table6["2-cells"] <= table6.k).all()
    assert (results / "05_sensitivity.png").stat().st_size > 10_000


def test_07_results_writes_the_readme_even_from_partial_results(tmp_path, isolated_cache):
    run_one("07_results.ipynb", {"profile": "cpu-full"}, tmp_path)
    text = (isolated_cache / "results" / "README.md").read_text()
    sections = text.count("\n## ") - 1  # all but Figures
    # nothing ran in this cache: every section is "not produced" except the full-split Tables 1 and 2, which list
    # their rows as "not run", and the two the code writes (what changed; which split chose what)
    assert "under the `cpu-full` profile" in text and text.count("_not produced in this run_") == sections - 4
    table2 = text.split("## Table 2 · ablations on the full splits")[1].split("\n## ")[0]
    assert table2.count("not run") == 18  # 4 variants, frozen and with LoRA, x 2 datasets, and both floors


def test_a_newly_recorded_run_changes_the_fingerprint_of_the_ledger_readers_only(tmp_path, isolated_cache):
    reader = write_notebook(tmp_path / "07_reads.ipynb", "x = 1")
    other = write_notebook(tmp_path / "03_does_not.ipynb", "x = 1")

    def keys():
        return [reproduce.fingerprint(nb, {}, "library", reproduce.ledger_digest()) for nb in (reader, other)]

    before = keys()
    folder = isolated_cache / "results" / "runs" / "explagraphs-0123456789"
    folder.mkdir(parents=True)
    (folder / "record.json").write_text('{"run_id": "explagraphs-0123456789"}\n')
    after = keys()
    assert after[0] != before[0] and after[1] == before[1]  # notebook 07 reads the ledger; 03 does not
    assert keys() == after


def test_08_explorer_writes_the_static_page_and_shows_the_widgets(tmp_path, isolated_cache, tiny_encoder_path):
    from explorer_ledger import write_ledger

    write_ledger(isolated_cache / "results" / "runs", tiny_encoder_path)  # the notebook reads results/runs
    run_one("08_explorer.ipynb", {"per_pair": 1, "rest_per_dataset": 1, "count_tokens": False}, tmp_path)
    page = (isolated_cache / "results" / "08_explorer.html").read_text()
    assert page.count('<div class="block"') == 5  # 3 pairs' disagreements, 1 other question per question set
    assert "TopoRAG vs TopoRAG w/o CRL (no 2-cells)" in page and "data:image/png;base64," in page
    cells = nbformat.read(tmp_path / "08_explorer.ipynb", as_version=4).cells
    outputs = [o for c in cells if c.cell_type == "code" for o in c.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    assert any("application/vnd.jupyter.widget-view+json" in o.get("data", {}) for o in outputs)  # the explorer
