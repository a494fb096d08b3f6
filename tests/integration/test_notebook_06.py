"""Notebook 06 (efficiency) runs headless on tiny models and writes Table 7, the scaling and the memory tables."""

from pathlib import Path

import pandas as pd

from toporag_lib.paths import PROJECT_ROOT

NOTEBOOKS = PROJECT_ROOT / "notebooks"
SIZES = [10, 100, 400]


def run_06(tmp_path: Path, llm: Path, encoder: Path) -> None:
    import papermill

    training = {"llm_path": str(llm), "llm_dtype": "float32", "encoder_path": str(encoder), "model": {"hidden_dim": 16}}
    parameters = {"training": training, "batch_size": 2, "warmup": 1, "steps": 2, "memory_steps": 1, "dtype_steps": 1, "preprocess_questions": 6,
                  "sizes": SIZES, "repeats": 1, "queries": 1, "feature_dim": 16, "fit_min_nodes": 10}
    papermill.execute_notebook(str(NOTEBOOKS / "06_efficiency.ipynb"), str(tmp_path / "06_efficiency.ipynb"),
                               parameters=parameters, cwd=str(NOTEBOOKS), kernel_name="python3", progress_bar=False)


def test_06_efficiency_writes_table7_scaling_and_memory(tmp_path, isolated_cache, tiny_encoder_path):
    from tiny_models import CHATML, make_tiny_model

    run_06(tmp_path, make_tiny_model(tmp_path / "tiny_llm", CHATML), tiny_encoder_path)
    results = isolated_cache / "results"

    table7 = pd.read_csv(results / "06_table7_epoch_time.csv").set_index("method")
    assert set(table7.index) == {"TopoRAG", "G-Retriever"}
    assert table7.loc["TopoRAG", "encoder"] == "cellular" and table7.loc["G-Retriever", "encoder"] == "gt"
    assert (table7.seconds_per_step > 0).all() and (table7.timed_steps == 2).all()
    assert (table7.steps_per_epoch == -(-1659 // 2)).all()  # ExplaGraphs' training split at batch size 2
    assert table7.loc["G-Retriever", "ratio_vs_G-Retriever"] == 1.0
    assert table7.loc["TopoRAG", "ratio_vs_G-Retriever"] > 0 and table7.loc["TopoRAG", "cpu_ratio_vs_G-Retriever"] > 0
    assert table7.loc["TopoRAG", "lifting_s"] > 0 and table7.loc["G-Retriever", "lifting_s"] == 0
    assert (table7.embedding_s > 0).all() and (table7.preprocessing_train_split_s > table7.preprocessing_s).all()

    work = pd.read_csv(results / "06_peak_fraction.csv").set_index("method")
    assert set(work.index) == {"TopoRAG", "G-Retriever"} and (work.fraction_of_peak > 0).all()
    assert (work.tflop_per_step > 0).all() and work.padding_share.between(0, 1).all()
    dtypes = pd.read_csv(results / "06_dtype_steps.csv")
    assert sorted(dtypes.dtype) == ["bfloat16", "float32"] and (dtypes.seconds_per_step > 0).all()
    assert dtypes.set_index("dtype").loc["bfloat16", "paired_ratio_vs_bfloat16"] == 1.0
    generation = pd.read_csv(results / "06_generation.csv")
    assert sorted(generation.dtype) == ["bfloat16", "float32"] and (generation.seconds_per_batch > 0).all()

    scaling = pd.read_csv(results / "06_scaling.csv")
    seconds = scaling.pivot(index="nodes", columns="what", values="seconds")
    assert list(seconds.index) == SIZES
    ours = ["lift (BFS)", "lift + B1, B2, indices", "networkx.cycle_basis", "TopoRAG retrieval",
            "G-Retriever retrieval (ours)"]
    assert seconds[ours].notna().all().all() and (seconds[ours] > 0).all().all()
    assert seconds["PyG retrieval_via_pcst"].notna().any()
    assert scaling.fitted_slope.notna().all()
    for name in ("06_scaling.png", "06_scaling.svg", "06_memory.png"):
        assert (results / name).stat().st_size > 10_000

    memory = pd.read_csv(results / "06_memory.csv")
    per_size = memory[memory.measured_by == "tracemalloc"].pivot(index="nodes", columns="what", values="extra_mb")
    assert list(per_size.index) == SIZES and (per_size > 0).all().all()
    assert per_size["lift (BFS)"][400] > per_size["lift (BFS)"][10]
    steps = memory[memory.measured_by != "tracemalloc"].set_index("what")
    assert set(steps.index) == {"TopoRAG", "G-Retriever"}
    assert (steps.peak_rss_mb >= steps.rss_before_mb).all() and (steps.rss_before_mb > 0).all()
