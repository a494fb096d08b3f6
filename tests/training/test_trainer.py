"""Model and training loop on tiny models made in code: what learns, what is frozen, resuming, outputs."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
import torch
from tiny_models import CHATML, make_tiny_model

from toporag_lib import atomic
from toporag_lib.data.registry import dataset_spec
from toporag_lib.data.testbed.vocabulary import ANSWERS
from toporag_lib.generation.inputs import collate
from toporag_lib.generation.soft_prompt import ModelConfig
from toporag_lib.settings import ConfigError, parse_overrides
from toporag_lib.training import trainer as trainer_module
from toporag_lib.training.examples import texts_cut
from toporag_lib.training.train_config import TrainConfig
from toporag_lib.training.trainer import Trainer, run, run_to_end


@pytest.fixture(scope="module")
def tiny_llm(tmp_path_factory):
    return make_tiny_model(tmp_path_factory.mktemp("tiny_llm"), CHATML)


# The retrieval the tolerances below were set on (before the testbed's defaults).
V1_PIPELINE = {"lift": {"basis": "fundamental", "tree": "bfs", "parallel": "digon"}, "edge_text": "relation",
               "retrieval": {"k1": 5, "cells": "top_k"}}


def config(tiny_llm, tiny_encoder_path, **overrides) -> TrainConfig:
    options = {"num_images": 8, "questions_per_image": 2, "seed": 1, "version": 1}  # the trainer's mechanics, on v1
    values = dict(dataset="synthetic_scenes", dataset_options=options, **V1_PIPELINE,
                  limits={"train": 6, "val": 2, "test": 2}, encoder_path=str(tiny_encoder_path),
                  llm_path=str(tiny_llm), llm_dtype="float32", epochs=2, batch_size=2, eval_batch_size=2,
                  lr=1e-2, max_new_tokens=4, max_txt_len=48, max_grad_norm=1.0, checkpoint_every=1, patience=5,
                  model=ModelConfig(encoder="cellular", hidden_dim=16, projector_hidden=32, num_layers=1))
    values.update(overrides)
    return TrainConfig.from_dict(values)


def trainable_names(trainer: Trainer) -> set[str]:
    return {name for name, p in trainer.model.named_parameters() if p.requires_grad}


def test_prompt_tuning_trains_only_encoder_and_projector(tiny_llm, tiny_encoder_path, tmp_path):
    trainer = Trainer(config(tiny_llm, tiny_encoder_path), tmp_path, progress=False)
    names = trainable_names(trainer)
    assert names and all(n.startswith(("encoder.", "projector.")) for n in names)
    before = {n: p.detach().clone() for n, p in trainer.model.named_parameters()}
    trainer.train(stop_after_steps=2)
    after = dict(trainer.model.named_parameters())
    changed = {n for n in before if not torch.equal(before[n], after[n].detach())}
    assert changed == names  # every trainable weight moved, nothing else did


def test_lora_adds_only_adapters(tiny_llm, tiny_encoder_path, tmp_path):
    model = ModelConfig(encoder="cellular", hidden_dim=16, projector_hidden=32, num_layers=1, lora=True)
    trainer = Trainer(config(tiny_llm, tiny_encoder_path, model=model), tmp_path, progress=False)
    names = trainable_names(trainer)
    assert any("lora_" in n for n in names)
    assert all(n.startswith(("encoder.", "projector.")) or "lora_" in n for n in names)
    assert len(trainer.optimizer.param_groups) == 2  # graph side and adapters, each with its own learning rate


def test_loss_decreases_on_a_small_batch(tiny_llm, tiny_encoder_path, tmp_path):
    cfg = config(tiny_llm, tiny_encoder_path, limits={"train": 2, "val": 2, "test": 2}, epochs=30, patience=100,
                 warmup_ratio=0.0, schedule="constant")  # cosine decays before this model leaves its plateau
    trainer = Trainer(cfg, tmp_path, progress=False)  # one batch of two questions, seen 30 times
    trainer.train(stop_after_steps=30)
    losses = [h["loss"] for h in trainer.state["history"] if h["loss"] is not None]
    assert len(losses) == 30
    assert sum(losses[-3:]) / 3 < 0.75 * losses[0]


def test_a_killed_run_resumes_to_the_same_weights(tiny_llm, tiny_encoder_path, tmp_path):
    model = ModelConfig(encoder="cellular", hidden_dim=16, projector_hidden=32, num_layers=1, dropout=0.2)
    cfg = config(tiny_llm, tiny_encoder_path, model=model)
    whole = Trainer(cfg, tmp_path / "whole", progress=False)
    whole.train()
    killed = Trainer(cfg, tmp_path / "killed", progress=False)
    killed.train(stop_after_steps=4)  # mid-epoch 2 (3 steps per epoch): the process "dies" here
    resumed = Trainer(cfg, tmp_path / "killed", progress=False)
    assert resumed.resume() and resumed.state["epoch"] == 1 and resumed.state["step"] == 1
    resumed.train()
    expected, got = whole.model.trainable_state(), resumed.model.trainable_state()
    assert expected.keys() == got.keys()
    assert all(torch.equal(expected[k], got[k]) for k in expected)


def test_a_question_conditioned_pool_trains_and_gives_each_question_its_own_soft_prompt(tiny_llm, tiny_encoder_path,
                                                                                     tmp_path):
    from toporag_lib.generation.inputs import collate
    from toporag_lib.training.ledger import config_digest

    model = ModelConfig(encoder="cellular", hidden_dim=16, projector_hidden=32, num_layers=1, readout="question")
    trainer = Trainer(config(tiny_llm, tiny_encoder_path, model=model), tmp_path, progress=False)
    trainer.train(stop_after_steps=2)
    assert all(math.isfinite(h["loss"]) for h in trainer.state["history"] if h["loss"] is not None)
    assert any(n.startswith("readout.") for n in trainable_names(trainer))
    batch = collate(trainer.examples["train"][:2])
    first = trainer.model.soft_prompt(batch)
    batch.graphs.query = batch.graphs.query.flip(0)  # the same complexes, the other question each
    assert not torch.allclose(first, trainer.model.soft_prompt(batch))
    with pytest.raises(ValueError, match="ModelConfig.readout='max'"):
        ModelConfig(readout="max")
    plain = config(tiny_llm, tiny_encoder_path).to_dict()
    assert config_digest(plain) == config_digest({**plain, "model": {k: v for k, v in plain["model"].items()
                                                                      if k != "readout"}})


def test_a_checkpoint_without_its_selected_epochs_weights_is_refused_before_any_work(tiny_llm, tiny_encoder_path,
                                                                                     tmp_path, monkeypatch):
    cfg = config(tiny_llm, tiny_encoder_path)
    Trainer(cfg, tmp_path, progress=False).train(stop_after_steps=4)  # epoch 1 selected, then a step of epoch 2
    (tmp_path / "best.pt").unlink()  # carried without it: evaluating would load epoch 2's weights as epoch 1's
    monkeypatch.setattr("toporag_lib.training.trainer.make_examples", lambda *a: pytest.fail("prepared the data"))
    with pytest.raises(FileNotFoundError, match=r"best\.pt is missing.*selected epoch 1"):
        Trainer(cfg, tmp_path, progress=False)


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_a_killed_cuda_run_with_dropout_resumes_to_the_same_weights(tiny_llm, tiny_encoder_path, tmp_path):
    """The checkpoint keeps CUDA's random state too, so dropout on the GPU repeats after a resume."""
    model = ModelConfig(encoder="cellular", hidden_dim=16, projector_hidden=32, num_layers=1, dropout=0.2, lora=True)
    cfg = config(tiny_llm, tiny_encoder_path, model=model, device="cuda")
    whole = Trainer(cfg, tmp_path / "whole", progress=False)
    whole.train()
    killed = Trainer(cfg, tmp_path / "killed", progress=False)
    killed.train(stop_after_steps=4)
    assert atomic.torch_load(killed.checkpoint_path, weights_only=False)["cuda_rng"]  # saved, not empty
    torch.cuda.manual_seed_all(12345)  # a new process would start from another CUDA state
    resumed = Trainer(cfg, tmp_path / "killed", progress=False)
    assert resumed.resume()
    resumed.train()
    expected, got = whole.model.trainable_state(), resumed.model.trainable_state()
    assert all(torch.equal(expected[k].cpu(), got[k].cpu()) for k in expected)


def test_a_finished_constant_rate_run_extends_to_the_weights_of_a_longer_run(tiny_llm, tiny_encoder_path, tmp_path):
    cfg = config(tiny_llm, tiny_encoder_path, schedule="constant", warmup_ratio=0.0)
    whole = Trainer(cfg, tmp_path / "whole", progress=False)
    whole.train()
    short = Trainer(config(tiny_llm, tiny_encoder_path, schedule="constant", warmup_ratio=0.0, epochs=1),
                    tmp_path / "short", progress=False)
    short.train()
    assert short.state["done"] and short.state["epoch"] == 1
    extended = Trainer(cfg, tmp_path / "short", progress=False)
    assert extended.resume() and not extended.state["done"]
    extended.train()
    assert extended.state["epoch"] == 2
    expected, got = whole.model.trainable_state(), extended.model.trainable_state()
    assert all(torch.equal(expected[k], got[k]) for k in expected)


def test_resuming_under_another_config_is_refused(tiny_llm, tiny_encoder_path, tmp_path):
    cosine = {"schedule": "cosine", "warmup_ratio": 0.1}
    Trainer(config(tiny_llm, tiny_encoder_path, epochs=1, **cosine), tmp_path, progress=False).train(stop_after_steps=1)
    with pytest.raises(ValueError, match=r"different config \(lr\)"):
        Trainer(config(tiny_llm, tiny_encoder_path, epochs=1, lr=5e-3, **cosine), tmp_path, progress=False)
    with pytest.raises(ValueError, match="from 1 to 2 epochs"):  # cosine: more epochs reshape the schedule
        Trainer(config(tiny_llm, tiny_encoder_path, epochs=2, **cosine), tmp_path, progress=False)
    assert json.loads((tmp_path / "config.json").read_text())["epochs"] == 1  # the folder still describes its run


def test_run_writes_config_history_predictions_and_metrics(tiny_llm, tiny_encoder_path, tmp_path):
    metrics = run(config(tiny_llm, tiny_encoder_path, epochs=1), tmp_path, progress=False)
    assert metrics["n"] == 2 and 0.0 <= metrics["score"] <= 1.0
    assert set(metrics["per_family"]) <= {"attribute", "path", "loop"}
    saved = json.loads((tmp_path / "config.json").read_text())
    assert saved["model"]["encoder"] == "cellular" and saved["seed"] == 42
    records = [json.loads(line) for line in (tmp_path / "predictions_test.jsonl").read_text().splitlines()]
    assert len(records) == 2 and {"pred", "label", "family", "choice"} <= set(records[0])
    assert all(r["choice"] in ANSWERS[r["family"]] for r in records)  # the closed-answer pick, from its vocabulary
    right = [r["choice"] == r["label"] for r in records]
    assert metrics["closed"]["score"] == sum(right) / 2 and set(metrics["closed"]["per_family"]) <= set(ANSWERS)
    assert (tmp_path / "history.csv").exists() and (tmp_path / "best.pt").exists()


def test_every_long_phase_shows_a_progress_bar(tiny_llm, tiny_encoder_path, tmp_path, capsys):
    run(config(tiny_llm, tiny_encoder_path, epochs=1, select_by="val_score"), tmp_path, progress=True)
    shown = capsys.readouterr().err
    for phase in ("epoch 1", "validation loss", "validation answers", "generating"):
        assert phase in shown, phase


def test_inference_only_configuration(tiny_llm, tiny_encoder_path, tmp_path):
    cfg = config(tiny_llm, tiny_encoder_path, train=False, model=ModelConfig(encoder=None))
    metrics = run(cfg, tmp_path, progress=False)
    assert metrics["epochs_run"] == 0 and metrics["n"] == 2


def test_unknown_config_keys_and_wrong_types_are_named_at_every_depth():
    for values, where in (({"epochz": 3}, r"TrainConfig: unknown key\(s\) \['epochz'\]"),
                          ({"limits": {"trian": 5}}, r"TrainConfig.limits: unknown key\(s\) \['trian'\]"),
                          ({"retrieval": {"k_1": 1}}, r"TrainConfig.retrieval: unknown key\(s\) \['k_1'\]"),
                          ({"model": {"encoder": "gat", "layers": 2}}, r"TrainConfig.model: unknown key"),
                          ({"epochs": "two"}, r"TrainConfig.epochs: expected int, got 'two'"),
                          ({"lift": {"tree": 1}}, r"TrainConfig.lift.tree: expected str"),
                          ({"batch_size": 0}, r"TrainConfig.batch_size=0: expected a positive int"),
                          ({"lr": -1}, r"TrainConfig.lr=-1.0: expected a non-negative number"),
                          ({"llm_dtype": "bf16"}, r"TrainConfig.llm_dtype='bf16': expected one of")):
        with pytest.raises(ConfigError, match=where):
            TrainConfig.from_dict(values)


def test_a_partial_retrieval_changes_only_its_keys_over_the_datasets_defaults():
    explagraphs = TrainConfig.from_dict({"dataset": "explagraphs", "retrieval": {"k2": 0}}).retrieval
    assert explagraphs.method == "whole_graph" and explagraphs.k2 == 0  # the dataset's method stays
    webqsp = TrainConfig.from_dict({"dataset": "webqsp", "retrieval": {"k2": 3}}).retrieval
    assert (webqsp.method, webqsp.k1, webqsp.k2) == ("toporag", 3, 3)
    assert TrainConfig(dataset="explagraphs").retrieval.method == "whole_graph"


def test_command_line_overrides():
    assert parse_overrides(["epochs=1", "model.encoder=gat", "dataset=explagraphs", "limits.train=null"]) == {
        "epochs": 1, "model": {"encoder": "gat"}, "dataset": "explagraphs", "limits": {"train": None}}


def test_constant_schedule_and_betas_reach_the_optimizer(tiny_llm, tiny_encoder_path, tmp_path):
    cfg = config(tiny_llm, tiny_encoder_path, schedule="constant", adam_betas=[0.9, 0.95], warmup_ratio=0.0)
    trainer = Trainer(cfg, tmp_path, progress=False)
    trainer.train(stop_after_steps=3)
    assert all(g["lr"] == cfg.lr and g["betas"] == (0.9, 0.95) for g in trainer.optimizer.param_groups)
    with pytest.raises(ValueError, match="schedule='linear': expected one of"):
        TrainConfig(schedule="linear")


def test_selection_by_validation_score_keeps_the_best_scoring_epoch(tiny_llm, tiny_encoder_path, tmp_path,
                                                                   monkeypatch):
    losses, scores = iter([0.9, 0.8, 0.7]), iter([0.2, 0.5, 0.3])  # by loss the last epoch would win
    monkeypatch.setattr(trainer_module, "validation_loss", lambda *args: next(losses))
    monkeypatch.setattr(trainer_module, "validation_score", lambda *args: (next(scores), {}))
    trainer = Trainer(config(tiny_llm, tiny_encoder_path, epochs=3, select_by="val_score"), tmp_path, progress=False)
    trainer.train()
    assert trainer.state["best_epoch"] == 1 and trainer.state["bad_epochs"] == 1
    best, last = atomic.torch_load(tmp_path / "best.pt", weights_only=True), trainer.model.trainable_state()
    assert any(not torch.equal(best[k], last[k]) for k in best)  # the kept weights are not the last epoch's
    metrics = trainer.evaluate("test")
    assert metrics["selected_by"] == "val_score" and metrics["selected_epoch"] == 2
    assert metrics["best_val_score"] == 0.5 and metrics["best_val_loss"] == 0.8
    with pytest.raises(ValueError, match="select_by='val_accuracy': expected one of"):
        TrainConfig(select_by="val_accuracy")


def test_validation_score_is_the_metric_of_greedy_answers(tiny_llm, tiny_encoder_path, tmp_path, monkeypatch):
    trainer = Trainer(config(tiny_llm, tiny_encoder_path, limits={"train": 2, "val": 4, "test": 2}), tmp_path,
                      progress=False)  # every other answer right
    monkeypatch.setattr(trainer.model, "generate", lambda batch, *args: [
        label if i % 2 == 0 else "no idea" for i, label in enumerate(batch.labels)])
    assert trainer_module.validation_score(trainer.model, trainer.examples["val"], trainer.config)[0] == 0.5


def test_each_epochs_validation_keeps_accuracy_and_the_most_common_answers_share_per_family(
        tiny_llm, tiny_encoder_path, tmp_path, monkeypatch):
    trainer = Trainer(config(tiny_llm, tiny_encoder_path, epochs=1, select_by="val_score",
                             limits={"train": 2, "val": 12, "test": 2}), tmp_path, progress=False)
    monkeypatch.setattr(trainer.model, "generate", lambda batch, *args: ["no"] * len(batch.labels))  # a collapse
    trainer.train()
    val = trainer.examples["val"]
    by_family = trainer.state["history"][-1]["val_by_family"]
    assert set(by_family) == {e.family for e in val} and len(by_family) > 1
    for family, seen in by_family.items():
        labels = [e.label for e in val if e.family == family]
        assert seen["accuracy"] == pytest.approx(labels.count("no") / len(labels))
        # one answer to every question of a yes/no family; on the others "no" is no candidate answer at all
        assert seen["one_answer"] == (1.0 if "no" in dataset_spec("synthetic_scenes").choices_for(family) else 0.0)
    assert trainer.evaluate("test")["validation"][-1]["by_family"] == by_family  # and it reaches the run's metrics


def test_a_checkpoint_from_before_a_new_config_field_still_resumes(tiny_llm, tiny_encoder_path, tmp_path):
    cfg = config(tiny_llm, tiny_encoder_path, epochs=1)
    Trainer(cfg, tmp_path, progress=False).train(stop_after_steps=1)
    saved = json.loads((tmp_path / "config.json").read_text())
    del saved["select_by"]  # as written by a version without this field (its default then)
    (tmp_path / "config.json").write_text(json.dumps(saved))
    resumed = Trainer(cfg, tmp_path, progress=False)
    assert resumed.resume() and resumed.state["step"] == 1


def test_a_checkpoint_from_before_a_later_key_resumes_at_its_old_value_only(tiny_llm, tiny_encoder_path, tmp_path):
    old = config(tiny_llm, tiny_encoder_path, epochs=1, embedding_batching="single")
    Trainer(old, tmp_path, progress=False).train(stop_after_steps=1)
    saved = json.loads((tmp_path / "config.json").read_text())
    del saved["embedding_batching"]  # written before the key existed, when every text was encoded alone
    (tmp_path / "config.json").write_text(json.dumps(saved))
    resumed = Trainer(old, tmp_path, progress=False)
    assert resumed.resume() and resumed.state["step"] == 1
    with pytest.raises(ValueError, match="embedding_batching"):
        Trainer(config(tiny_llm, tiny_encoder_path, epochs=1, embedding_batching="length"), tmp_path, progress=False)


@pytest.mark.parametrize("path", sorted((Path(__file__).parents[2] / "configs").glob("*.json")), ids=lambda p: p.name)
def test_shipped_configs_are_valid(path):
    config = TrainConfig.from_dict(json.loads(path.read_text()))
    assert config.dataset in path.name


def test_several_soft_tokens_are_distinct_and_follow_the_graph(tiny_llm, tiny_encoder_path, tmp_path):
    model = ModelConfig(encoder="cellular", hidden_dim=16, projector_hidden=32, num_layers=1, num_soft_tokens=3,
                        virtual_tokens=2)
    trainer = Trainer(config(tiny_llm, tiny_encoder_path, model=model), tmp_path, progress=False)
    batch = collate(trainer.examples["train"][:2])
    soft = trainer.model.soft_prompt(batch)
    assert soft.shape == (2, 5, trainer.model.llm.hidden_size)  # 3 from the complex, then 2 virtual tokens
    assert not torch.allclose(soft[0, 0], soft[0, 1])  # each graph token is its own slice of the projector
    assert torch.equal(soft[0, 3:], soft[1, 3:])  # virtual tokens do not depend on the graph
    assert torch.isfinite(trainer.model.loss(batch, max_txt_len=48))


def test_resuming_clears_the_temporary_files_of_killed_checkpoint_writes(tiny_llm, tiny_encoder_path, tmp_path):
    import os
    import time

    cfg = config(tiny_llm, tiny_encoder_path)
    Trainer(cfg, tmp_path, progress=False).train(stop_after_steps=1)
    stale, fresh = tmp_path / ".checkpoint.pt.a1.tmp", tmp_path / ".checkpoint.pt.b2.tmp"
    for leftover in (stale, fresh):
        leftover.write_bytes(b"half a checkpoint")
    os.utime(stale, (time.time() - 7200, time.time() - 7200))
    assert Trainer(cfg, tmp_path, progress=False).resume()
    assert not stale.exists() and fresh.exists()  # a fresh one may belong to a live writer


def test_a_limit_keeps_twins_together_and_leaves_questions_without_twins_as_before():
    from toporag_lib.training.trainer import limited

    indices = list(range(10, 40))
    plain = limited(indices, 12, seed=3)
    assert len(plain) == 12 and plain == sorted(plain) and limited(indices, 12, 3, {}) == plain  # no twins: unchanged
    pairs = {i: f"p{i // 2}" for i in range(10, 30)}  # 10 twin pairs, then 10 questions without a twin
    kept = limited(indices, 12, seed=3, pairs=pairs)
    assert len(kept) == 12 and kept == sorted(kept) and set(kept) <= set(indices)
    for i in kept:
        if i in pairs:  # its twin came along
            assert sum(pairs.get(j) == pairs[i] for j in kept) == 2
    assert kept == limited(indices, 12, seed=3, pairs=pairs) and limited(indices, None, 3, pairs) == indices


class _RunsCode:
    """A pickle payload that would run code when unpickled (writes a marker file)."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):
        return (Path.write_text, (self.marker, "ran"))


def test_a_checkpoint_that_would_run_code_is_refused_naming_the_file(tiny_llm, tiny_encoder_path, tmp_path):
    from toporag_lib.study import parked_runs

    cfg = config(tiny_llm, tiny_encoder_path, epochs=1)
    out = tmp_path / "run"
    trainer = Trainer(cfg, out, progress=False)
    marker = tmp_path / "marker.txt"
    atomic.torch_save({"model": {}, "state": {"epoch": 0, "step": 1}, "payload": _RunsCode(marker)},
                      trainer.checkpoint_path)  # a valid checksum: anyone can compute one
    with pytest.raises(atomic.DamagedFileError, match="checkpoint.pt"):
        trainer.resume()
    with pytest.raises(atomic.DamagedFileError, match="checkpoint.pt"):
        parked_runs.progress(out)
    atomic.torch_save({"weights": _RunsCode(marker)}, out / "best.pt")
    with pytest.raises(atomic.DamagedFileError, match="best.pt"):
        trainer.evaluate("test")
    trainer.close()
    parked = tmp_path / "parked" / "synthetic_scenes" / out.name  # a parked run, as `unpark` finds it
    parked.mkdir(parents=True)
    for name in ("config.json", "checkpoint.pt"):
        (parked / name).write_bytes((out / name).read_bytes())
    with pytest.raises(atomic.DamagedFileError, match=f"{out.name}/checkpoint.pt"):
        parked_runs.unpark(tmp_path / "cache", tmp_path / "ledger", tmp_path / "parked")
    assert not marker.exists() and not (tmp_path / "cache").exists()


def test_every_resume_checks_the_checkpoints_own_config(tiny_llm, tiny_encoder_path, tmp_path):
    """A checkpoint of another config in a folder whose config.json matches (copied in, say) is refused at resume."""
    ours, theirs = tmp_path / "ours", tmp_path / "theirs"
    Trainer(config(tiny_llm, tiny_encoder_path, epochs=1), ours, progress=False).train(stop_after_steps=1)
    Trainer(config(tiny_llm, tiny_encoder_path, epochs=1, lr=5e-3), theirs, progress=False).train(stop_after_steps=1)
    (ours / "checkpoint.pt").write_bytes((theirs / "checkpoint.pt").read_bytes())
    trainer = Trainer(config(tiny_llm, tiny_encoder_path, epochs=1), ours, progress=False)
    with pytest.raises(ValueError, match=r"different config \(lr\)"):
        trainer.resume()


def test_the_share_of_graph_texts_cut_at_max_txt_len_is_counted_and_recorded(tiny_llm, tiny_encoder_path, tmp_path):
    with Trainer(config(tiny_llm, tiny_encoder_path, epochs=1), tmp_path, progress=False) as trainer:
        lengths = {split: trainer.model.n_tokens([e.text for e in part])
                   for split, part in trainer.examples.items()}
        assert trainer.texts_cut == {split: 1.0 for split in lengths}  # every text is longer than 48 tiny tokens
        metrics = run_to_end(trainer)
    assert metrics["texts_cut"] == 1.0
    middle = int(np.median(lengths["train"]))
    shares = texts_cut(trainer.examples, trainer.model.n_tokens, middle)
    assert shares == {split: np.mean([n > middle for n in counts]) for split, counts in lengths.items()}
    assert 0 < shares["train"] < 1
