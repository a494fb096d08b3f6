"""kill -9 at a moment chosen at random during training (checkpoints are written after every step, so the kill can
land inside a write), then the same command again: the run ends with the uninterrupted run's losses, weights and
predictions, and nothing half-written is read back.

One kill by default; `TOPORAG_KILLS=20 pytest tests/training/test_kill_resume.py` repeats it at 20 moments.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch
from test_trainer import config
from tiny_models import CHATML, make_tiny_model

from toporag_lib import atomic
from toporag_lib.generation.soft_prompt import ModelConfig
from toporag_lib.training.history import read_history
from toporag_lib.training.train_config import TrainConfig
from toporag_lib.training.trainer import run

KILLS = int(os.environ.get("TOPORAG_KILLS", "1"))
TIMINGS = ("seconds_per_step", "minutes_per_epoch")


@pytest.fixture(scope="module")
def config_file(tmp_path_factory, tiny_encoder_path):
    folder = tmp_path_factory.mktemp("kill")
    model = ModelConfig(encoder="cellular", hidden_dim=16, projector_hidden=32, num_layers=1, dropout=0.2)
    cfg = config(make_tiny_model(folder / "llm", CHATML), tiny_encoder_path, model=model, epochs=3,
                 limits={"train": 8, "val": 2, "test": 2})
    path = folder / "config.json"
    path.write_text(json.dumps(cfg.to_dict()))
    return path


def command(config_file: Path, out: Path) -> list[str]:
    return [sys.executable, "-m", "toporag_lib.training", "--config", str(config_file), "--out", str(out),
            "--ledger", "none"]


def run_to_end(config_file: Path, out: Path) -> None:
    subprocess.run(command(config_file, out), check=True, capture_output=True, env=single_thread())


def single_thread() -> dict[str, str]:
    return {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}


def outcome(out: Path) -> tuple:
    metrics = {k: v for k, v in atomic.read_json(out / "metrics_test.json").items() if k not in TIMINGS}
    history = read_history(out).drop(columns="seconds")
    weights = atomic.torch_load(out / "best.pt", map_location="cpu", weights_only=True)
    return metrics, history, weights, (out / "predictions_test.jsonl").read_text()


@pytest.fixture(scope="module")
def uninterrupted(config_file, tmp_path_factory):
    """The same run in this process (one thread, as the subprocesses), uninterrupted."""
    out = tmp_path_factory.mktemp("whole") / "run"
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        run(TrainConfig.from_dict(json.loads(config_file.read_text())), out, progress=False)
    finally:
        torch.set_num_threads(threads)
    return outcome(out)


@pytest.mark.parametrize("moment", range(KILLS))
def test_a_run_killed_at_a_random_moment_ends_as_the_uninterrupted_one(config_file, uninterrupted, tmp_path, moment):
    out = tmp_path / "run"
    delay = random.Random(moment).uniform(0.0, 1.0)  # a moment among the next few steps and their writes
    for _ in range(6):  # on a fast machine the run may end first: try again sooner
        process = subprocess.Popen(command(config_file, out), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                   env=single_thread())
        while not (out / "checkpoint.pt").exists() and process.poll() is None:
            time.sleep(0.01)
        time.sleep(delay)
        if process.poll() is None:
            process.send_signal(signal.SIGKILL)
            process.wait()
            break
        shutil.rmtree(out)
        delay /= 4
    else:
        pytest.fail("the run ended before every kill: give it more steps")
    run_to_end(config_file, out)
    metrics, history, weights, predictions = outcome(out)
    expected_metrics, expected_history, expected_weights, expected_predictions = uninterrupted
    assert metrics == expected_metrics and predictions == expected_predictions
    assert history.equals(expected_history), "the losses of every step repeat the uninterrupted run's"
    assert weights.keys() == expected_weights.keys()
    assert all(torch.equal(weights[k], expected_weights[k]) for k in weights)
