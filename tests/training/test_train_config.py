"""A config is refused when it is made, by field (and file), when a value could only fail later or change silently:
NaN and infinite numbers, keys given twice, negative limits, Adam betas outside [0, 1), seeds numpy refuses,
dataset options the dataset's loader does not take."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pytest

from toporag_lib.retrieval.retrieval_config import RetrievalConfig
from toporag_lib.settings import ConfigError, loads_config, parse_overrides
from toporag_lib.training import __main__ as command_line
from toporag_lib.training.train_config import TrainConfig, parse_train_config, read_train_config

CONFIGS = Path(__file__).parents[2] / "configs"


def run_main(tmp_path: Path, text: str, *sets: str) -> Path:
    """`python -m toporag_lib.training` on a config file holding `text`, up to where the run would start; the output
    folder it would write."""
    path = tmp_path / "my_config.json"
    path.write_text(text)
    out = tmp_path / "run"
    command_line.main(["--config", str(path), "--out", str(out), "--ledger", "none",
                       *(["--set", *sets] if sets else [])])
    return out


@pytest.mark.parametrize("text, sets, field", [
    ('{"dataset": "explagraphs", "lr": NaN}', (), r"TrainConfig\.lr: expected a finite number, got nan"),
    ('{"dataset": "explagraphs", "lora_lr": Infinity}', (), r"TrainConfig\.lora_lr: expected a finite number"),
    ('{"dataset": "explagraphs", "max_grad_norm": -Infinity}', (), r"TrainConfig\.max_grad_norm: expected a finite"),
    ('{"dataset": "explagraphs"}', ("lr=NaN",), r"with --set lr=NaN: TrainConfig\.lr: expected a finite number"),
    ('{"dataset": "explagraphs"}', ("limits.train=-3",),
     r"TrainConfig\.limits\.train=-3: expected None \(the whole split\) or an int >= 0"),
    ('{"dataset": "explagraphs", "adam_betas": [2, 5]}', (), r"TrainConfig\.adam_betas\[0\]=2\.0: expected a number in "
                                                              r"\[0, 1\)"),
    ('{"dataset": "explagraphs", "adam_betas": [0.9, 1.0]}', (), r"TrainConfig\.adam_betas\[1\]=1\.0"),
    ('{"dataset": "explagraphs", "adam_betas": [0.9]}', (), r"TrainConfig\.adam_betas=\[0\.9\]: expected two numbers"),
    ('{"dataset": "explagraphs", "seed": -1}', (), r"TrainConfig\.seed=-1: expected an int in \[0, 2\*\*32\)"),
    ('{"dataset": "explagraphs", "warmup_ratio": 1.5}', (), r"TrainConfig\.warmup_ratio=1\.5: expected a number in"),
    ('{"dataset": "explagraphs", "retrieval": {"c2": NaN}}', (), r"TrainConfig\.retrieval\.c2: expected a finite"),
    ('{"dataset": "explagraphs", "dataset_options": {"num_images": 3}}', (),
     r"TrainConfig\.dataset_options: unknown key\(s\) \['num_images'\] for dataset 'explagraphs'; known: \['root'\]"),
    ('{"dataset": "synthetic_scenes", "dataset_options": {"num_images": "300"}}', (),
     r"TrainConfig\.dataset_options\.num_images: expected int, got '300'"),
    ('{"dataset": "synthetic_scenes", "dataset_options": {"seed": NaN}}', (),
     r"TrainConfig\.dataset_options\.seed: expected a finite number"),
    ('{"dataset": "explagraphs", "epochs": 1, "epochs": 3}', (), r"key 'epochs' is given more than once"),
    ('{"dataset": "explagraphs", "model": {"hidden_dim": 8, "lora": true, "hidden_dim": 16}}', (),
     r"key 'model\.hidden_dim' is given more than once"),
    ('{"dataset": "wikidata"}', (), r"TrainConfig\.dataset: unknown dataset 'wikidata'"),
])
def test_a_bad_value_is_refused_by_file_and_field_before_any_work(tmp_path, monkeypatch, text, sets, field):
    monkeypatch.setattr(command_line, "Trainer", lambda *args: pytest.fail("the run started with this config"))
    with pytest.raises(ConfigError, match=re.escape(str(tmp_path / "my_config.json")) + ".*" + field):
        run_main(tmp_path, text, *sets)
    assert not (tmp_path / "run").exists()  # no config.json, no checkpoint


def test_a_config_made_in_code_is_checked_alike():
    for change, field in (({"lr": math.nan}, r"TrainConfig\.lr=nan: expected a finite number"),
                          ({"weight_decay": math.inf}, r"TrainConfig\.weight_decay=inf"),
                          ({"limits": {"val": -1}}, r"TrainConfig\.limits\.val=-1"),
                          ({"adam_betas": (0.9, -0.1)}, r"TrainConfig\.adam_betas\[1\]=-0\.1: expected a non-negative"),
                          ({"seed": 2**32}, r"TrainConfig\.seed=4294967296")):
        with pytest.raises(ConfigError, match=field):
            TrainConfig(dataset="explagraphs", **change)
    with pytest.raises(ConfigError, match=r"RetrievalConfig\.c2=nan: expected a finite number"):
        RetrievalConfig(c2=math.nan)
    with pytest.raises(ConfigError, match=r"RetrievalConfig\.method='magic'"):
        RetrievalConfig(method="magic")


def test_limits_of_zero_and_none_and_options_given_in_code_still_pass():
    config = TrainConfig.from_dict({"dataset": "synthetic_scenes", "limits": {"train": 0, "val": None},
                                    "dataset_options": {"num_images": 10, "root": Path("/data/testbed")}})
    assert (config.limits.train, config.limits.val) == (0, None)
    assert config.dataset_options["root"] == Path("/data/testbed")


def test_strict_json_names_the_repeated_key_at_any_depth_and_keeps_plain_dicts():
    assert loads_config('{"a": {"b": [1, {"c": 2}]}}', "f.json") == {"a": {"b": [1, {"c": 2}]}}
    assert type(loads_config('{"a": {"b": 1}}', "f.json")["a"]) is dict
    with pytest.raises(ConfigError, match=r"f\.json: key 'a\.b\[1\]\.c' is given more than once"):
        loads_config('{"a": {"b": [1, {"c": 2, "c": 3}]}}', "f.json")
    with pytest.raises(ConfigError, match=r"override 'retrieval=\{\"k0\": 1, \"k0\": 2\}': key 'retrieval\.k0'"):
        parse_overrides(['retrieval={"k0": 1, "k0": 2}'])


@pytest.mark.parametrize("path", sorted(CONFIGS.glob("*.json")), ids=lambda p: p.name)
def test_shipped_configs_read_strictly_to_what_json_reads(path):
    assert read_train_config(path).to_dict() == TrainConfig.from_dict(json.loads(path.read_text())).to_dict()


def test_the_error_names_the_file_once():
    with pytest.raises(ConfigError) as caught:
        parse_train_config('{"epochs": 1, "epochs": 2}', "x.json")
    assert str(caught.value).count("x.json") == 1


@pytest.mark.skipif(__import__("torch").cuda.is_available(), reason="this machine has a CUDA device")
def test_a_cuda_run_on_a_machine_without_cuda_is_refused_before_the_data_is_prepared(tmp_path, monkeypatch):
    from toporag_lib.training import trainer

    monkeypatch.setattr(trainer, "make_examples", lambda *args: pytest.fail("the data was prepared"))
    with pytest.raises(ValueError, match=r"TrainConfig\.device='cuda': torch sees no CUDA device"):
        trainer.Trainer(TrainConfig(dataset="explagraphs", device="cuda"), tmp_path, progress=False)
