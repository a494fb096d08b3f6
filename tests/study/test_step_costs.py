"""Train-step costs: interleaved timing, the ratios between methods and dtypes, generation rates, FLOPs, and the
runners built as the trainer builds them."""

import sys

import numpy as np
import pandas as pd
import pytest
import torch

from toporag_lib.study import step_costs

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
    times = step_costs.interleaved_step_times(runners, warmup=1, steps=3)
    assert log == [("A", 0), ("B", 0), ("B", 1), ("A", 1), ("A", 2), ("B", 2), ("B", 3), ("A", 3)]
    assert sorted(times.seconds[times.method == "A"]) == [1, 2, 3] and list(times.step.unique()) == [0, 1, 2]


def test_dtype_summary_pairs_each_method_with_its_own_bf16_step():
    log = []
    runners = {"A [bfloat16]": FakeRunner("A [bfloat16]", [9, 8, 12], log, "bfloat16"),
               "A [float32]": FakeRunner("A [float32]", [9, 2, 4], log, "float32"),
               "B [bfloat16]": FakeRunner("B [bfloat16]", [9, 4, 4], log, "bfloat16"),
               "B [float32]": FakeRunner("B [float32]", [9, 4, 2], log, "float32")}
    times = step_costs.interleaved_step_times(runners, warmup=1, steps=2)
    assert set(times.runner) == set(runners) and list(times.batch.unique()) == [1, 2]
    table = step_costs.dtype_summary(times).set_index(["method", "dtype"])
    assert table.loc[("A", "float32"), "paired_ratio_vs_bfloat16"] == pytest.approx(0.29166, rel=1e-3)  # 2/8, 4/12
    assert table.loc[("B", "float32"), "paired_ratio_vs_bfloat16"] == pytest.approx(0.75)  # 1.0 and 0.5
    assert table.loc[("A", "bfloat16"), "seconds_per_step"] == pytest.approx(10.0)
    assert (table.timed_steps == 2).all()


def test_generation_summary_counts_answer_tokens_per_second():
    times = pd.DataFrame({"method": ["A", "A", "B"], "dtype": ["float32"] * 3, "seconds": [1.0, 3.0, 2.0],
                          "answer_tokens": [4, 8, 5]})
    table = step_costs.generation_summary(times).set_index("method")
    assert table.loc["A", "answer_tokens_per_s"] == pytest.approx(3.0) and table.loc["A", "batches"] == 2
    assert table.loc["B", "seconds_per_batch"] == pytest.approx(2.0)


def test_epoch_table_medians_ratios_and_minutes():
    times = pd.DataFrame({"method": ["G-Retriever"] * 3 + ["TopoRAG"] * 3, "step": [0, 1, 2] * 2,
                          "seconds": [2.0, 4.0, 3.0, 2.2, 4.0, 3.3], "cpu_seconds": [1.0, 1.0, 1.0, 1.2, 1.2, 1.2]})
    table = step_costs.epoch_table(times, train_questions=10, batch_size=4).set_index("method")
    assert table.loc["TopoRAG", "seconds_per_step"] == pytest.approx(3.3)
    assert table.loc["TopoRAG", "ratio_vs_G-Retriever"] == pytest.approx(1.1)
    assert table.loc["TopoRAG", "paired_ratio"] == pytest.approx(1.1)  # per-step ratios 1.1, 1.0, 1.1
    assert table.loc["G-Retriever", "steps_per_epoch"] == 3
    assert table.loc["G-Retriever", "minutes_per_epoch"] == pytest.approx(3.0 * 3 / 60)
    assert (table.timed_steps == 3).all()
    assert table.loc["TopoRAG", "cpu_ratio_vs_G-Retriever"] == pytest.approx(1.2)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="VmHWM and clear_refs are Linux's")
def test_peak_rss_resets_to_the_current_size_and_then_sees_a_new_peak():
    big = np.ones(64 * 2**20 // 8)  # touched: resident
    del big
    step_costs.reset_peak_rss()
    after_reset = step_costs.proc_status_bytes("VmHWM")
    assert after_reset <= step_costs.proc_status_bytes("VmRSS") + 2**20
    block = np.ones(32 * 2**20 // 8)
    assert step_costs.proc_status_bytes("VmHWM") >= after_reset + 30 * 2**20
    del block


def test_step_runners_build_one_model_per_method_and_dtype_as_the_trainer_does(tmp_path, tiny_encoder_path):
    from tiny_models import CHATML, make_tiny_model

    llm = make_tiny_model(tmp_path / "tiny_llm", CHATML)
    overrides = step_costs.step_overrides(2, 2, dataset_options={"num_images": 8, "questions_per_image": 2, "seed": 1},
                                          llm_path=str(llm), encoder_path=str(tiny_encoder_path),
                                          model={"hidden_dim": 16, "num_layers": 1}, max_txt_len=48)
    runners = step_costs.step_runners(["TopoRAG + LoRA"], "synthetic_scenes", overrides,
                                      dtypes=["float32", "bfloat16"])
    assert set(runners) == {"TopoRAG + LoRA [float32]", "TopoRAG + LoRA [bfloat16]"}
    fp32, bf16 = runners["TopoRAG + LoRA [float32]"], runners["TopoRAG + LoRA [bfloat16]"]
    assert fp32.model.llm.dtype == torch.float32 and bf16.model.llm.dtype == torch.bfloat16
    assert fp32.model.llm is not bf16.model.llm  # LoRA wraps each LLM in place: never shared
    assert fp32.optimizer.defaults["betas"] == (0.9, 0.95)  # the trainer's optimizer, not AdamW's defaults
    assert fp32.batches == bf16.batches
    times = step_costs.interleaved_step_times(runners, warmup=0, steps=1)
    assert (times.seconds > 0).all()
    work = step_costs.step_flops(fp32, 0)
    assert 0 < work["tokens"] <= work["padded_tokens"] and 0 < work["useful_flops"] <= work["computed_flops"]
    generated = step_costs.interleaved_step_times(runners, 0, 1, what="generate")
    assert (generated.answer_tokens >= 0).all() and (generated.seconds > 0).all()
