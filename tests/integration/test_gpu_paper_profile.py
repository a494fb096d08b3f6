"""The paper's profile (`gpu-paper`) end to end on this CPU: its notebook-04 parameters, with a tiny random Llama
saved as Llama-2-7b-hf ships (no chat template, no pad token, sampling generation defaults) and a tiny sentence
encoder as its model folders, at tiny limits, with the device set to CPU and a graph side as tiny as the models
(hidden size 16 for the paper's 1024: at 1024 the checkpoints and Adam steps alone take a minute here); everything
else is the profile's: the paper's lr 1e-5, batch 8, warm-up 0.1 and cosine decay, 10 epochs, patience 2, its text
and answer lengths, and the LLM dtype "auto" resolves to."""

from __future__ import annotations

import json
import math

import pandas as pd
import torch
from tiny_models import make_llama2_base_like

from toporag_lib import atomic
from toporag_lib.generation.llm import SOFT_TOKEN, load_llm
from toporag_lib.hardware import resolve_llm_dtype
from toporag_lib.settings import merge
from toporag_lib.study.experiments import run_methods
from toporag_lib.study.notebook_parameters import check_parameters
from toporag_lib.study.profiles import notebook_parameters
from toporag_lib.training.train_config import PAPER_SETTINGS

TINY = {"train": 4, "val": 2, "test": 2}  # 4 training questions: one step of 8 per epoch, 10 steps in all


def test_the_gpu_paper_profile_trains_and_answers_with_a_base_llm_on_cpu(tmp_path, isolated_cache, tiny_encoder_path,
                                                                         monkeypatch):
    llm_dir = make_llama2_base_like(tmp_path / "Llama-2-7b-hf-like")
    monkeypatch.setenv("TOPORAG_LLM", str(llm_dir))
    monkeypatch.setenv("TOPORAG_ENCODER", str(tiny_encoder_path))
    parameters = notebook_parameters("gpu-paper", "04_training")
    check_parameters("04_training", parameters)
    assert parameters["training"]["device"] == "cuda" and parameters["training"]["llm_path"] == str(llm_dir)

    # notebook 04's overrides (its `select_by` and `seed` defaults), at tiny limits, on this CPU
    assert parameters["training"]["model"] == PAPER_SETTINGS["model"] == {"hidden_dim": 1024, "num_layers": 2}
    overrides = merge({"limits": TINY, "epochs": parameters["epochs"], "select_by": "val_loss", "seed": 42},
                      merge(parameters["training"], {"device": "cpu", "model": {"hidden_dim": 16,
                                                                                "projector_hidden": 32}}))
    methods = ["TopoRAG", *parameters["explagraphs_only_methods"]]  # ours, and PyG's G-Retriever
    table = run_methods("explagraphs", methods, isolated_cache / "runs", overrides, progress=False)

    table = table.set_index("method")
    assert list(table.index) == methods and (table.n == TINY["test"]).all() and table.score.between(0, 1).all()
    assert len(list((isolated_cache / "results" / "runs").glob("*/record.json"))) == len(methods)
    dtype = resolve_llm_dtype("auto", "cpu")  # bf16 where this CPU computes it natively, else fp32
    assert methods == ["TopoRAG", "G-Retriever (PyG)"]
    for method in methods:
        run = table.run[method]
        config = json.loads((atomic.Path(run) / "config.json").read_text())
        assert {key: config[key] for key in ("lr", "batch_size", "epochs", "patience", "schedule", "warmup_ratio",
                                             "max_txt_len", "max_new_tokens")} == \
            {key: PAPER_SETTINGS[key] for key in ("lr", "batch_size", "epochs", "patience", "schedule",
                                                  "warmup_ratio", "max_txt_len", "max_new_tokens")}
        assert config["model"]["num_layers"] == 2 and config["device"] == "cpu"
        assert config["llm_path"] == str(llm_dir) and config["llm_dtype"] == dtype
        # the warm-up and cosine decay reached the optimizer: one warm-up step of 10, then cosine to 0
        epochs_run = int(table.epochs_run[method])
        validation = [v["val_loss"] for v in table.validation[method]]
        assert len(validation) == epochs_run and 1 <= epochs_run <= 10
        best = validation.index(min(validation))
        assert epochs_run == 10 or epochs_run - 1 - best == PAPER_SETTINGS["patience"]  # stopped by patience
        scheduler = atomic.torch_load(atomic.Path(run) / "checkpoint.pt", weights_only=True)["scheduler"]
        cosine = 0.5 * (1 + math.cos(math.pi * (epochs_run - 1) / 9))
        assert scheduler["last_epoch"] == epochs_run
        assert math.isclose(scheduler["_last_lr"][0], PAPER_SETTINGS["lr"] * cosine, rel_tol=1e-6, abs_tol=1e-15)
        predictions = pd.read_json(atomic.Path(run) / "predictions_test.jsonl", lines=True)
        assert len(predictions) == TINY["test"]

    # the prompt without a chat template: [<s>][soft tokens]{graph}\n{question}{answer}[</s>], one <s> only
    llm = load_llm(llm_dir, "auto", "cpu")
    assert llm.dtype == getattr(torch, dtype) and llm.tokenizer.chat_template is None
    assert (llm.template.prefix, llm.template.suffix, llm.template.end_of_turn) == ([1], [], [2])
    batch = llm.build_batch(torch.zeros(2, 1, llm.hidden_size), ["cat chases dog", "a"], ["is there a cat?"] * 2,
                            ["yes", "support"])
    for row, mask in zip(batch.token_ids.tolist(), batch.attention_mask.tolist()):
        kept = [t for t, m in zip(row, mask) if m]
        assert kept[:2] == [1, SOFT_TOKEN] and kept.count(1) == 1 and kept[-1] == 2
