"""Data-parallel training: two CPU processes (torchrun, gloo) end with the weights of one process on the same
global batches."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from tiny_models import CHATML, make_tiny_model

from toporag_lib import atomic
from toporag_lib.generation.soft_prompt import ModelConfig
from toporag_lib.training.train_config import TrainConfig
from toporag_lib.training.trainer import Trainer


def test_two_processes_match_one_on_the_same_global_batch(tiny_encoder_path, tmp_path):
    llm = make_tiny_model(tmp_path / "llm", CHATML)
    model = ModelConfig(encoder="cellular", hidden_dim=16, projector_hidden=32, num_layers=1, lora=True,
                        lora_dropout=0.0)  # no dropout: its draws differ per process
    config = TrainConfig(dataset="synthetic_scenes", dataset_options={"num_images": 8, "questions_per_image": 2,
                                                                      "seed": 1, "version": 1},
                         lift={"basis": "fundamental", "tree": "bfs", "parallel": "digon"}, edge_text="relation",
                         retrieval={"k1": 5, "cells": "top_k"},
                         limits={"train": 7, "val": 3, "test": 2}, encoder_path=str(tiny_encoder_path),
                         llm_path=str(llm), llm_dtype="float32", epochs=2, batch_size=4, eval_batch_size=2,
                         lr=1e-2, lora_lr=1e-2, max_new_tokens=2, max_txt_len=48, max_grad_norm=1.0, patience=5,
                         model=model)  # 7 questions, global batch 4: the last batch splits 2 + 1 unevenly
    one = Trainer(config, tmp_path / "one", progress=False)
    start = one.model.trainable_state()
    one.train()

    path = tmp_path / "config.json"
    path.write_text(json.dumps(config.to_dict()))
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    done = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2",
                           "-m", "toporag_lib.training", "--config", str(path), "--out", str(tmp_path / "two"),
                           "--ledger", "none"],
                          env=env, capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stderr[-4000:]

    two = atomic.torch_load(tmp_path / "two" / "checkpoint.pt", weights_only=False)
    assert two["state"]["done"] and two["state"]["epoch"] == 2
    losses = [h["loss"] for h in one.state["history"] if h["loss"] is not None]
    assert [h["loss"] for h in two["state"]["history"] if h["loss"] is not None] == pytest.approx(losses, rel=1e-5)
    expected = one.model.trainable_state()
    assert expected.keys() == two["model"].keys() and any("lora_" in k for k in expected)
    for name, weight in expected.items():
        # Adam turns float-rounding noise in near-zero gradients into full-size steps for a few elements, so the
        # weights are compared against how far training moved them, not element by element.
        moved = (weight - start[name]).norm()
        assert moved > 0, name
        assert (two["model"][name] - weight).norm() < 1e-2 * moved, name
    assert json.loads((tmp_path / "two" / "metrics_test.json").read_text())["n"] == 2
