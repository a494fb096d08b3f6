"""The measurement helpers behind notebook 06: fits, extrapolation, step tables, graphs, memory probes."""

import math
import sys

import numpy as np
import pandas as pd
import pytest
import torch

from toporag_lib.study import efficiency


def test_loglog_slope_recovers_the_exponent_of_a_power_law():
    x = np.array([10, 100, 1000, 10000])
    assert efficiency.loglog_slope(x, 3e-6 * x**1.5) == pytest.approx(1.5)
    assert efficiency.loglog_slope(x, np.full(4, 0.2)) == pytest.approx(0.0, abs=1e-12)
    assert math.isnan(efficiency.loglog_slope([10], [1.0]))


def test_slopes_are_fitted_per_operation_above_the_size_threshold():
    rows = [{"what": "linear", "nodes": n, "seconds": 1e-5 * n} for n in (100, 1000, 10000)]
    rows += [{"what": "quadratic", "nodes": n, "seconds": 1e-7 * n**2} for n in (100, 1000, 10000)]
    rows += [{"what": "linear", "nodes": 10, "seconds": 1.0}]  # overhead-dominated: below the threshold
    fitted = efficiency.slopes(pd.DataFrame(rows), min_nodes=100)
    assert fitted["linear"] == pytest.approx(1.0) and fitted["quadratic"] == pytest.approx(2.0)


def test_prediction_assumes_at_least_linear_growth():
    assert efficiency.predicted_seconds([100], [0.1], 1000) == pytest.approx(1.0)
    assert efficiency.predicted_seconds([100, 1000], [0.1, 0.2], 10000) == pytest.approx(2.0)  # flat fit -> linear
    assert efficiency.predicted_seconds([100, 1000], [0.01, 1.0], 10000) == pytest.approx(100.0)  # quadratic


def test_median_seconds_is_positive_and_runs_the_call_each_repeat():
    calls = []
    assert efficiency.median_seconds(lambda: calls.append(1), 5) >= 0 and len(calls) == 5


def test_random_multigraph_is_seeded_connected_and_of_the_asked_size():
    one = efficiency.random_multigraph(50, 150, np.random.default_rng(3))
    again = efficiency.random_multigraph(50, 150, np.random.default_rng(3))
    assert one.edges == again.edges and (one.num_nodes, one.num_edges) == (50, 150)
    assert efficiency.simple_nx(one).number_of_nodes() == 50
    import networkx as nx

    assert nx.is_connected(efficiency.simple_nx(one))


class FakeRunner:
    """Records the order of calls; step i of method m takes `seconds[m][i]`."""

    def __init__(self, name: str, seconds: list[float], log: list, dtype: str = "float32"):
        self.name, self.seconds, self.log = name, seconds, log
        self.method, self.dtype = name.split(" [")[0], dtype

    def step(self, i: int) -> dict[str, float]:
        self.log.append((self.name, i))
        return {"seconds": self.seconds[i], "cpu_seconds": self.seconds[i] / 2}


def test_interleaving_flips_the_order_every_step_and_drops_warmup():
    log = []
    runners = {"A": FakeRunner("A", [9, 1, 2, 3], log), "B": FakeRunner("B", [9, 2, 4, 6], log)}
    times = efficiency.interleaved_step_times(runners, warmup=1, steps=3)
    assert log == [("A", 0), ("B", 0), ("B", 1), ("A", 1), ("A", 2), ("B", 2), ("B", 3), ("A", 3)]
    assert sorted(times.seconds[times.method == "A"]) == [1, 2, 3] and list(times.step.unique()) == [0, 1, 2]


def test_dtype_summary_pairs_each_method_with_its_own_bf16_step():
    log = []
    runners = {"A [bfloat16]": FakeRunner("A [bfloat16]", [9, 8, 12], log, "bfloat16"),
               "A [float32]": FakeRunner("A [float32]", [9, 2, 4], log, "float32"),
               "B [bfloat16]": FakeRunner("B [bfloat16]", [9, 4, 4], log, "bfloat16"),
               "B [float32]": FakeRunner("B [float32]", [9, 4, 2], log, "float32")}
    times = efficiency.interleaved_step_times(runners, warmup=1, steps=2)
    assert set(times.runner) == set(runners) and list(times.batch.unique()) == [1, 2]
    table = efficiency.dtype_summary(times).set_index(["method", "dtype"])
    assert table.loc[("A", "float32"), "paired_ratio_vs_bfloat16"] == pytest.approx(0.29166, rel=1e-3)  # 2/8, 4/12
    assert table.loc[("B", "float32"), "paired_ratio_vs_bfloat16"] == pytest.approx(0.75)  # 1.0 and 0.5
    assert table.loc[("A", "bfloat16"), "seconds_per_step"] == pytest.approx(10.0)
    assert (table.timed_steps == 2).all()


def test_generation_summary_counts_answer_tokens_per_second():
    times = pd.DataFrame({"method": ["A", "A", "B"], "dtype": ["float32"] * 3, "seconds": [1.0, 3.0, 2.0],
                          "answer_tokens": [4, 8, 5]})
    table = efficiency.generation_summary(times).set_index("method")
    assert table.loc["A", "answer_tokens_per_s"] == pytest.approx(3.0) and table.loc["A", "batches"] == 2
    assert table.loc["B", "seconds_per_batch"] == pytest.approx(2.0)


def test_epoch_table_medians_ratios_and_minutes():
    times = pd.DataFrame({"method": ["G-Retriever"] * 3 + ["TopoRAG"] * 3, "step": [0, 1, 2] * 2,
                          "seconds": [2.0, 4.0, 3.0, 2.2, 4.0, 3.3], "cpu_seconds": [1.0, 1.0, 1.0, 1.2, 1.2, 1.2]})
    table = efficiency.epoch_table(times, train_questions=10, batch_size=4).set_index("method")
    assert table.loc["TopoRAG", "seconds_per_step"] == pytest.approx(3.3)
    assert table.loc["TopoRAG", "ratio_vs_G-Retriever"] == pytest.approx(1.1)
    assert table.loc["TopoRAG", "paired_ratio"] == pytest.approx(1.1)  # per-step ratios 1.1, 1.0, 1.1
    assert table.loc["G-Retriever", "steps_per_epoch"] == 3
    assert table.loc["G-Retriever", "minutes_per_epoch"] == pytest.approx(3.0 * 3 / 60)
    assert (table.timed_steps == 3).all()
    assert table.loc["TopoRAG", "cpu_ratio_vs_G-Retriever"] == pytest.approx(1.2)


def test_peak_extra_bytes_sees_a_numpy_allocation():
    size = 8 * 2**20
    assert efficiency.peak_extra_bytes(lambda: np.ones(size // 8)) >= size
    assert efficiency.peak_extra_bytes(lambda: None) < 2**16


def test_scaling_tables_time_and_measure_every_operation():
    times, memory = efficiency.scaling_tables([20, 200], repeats=1, queries=1, dim=8, pyg_limit_s=1e-9)
    assert set(times.what) == {efficiency.LIFT, efficiency.LIFT_INDEX, efficiency.CYCLE_BASIS, efficiency.TOPORAG,
                               efficiency.GRETRIEVER, efficiency.PYG}
    assert (times.seconds > 0).all() and sorted(times.nodes.unique()) == [20, 200]
    assert list(times[times.what == efficiency.PYG].nodes) == [20]  # the next size is predicted over the limit
    assert (times.edges == 3 * times.nodes).all()
    assert set(memory.what) == {efficiency.LIFT, efficiency.LIFT_INDEX, efficiency.TOPORAG, efficiency.GRETRIEVER}
    assert (memory.extra_mb > 0).all()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="VmHWM and clear_refs are Linux's")
def test_peak_rss_resets_to_the_current_size_and_then_sees_a_new_peak():
    big = np.ones(64 * 2**20 // 8)  # touched: resident
    del big
    efficiency.reset_peak_rss()
    after_reset = efficiency.proc_status_bytes("VmHWM")
    assert after_reset <= efficiency.proc_status_bytes("VmRSS") + 2**20
    block = np.ones(32 * 2**20 // 8)
    assert efficiency.proc_status_bytes("VmHWM") >= after_reset + 30 * 2**20
    del block


def test_step_runners_build_one_model_per_method_and_dtype_as_the_trainer_does(tmp_path, tiny_encoder_path):
    from tiny_models import CHATML, make_tiny_model

    llm = make_tiny_model(tmp_path / "tiny_llm", CHATML)
    overrides = efficiency.step_overrides(2, 2, dataset_options={"num_images": 8, "questions_per_image": 2, "seed": 1},
                                          llm_path=str(llm), encoder_path=str(tiny_encoder_path),
                                          model={"hidden_dim": 16, "num_layers": 1}, max_txt_len=48)
    runners = efficiency.step_runners(["TopoRAG + LoRA"], "synthetic_scenes", overrides,
                                      dtypes=["float32", "bfloat16"])
    assert set(runners) == {"TopoRAG + LoRA [float32]", "TopoRAG + LoRA [bfloat16]"}
    fp32, bf16 = runners["TopoRAG + LoRA [float32]"], runners["TopoRAG + LoRA [bfloat16]"]
    assert fp32.model.llm.dtype == torch.float32 and bf16.model.llm.dtype == torch.bfloat16
    assert fp32.model.llm is not bf16.model.llm  # LoRA wraps each LLM in place: never shared
    assert fp32.optimizer.defaults["betas"] == (0.9, 0.95)  # the trainer's optimizer, not AdamW's defaults
    assert fp32.batches == bf16.batches
    times = efficiency.interleaved_step_times(runners, warmup=0, steps=1)
    assert (times.seconds > 0).all()
    work = efficiency.step_flops(fp32, 0)
    assert 0 < work["tokens"] <= work["padded_tokens"] and 0 < work["useful_flops"] <= work["computed_flops"]
    generated = efficiency.interleaved_step_times(runners, 0, 1, what="generate")
    assert (generated.answer_tokens >= 0).all() and (generated.seconds > 0).all()
