"""PyTorch Geometric's GRetriever as an outside reference, on tiny models made in code: the one `Trainer` trains it
on our examples, PyG's traps are fixed, and it checkpoints and resumes like our model."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
import torch
from tiny_models import CHATML, HIDDEN, make_llama2_base_like, make_tiny_model

from toporag_lib.generation.pyg_gretriever import check_model_config, load_pyg_llm
from toporag_lib.study.experiments import method_config, run_methods
from toporag_lib.training.history import HISTORY_COLUMNS
from toporag_lib.training.train_config import TrainConfig
from toporag_lib.training.trainer import Trainer


@pytest.fixture(scope="module")
def tiny_llm(tmp_path_factory):
    return make_tiny_model(tmp_path_factory.mktemp("tiny_llm"), CHATML)


def overrides(tiny_llm, tiny_encoder_path, **changes) -> dict:
    values = {"dataset_options": {"num_images": 8, "questions_per_image": 2, "seed": 1},
              "limits": {"train": 4, "val": 2, "test": 2}, "encoder_path": str(tiny_encoder_path),
              "llm_path": str(tiny_llm), "llm_dtype": "float32", "epochs": 1, "batch_size": 2, "eval_batch_size": 2,
              "max_new_tokens": 4, "max_txt_len": 48, "model": {"hidden_dim": 16, "projector_hidden": 32,
                                                                  "num_layers": 1}}
    return {**values, **changes}


def reference(tiny_llm, tiny_encoder_path, tmp_path, lora: bool = False, **changes) -> Trainer:
    method = "G-Retriever (PyG) + LoRA" if lora else "G-Retriever (PyG)"
    config = method_config(method, "synthetic_scenes", overrides(tiny_llm, tiny_encoder_path, **changes))
    return Trainer(config, tmp_path, progress=False)


def test_pyg_reads_our_examples_and_trains_only_the_graph_side(tiny_llm, tiny_encoder_path, tmp_path):
    ref = reference(tiny_llm, tiny_encoder_path, tmp_path)
    seen = []
    pyg_llm = ref.model.retriever.llm
    get_embeds = pyg_llm._get_embeds
    pyg_llm._get_embeds = lambda *args: seen.append(args) or get_embeds(*args)
    pyg_llm._get_embeds_old = lambda *args: pytest.fail("PyG fell back to the Llama-2 [INST] layout")
    batch = ref.examples["train"][:2]
    before = {n: p.detach().clone() for n, p in ref.model.named_parameters()}
    ref.step([0, 1])
    questions, texts, soft, answers = seen[0]
    assert questions == [e.question for e in batch] and answers == [e.label for e in batch]
    cut = ref.model.cut([e.text for e in batch], ref.config.max_txt_len)
    assert texts == cut and all(e.text.startswith(c) for e, c in zip(batch, cut))
    assert len(ref.model.tokenizer(cut[0], add_special_tokens=False).input_ids) <= ref.config.max_txt_len + 1
    assert [s.shape for s in soft] == [(1, HIDDEN)] * 2
    trainable = {n for n, p in ref.model.named_parameters() if p.requires_grad}
    assert trainable and all(n.startswith(("retriever.gnn.", "retriever.projector.")) for n in trainable)  # not the LLM
    changed = {n for n, p in ref.model.named_parameters() if not torch.equal(before[n], p.detach())}
    assert changed == trainable


def test_lora_keeps_the_base_in_llm_dtype_and_adapters_in_fp32(tiny_llm, tiny_encoder_path, tmp_path):
    ref = reference(tiny_llm, tiny_encoder_path, tmp_path, lora=True, llm_dtype="bfloat16")
    params = dict(ref.model.retriever.llm_generator.named_parameters())
    adapters = {n for n, p in params.items() if p.requires_grad}
    assert adapters and all("lora_" in n for n in adapters)
    assert all(params[n].dtype == torch.float32 for n in adapters)
    assert all(p.dtype == torch.bfloat16 for n, p in params.items() if n not in adapters)
    assert [len(g["params"]) for g in ref.optimizer.param_groups][1] == len(adapters)  # adapters at lora_lr
    assert torch.isfinite(ref.step([0, 1]))


def test_run_methods_writes_the_same_outputs_as_our_trainer(tiny_llm, tiny_encoder_path, tmp_path):
    table = run_methods("synthetic_scenes", ["G-Retriever", "G-Retriever (PyG)"], tmp_path,
                        overrides(tiny_llm, tiny_encoder_path), progress=False).set_index("method")
    ours, pyg = (Path(table.loc[m, "run"]) for m in ("G-Retriever", "G-Retriever (PyG)"))
    assert table.loc["G-Retriever (PyG)", "n"] == 2 and 0.0 <= table.loc["G-Retriever (PyG)", "score"] <= 1.0
    metrics = [json.loads((run / "metrics_test.json").read_text()) for run in (ours, pyg)]
    # PyG's GRetriever has no candidate scoring, so only our run has the closed-answer score (`evaluation.predict`)
    assert metrics[0].keys() - {"closed"} == metrics[1].keys() and metrics[1]["epochs_run"] == 1
    assert 0 <= metrics[1]["texts_cut"] <= 1 and metrics[1]["texts_cut"] == metrics[0]["texts_cut"]  # one tokenizer
    assert list(pd.read_csv(pyg / "history.csv").columns) == HISTORY_COLUMNS
    records = [json.loads(line) for line in (pyg / "predictions_test.jsonl").read_text().splitlines()]
    assert len(records) == 2 and set(records[0]) == {"index", "question", "label", "pred", "family"}
    assert json.loads((pyg / "config.json").read_text())["engine"] == "pyg"


def test_settings_pyg_cannot_honour_are_refused():
    with pytest.raises(ValueError, match="engine='dgl': expected one of"):
        TrainConfig(engine="dgl")
    with pytest.raises(ValueError, match="encoder must be 'gat'"):
        check_model_config(method_config("G-Retriever (PyG)", "explagraphs", {"model": {"encoder": "gt"}}).model, "cpu")
    with pytest.raises(ValueError, match="fixes LoRA"):
        check_model_config(method_config("G-Retriever (PyG) + LoRA", "explagraphs", {"model": {"lora_r": 16}}).model,
                           "cpu")
    with pytest.raises(ValueError, match="question_first must be false"):
        check_model_config(method_config("G-Retriever (PyG)", "explagraphs", {"model": {"question_first": True}}).model,
                           "cpu")


def test_an_interrupted_pyg_run_resumes_to_the_weights_of_an_uninterrupted_one(tiny_llm, tiny_encoder_path,
                                                                                 tmp_path):
    whole = reference(tiny_llm, tiny_encoder_path, tmp_path / "whole", epochs=2)
    whole.train()
    cut = reference(tiny_llm, tiny_encoder_path, tmp_path / "cut", epochs=2)
    cut.train(stop_after_steps=3)  # a kill in the second epoch leaves a checkpoint
    assert (tmp_path / "cut" / "checkpoint.pt").exists()
    resumed = reference(tiny_llm, tiny_encoder_path, tmp_path / "cut", epochs=2)
    assert resumed.resume() and resumed.state["epoch"] == 1
    resumed.train()
    expected, got = whole.model.trainable_state(), resumed.model.trainable_state()
    assert expected.keys() == got.keys() and all(torch.equal(expected[k], got[k]) for k in expected)


def test_a_folder_that_ships_sampling_defaults_still_answers_greedily(tmp_path):
    """Llama-2-7b-hf's generation config samples (temperature 0.6, top-p 0.9); PyG's `inference` calls `generate`
    without `do_sample`, so its test answers were drawn at random: the same question, two seeds, two answers."""
    llm = load_pyg_llm(str(make_llama2_base_like(tmp_path / "llama2_like")), torch.float32, "cpu")
    assert llm.llm.generation_config.do_sample is False
    answers = []
    for seed in (0, 1, 2):
        torch.manual_seed(seed)
        answers.append(llm.inference(["Question: is there a cat?\n\nAnswer:"] * 2, ["cat chases dog"] * 2,
                                     max_tokens=8))
    assert answers[0] == answers[1] == answers[2] and answers[0][0] == answers[0][1]
