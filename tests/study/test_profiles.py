"""Profiles pass only parameters that the notebooks' `parameters` cells define, to notebooks that exist."""

from __future__ import annotations

import pytest

from toporag_lib.study.notebook_parameters import check_parameters, parameter_types
from toporag_lib.study.profiles import PROFILES, notebook_parameters
from toporag_lib.study.reproduce import NOTEBOOK_DIR
from toporag_lib.training.train_config import PAPER_SETTINGS, TrainConfig


def defined_parameters(name: str) -> set[str]:
    return set(parameter_types(name))  # plain and annotated assignments of its `parameters` cell


@pytest.mark.parametrize("profile", sorted(PROFILES))
def test_profiles_name_existing_notebooks_and_parameters(profile, monkeypatch):
    monkeypatch.setenv("TOPORAG_LLM", "/models/llm")
    for name in PROFILES[profile]:
        assert (NOTEBOOK_DIR / f"{name}.ipynb").exists(), f"{profile}: no notebook {name}"
        unknown = set(notebook_parameters(profile, name)) - defined_parameters(name)
        assert not unknown, f"{profile} passes {sorted(unknown)} to {name}, whose parameters cell lacks them"


def test_the_summary_notebook_is_told_its_profile():
    assert notebook_parameters("cpu-full", "07_results") == {"profile": "cpu-full"}
    assert "profile" in defined_parameters("07_results")


def test_gpu_paper_needs_an_llm_folder(monkeypatch):
    monkeypatch.delenv("TOPORAG_LLM", raising=False)
    with pytest.raises(ValueError, match="TOPORAG_LLM"):
        notebook_parameters("gpu-paper", "04_training")


@pytest.mark.parametrize("profile", sorted(PROFILES))
def test_every_training_override_of_a_profile_is_a_valid_config(profile, monkeypatch):
    monkeypatch.setenv("TOPORAG_LLM", "/models/llm")
    for name in PROFILES[profile]:
        training = notebook_parameters(profile, name).get("training")
        if training is not None:
            TrainConfig.from_dict({"dataset": "synthetic_scenes", **training})  # ConfigError on a bad key or type


def test_gpu_paper_trains_with_the_papers_settings(monkeypatch):
    monkeypatch.setenv("TOPORAG_LLM", "/models/llm")
    training = notebook_parameters("gpu-paper", "04_training")["training"]
    config = TrainConfig.from_dict({"dataset": "synthetic_scenes", **training})
    assert (config.lr, config.batch_size, config.epochs, config.schedule, config.model.hidden_dim) == \
        (PAPER_SETTINGS["lr"], 8, 10, "cosine", 1024)


@pytest.mark.parametrize("profile", sorted(PROFILES))
def test_preprocess_on_dask_reaches_every_training_notebook_of_every_profile(profile, monkeypatch):
    monkeypatch.setenv("TOPORAG_LLM", "/models/llm")
    monkeypatch.setenv("TOPORAG_PREPROCESS", "tcp://scheduler:8786")
    for name in ("04_training", "05_ablations_sensitivity"):
        training = notebook_parameters(profile, name)["training"]
        assert "training" in defined_parameters(name)
        assert TrainConfig.from_dict({"dataset": "synthetic_scenes", **training}).preprocess == "tcp://scheduler:8786"
    assert "training" not in notebook_parameters(profile, "03_retrieval")


@pytest.mark.parametrize("profile", sorted(PROFILES))
def test_every_parameter_of_every_profile_has_the_type_its_notebook_takes(profile, monkeypatch):
    monkeypatch.setenv("TOPORAG_LLM", "/models/llm")
    monkeypatch.setenv("TOPORAG_ENCODER", "/models/encoder")
    for name in PROFILES[profile]:
        check_parameters(name, notebook_parameters(profile, name))


def test_gpu_paper_reads_its_model_folders_when_the_parameters_are_made_not_at_import(monkeypatch):
    monkeypatch.setenv("TOPORAG_LLM", "/models/llama-2-7b-hf")
    monkeypatch.setenv("TOPORAG_ENCODER", "/models/roberta")
    training = notebook_parameters("gpu-paper", "04_training")["training"]
    assert (training["llm_path"], training["encoder_path"]) == ("/models/llama-2-7b-hf", "/models/roberta")
    assert notebook_parameters("gpu-paper", "03_retrieval")["encoder_path"] == "/models/roberta"
    monkeypatch.setenv("TOPORAG_LLM", "/models/other")
    assert notebook_parameters("gpu-paper", "06_efficiency")["training"]["llm_path"] == "/models/other"
