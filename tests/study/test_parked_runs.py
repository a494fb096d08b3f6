"""Unfinished runs carried between checkouts: parked, put back, resumed to the weights of an uninterrupted run."""

from __future__ import annotations

import shutil

import pytest
import torch
from tiny_models import CHATML, make_tiny_model

from toporag_lib import atomic
from toporag_lib.generation.soft_prompt import ModelConfig
from toporag_lib.study import parked_runs
from toporag_lib.study.experiments import config_digest
from toporag_lib.training.ledger import RECORD
from toporag_lib.training.train_config import TrainConfig
from toporag_lib.training.trainer import Trainer


def fake_run(folder, step: int, finished: bool = False):
    folder.mkdir(parents=True)
    (folder / "config.json").write_text('{"seed": 1}')
    atomic.torch_save({"state": {"epoch": 0, "step": step}}, folder / "checkpoint.pt")
    if finished:
        (folder / "metrics_test.json").write_text("{}")
    return folder


def test_only_unfinished_runs_with_an_intact_checkpoint_are_parked(tmp_path):
    runs, parked = tmp_path / "cache", tmp_path / "parked"
    fake_run(runs / "synthetic_scenes" / "a-0123456789", step=50)
    fake_run(runs / "synthetic_scenes" / "b-1111111111", step=450, finished=True)
    damaged = fake_run(runs / "explagraphs" / "c-2222222222", step=100) / "checkpoint.pt"
    damaged.write_bytes(damaged.read_bytes()[:-3] + b"000")
    assert parked_runs.park(runs, parked) == [(parked / "synthetic_scenes" / "a-0123456789", (0, 50))]
    assert [p.relative_to(parked).as_posix() for p in sorted(parked.rglob("*")) if p.is_file()] == [
        "synthetic_scenes/a-0123456789/checkpoint.pt", "synthetic_scenes/a-0123456789/config.json"]


def test_unpark_restores_what_the_cache_lacks_keeps_a_later_checkpoint_and_releases_recorded_runs(tmp_path):
    runs, parked, ledger = tmp_path / "cache", tmp_path / "parked", tmp_path / "ledger"
    fake_run(parked / "synthetic_scenes" / "a-0123456789", step=50)
    fake_run(parked / "synthetic_scenes" / "b-1111111111", step=50)
    fake_run(parked / "explagraphs" / "c-2222222222", step=100)
    fake_run(runs / "synthetic_scenes" / "b-1111111111", step=200)  # this checkout went further
    (ledger / "explagraphs-2222222222").mkdir(parents=True)
    (ledger / "explagraphs-2222222222" / RECORD).write_text("{}")  # finished elsewhere
    restored = parked_runs.unpark(runs, ledger, parked)
    assert restored == [(runs / "synthetic_scenes" / "a-0123456789", (0, 50))]
    assert parked_runs.progress(runs / "synthetic_scenes" / "b-1111111111") == (0, 200)
    assert not (parked / "explagraphs").exists() and (parked / "synthetic_scenes" / "b-1111111111").exists()


def test_the_selected_epochs_weights_travel_with_a_parked_run_and_a_stale_copy_does_not_stay(tmp_path):
    runs, parked, other = tmp_path / "cache", tmp_path / "parked", tmp_path / "other"
    (fake_run(runs / "explagraphs" / "a-0123456789", step=50) / "best.pt").write_bytes(b"epoch 1 weights")
    parked_runs.park(runs, parked)
    assert (parked / "explagraphs" / "a-0123456789" / "best.pt").read_bytes() == b"epoch 1 weights"
    fake_run(parked / "explagraphs" / "b-1111111111", step=50)  # parked before it selected an epoch
    (fake_run(other / "explagraphs" / "b-1111111111", step=10) / "best.pt").write_bytes(b"an earlier attempt's")
    parked_runs.unpark(other, tmp_path / "ledger", parked)
    assert (other / "explagraphs" / "a-0123456789" / "best.pt").read_bytes() == b"epoch 1 weights"
    assert not (other / "explagraphs" / "b-1111111111" / "best.pt").exists()


def test_a_damaged_parked_checkpoint_is_refused_by_path(tmp_path):
    checkpoint = fake_run(tmp_path / "parked" / "explagraphs" / "c-2222222222", step=100) / "checkpoint.pt"
    checkpoint.write_bytes(b"x" + checkpoint.read_bytes()[1:])
    with pytest.raises(atomic.DamagedFileError, match="c-2222222222"):
        parked_runs.unpark(tmp_path / "cache", tmp_path / "ledger", tmp_path / "parked")


def test_a_run_parked_in_one_checkout_resumes_in_another_to_the_uninterrupted_weights(tmp_path, tiny_encoder_path):
    llm = make_tiny_model(tmp_path / "llm", CHATML)
    config = TrainConfig.from_dict(dict(
        dataset="synthetic_scenes", dataset_options={"num_images": 8, "questions_per_image": 2, "seed": 1},
        limits={"train": 6, "val": 2, "test": 2}, encoder_path=str(tiny_encoder_path), llm_path=str(llm),
        llm_dtype="float32", epochs=2, batch_size=2, eval_batch_size=2, lr=1e-2, max_new_tokens=4, max_txt_len=48,
        checkpoint_every=1, model=ModelConfig(encoder="cellular", hidden_dim=16, projector_hidden=32, num_layers=1,
                                              dropout=0.2)))
    name = f"run-{config_digest(config)}"
    whole = Trainer(config, tmp_path / "whole", progress=False)
    whole.train()
    first, second, parked = tmp_path / "checkout1", tmp_path / "checkout2", tmp_path / "parked"
    Trainer(config, first / "synthetic_scenes" / name, progress=False).train(stop_after_steps=4)  # session ends
    assert parked_runs.park(first, parked) == [(parked / "synthetic_scenes" / name, (1, 1))]  # 3 steps an epoch
    shutil.rmtree(first)  # the run cache is not committed
    assert parked_runs.unpark(second, tmp_path / "ledger", parked) == [(second / "synthetic_scenes" / name, (1, 1))]
    resumed = Trainer(config, second / "synthetic_scenes" / name, progress=False)
    assert resumed.resume() and (resumed.state["epoch"], resumed.state["step"]) == (1, 1)
    resumed.train()
    expected, got = whole.model.trainable_state(), resumed.model.trainable_state()
    assert expected.keys() == got.keys() and all(torch.equal(expected[k], got[k]) for k in expected)
    chosen = [atomic.torch_load(run / "best.pt", weights_only=True) for run in (tmp_path / "whole", resumed.out)]
    assert all(torch.equal(chosen[0][k], chosen[1][k]) for k in chosen[0])  # the epoch it evaluates, too
