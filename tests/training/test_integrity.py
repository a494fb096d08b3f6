"""Nothing damaged is trusted and nothing empty passes for success: damaged checkpoints and best weights are refused
by path, a NaN loss stops the run, an empty split and a wrong model folder are refused before any work."""

from __future__ import annotations

import json
import math
import re

import pytest
import torch
from test_trainer import config
from tiny_models import CHATML, make_tiny_model

from toporag_lib import atomic
from toporag_lib.training import trainer as trainer_module
from toporag_lib.training.trainer import Trainer


@pytest.fixture(scope="module")
def tiny_llm(tmp_path_factory):
    return make_tiny_model(tmp_path_factory.mktemp("tiny_llm"), CHATML)


def truncate(path):
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])


def test_checksummed_files_refuse_damage_by_path(tmp_path):
    path = atomic.torch_save({"x": torch.arange(1000)}, tmp_path / "f.pt")
    assert torch.equal(atomic.torch_load(path)["x"], torch.arange(1000)) and atomic.is_intact(path)
    data = bytearray(path.read_bytes())
    data[100] ^= 1
    path.write_bytes(bytes(data))
    with pytest.raises(atomic.DamagedFileError, match="f.pt is damaged: its SHA-256 does not match"):
        atomic.torch_load(path)
    truncate(path)
    assert not atomic.is_intact(path)
    legacy = tmp_path / "old.pt"  # written before checksums: loads when whole, named error when not
    torch.save({"x": 1}, legacy)
    assert atomic.torch_load(legacy) == {"x": 1}
    truncate(legacy)
    with pytest.raises(atomic.DamagedFileError, match="old.pt is damaged: no checksum and no zip end record"):
        atomic.torch_load(legacy)


def test_a_truncated_checkpoint_or_best_weights_is_refused_by_path(tiny_llm, tiny_encoder_path, tmp_path):
    cfg = config(tiny_llm, tiny_encoder_path, epochs=1)
    trainer = Trainer(cfg, tmp_path, progress=False)
    trainer.train(stop_after_steps=1)
    truncate(tmp_path / "checkpoint.pt")
    with pytest.raises(atomic.DamagedFileError, match="checkpoint.pt is damaged.*delete it to restart"):
        Trainer(cfg, tmp_path, progress=False).resume()
    (tmp_path / "checkpoint.pt").unlink()
    trainer = Trainer(cfg, tmp_path, progress=False)
    trainer.train()
    truncate(tmp_path / "best.pt")
    with pytest.raises(atomic.DamagedFileError, match="best.pt is damaged"):
        trainer.evaluate()


@pytest.mark.filterwarnings(r"ignore:Detected call of `lr_scheduler.step\(\)`")
def test_a_nan_loss_stops_the_run_with_its_step(tiny_llm, tiny_encoder_path, tmp_path, monkeypatch):
    monkeypatch.setattr(trainer_module, "train_step", lambda *args: torch.tensor(math.nan))
    trainer = Trainer(config(tiny_llm, tiny_encoder_path), tmp_path, progress=False)
    with pytest.raises(FloatingPointError, match="training loss is nan at epoch 1, step 1"):
        trainer.train()
    assert not (tmp_path / "best.pt").exists()


def test_an_empty_training_split_is_refused_before_the_model_loads(tiny_llm, tiny_encoder_path, tmp_path,
                                                                   monkeypatch):
    def no_model(*args, **kwargs):
        raise AssertionError("the model was built")

    monkeypatch.setattr(trainer_module, "build_model", no_model)
    with pytest.raises(ValueError, match="has no train questions left under limits"):
        Trainer(config(tiny_llm, tiny_encoder_path, limits={"train": 0, "val": 2, "test": 2}), tmp_path)


def test_wrong_model_folders_are_refused_before_any_preprocessing(tiny_llm, tiny_encoder_path, tmp_path,
                                                                  monkeypatch):
    def no_preprocessing(*args, **kwargs):
        raise AssertionError("the dataset was prepared")

    monkeypatch.setattr(trainer_module, "make_examples", no_preprocessing)
    with pytest.raises(FileNotFoundError, match="no model folder at .*missing"):
        Trainer(config(tiny_llm, tiny_encoder_path, llm_path=str(tmp_path / "missing")), tmp_path / "a")
    with pytest.raises(ValueError, match="is a sentence-transformers folder .*not an LLM"):
        Trainer(config(tiny_llm, tiny_encoder_path, llm_path=str(tiny_encoder_path)), tmp_path / "b")
    encoder_config = json.loads((tiny_llm / "config.json").read_text())
    assert any(a.endswith("ForCausalLM") for a in encoder_config["architectures"])
    with pytest.raises(FileNotFoundError, match="not a sentence-transformers model folder"):
        Trainer(config(tiny_llm, tiny_encoder_path, encoder_path=str(tmp_path)), tmp_path / "c")


@pytest.mark.parametrize("change, message", [
    ({"model": {"encoder": "gnn"}}, r"ModelConfig.encoder='gnn': expected one of"),
    ({"model": {"hidden_dim": 0}}, r"ModelConfig.hidden_dim=0: expected a positive int"),
    ({"model": {"dropout": 1.5}}, r"ModelConfig.dropout=1.5: expected a number in \[0, 1\)"),
    ({"retrieval": {"k0": -1}}, r"RetrievalConfig.k0=-1: expected an int >= 0"),
    ({"lift": {"tree": "bfss"}}, r"tree"),
])
def test_wrong_settings_are_refused_when_the_config_is_made(change, message):
    from toporag_lib.settings import ConfigError
    from toporag_lib.training.train_config import TrainConfig

    with pytest.raises((ValueError, ConfigError), match=message):
        TrainConfig.from_dict({"dataset": "synthetic_scenes", **change})


@pytest.mark.parametrize("text", ['{"epochs": 1,', '[1, 2]'])
def test_a_config_file_that_is_not_a_json_object_is_named(tmp_path, text):
    from toporag_lib.training.__main__ import main

    path = tmp_path / "broken.json"
    path.write_text(text)
    with pytest.raises(ValueError, match=re.escape(str(path))):
        main(["--config", str(path), "--ledger", "none"])


@pytest.mark.parametrize("damaged", ["config.json", "metrics_test.json"])
def test_a_run_folders_damaged_json_is_named(tmp_path, damaged):
    from toporag_lib.training.train_config import TrainConfig
    from toporag_lib.training.ledger import record_run

    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / "config.json").write_text(json.dumps(TrainConfig().to_dict()))
    (run_dir / "metrics_test.json").write_text(json.dumps({"n": 1, "score": 1.0}))
    (run_dir / "predictions_test.jsonl").write_text("")
    (run_dir / damaged).write_text('{"n": 1, "sco')
    with pytest.raises(atomic.DamagedFileError, match=re.escape(str(run_dir / damaged))):
        record_run(run_dir, tmp_path / "ledger", "TopoRAG")


@pytest.fixture(scope="module")
def history_text(tiny_llm, tiny_encoder_path, tmp_path_factory):
    from toporag_lib.training.history import HISTORY_COLUMNS, read_history

    run_dir = tmp_path_factory.mktemp("run")
    trainer = Trainer(config(tiny_llm, tiny_encoder_path, epochs=1), run_dir, progress=False)
    trainer.train()
    trainer.evaluate("test")
    history = read_history(run_dir)
    assert list(history.columns) == HISTORY_COLUMNS and history.step.notna().sum() == 3  # 6 questions, batches of 2
    assert history.loss[history.step.notna()].gt(0).all() and history.val_loss.notna().sum() == 1
    return (run_dir / "history.csv").read_text()


@pytest.mark.parametrize("damage", ["truncated mid-row", "flipped byte", "nan replaced by text", "other columns",
                                    "step without loss", "empty"])
def test_a_damaged_history_is_named(history_text, tmp_path, damage):
    from toporag_lib.training.history import read_history

    first_step = history_text.splitlines()[1]
    damaged = {"truncated mid-row": history_text[: history_text.index(first_step) + 3],
               "flipped byte": history_text.replace(first_step, first_step.replace(",", ";", 1)),
               "nan replaced by text": history_text.replace(first_step, first_step.replace(",", ",x", 2)),
               "other columns": history_text.replace("val_loss", "validation_loss"),
               "step without loss": history_text.replace(first_step, ",".join(
                   "" if k == 2 else v for k, v in enumerate(first_step.split(",")))),
               "empty": ""}[damage]
    (tmp_path / "history.csv").write_text(damaged)
    with pytest.raises(atomic.DamagedFileError, match=re.escape(str(tmp_path / "history.csv"))):
        read_history(tmp_path)
