"""Run profiles for `make reproduce`: parameter overrides per notebook.

A notebook's own `parameters` cell holds the `cpu-quick` defaults (so a plain run is the quick run), and only what
that notebook varies; training settings beyond those go in its `training` parameter as sparse `TrainConfig`
overrides. A profile overrides some of them. Notebooks are named by their file stem, e.g. `01_datasets`. The
`gpu-paper` profile takes the LLM folder from `TOPORAG_LLM` (e.g. a local Llama-2-7b-hf) and the sentence encoder
folder from `TOPORAG_ENCODER` (e.g. all-roberta-large-v1), both read when the parameters are made (`FromEnv`), not
at import; nothing is downloaded. `TOPORAG_PREPROCESS=dask` (or a Dask scheduler address) makes the training
notebooks' runs preprocess on Dask (`training.sharded`): the same examples.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from toporag_lib.settings import merge
from toporag_lib.data.testbed.vocabulary import ANSWERS
from toporag_lib.study.experiments import ABLATIONS, TABLE1_METHODS
from toporag_lib.study.probe import VARIANTS
from toporag_lib.training.train_config import PAPER_SETTINGS

FULL_SPLITS = {"train": None, "val": None, "test": None}
SEEDS = [42, 43, 44]
ABLATION_NAMES = list(ABLATIONS)
# Notebook 05's LLM-free probe on every family with every encoder and readout (cpu-quick: the other encoders and the
# mean readout on loop questions only). Each entry: [readout, variants, families].
FULL_PROBE_PLAN = [[readout, variants, list(ANSWERS)] for readout, variants in
                   (("attention", list(VARIANTS)), ("mean", ["cellular", "cellular w/o 2-cells"]))] + [
    ["attention, plain inputs", ["cellular", "cellular w/o 2-cells"], ["loop"]]]  # the soft prompt's question pool


@dataclass(frozen=True)
class FromEnv:
    """A profile value read from the environment variable `name` when a notebook's parameters are made
    (`notebook_parameters`), not when this module is imported; None when it is unset."""

    name: str


def from_env(value: Any) -> Any:
    """`value` with every `FromEnv` in it replaced by its environment variable's value now."""
    if isinstance(value, FromEnv):
        return os.environ.get(value.name)
    if isinstance(value, dict):
        return {key: from_env(item) for key, item in value.items()}
    if isinstance(value, list):
        return [from_env(item) for item in value]
    return value


LLM_ENV, ENCODER_ENV = "TOPORAG_LLM", "TOPORAG_ENCODER"


def gpu_training() -> dict[str, Any]:
    """The paper's training settings (`training.train_config.PAPER_SETTINGS`) on CUDA with the local LLM and encoder."""
    return merge(PAPER_SETTINGS, {"device": "cuda", "llm_path": FromEnv(LLM_ENV), "encoder_path": FromEnv(ENCODER_ENV)})


PROFILES: dict[str, dict[str, dict[str, Any]]] = {
    # The default: every notebook on this kind of 2-core CPU with the bundled small models (under 30 minutes). Its
    # time goes where numbers have power: retrieval over the testbed's full test split and the LLM-free probe over
    # five seeds; LLM runs only on ExplaGraphs subsets, to show the pipeline (full-split LLM runs: `long_runs`).
    "cpu-quick": {},
    # Full splits for 04 with every Table 1 method (an ExplaGraphs epoch with SmolLM2 takes about 17-30 minutes per
    # method; the same runs one epoch each: `long_runs --suite table1`), every variant of 05
    # with three seeds on larger subsets: about a day on 2 cores. Over several epochs the epoch kept is the one with
    # the best validation accuracy: on the full ExplaGraphs split validation loss ranks epochs and runs differently.
    "cpu-full": {
        "01_datasets": {"synthetic_images": 2000},
        "03_retrieval": {"synthetic_images": 1000},
        "04_training": {"limits": FULL_SPLITS, "synthetic_images": 1000, "epochs": 3, "select_by": "val_score",
                        "datasets": ["explagraphs", "synthetic_scenes"],
                        "methods": TABLE1_METHODS,  # every row of Table 1 we run
                        "explagraphs_only_methods": ["G-Retriever (PyG)", "G-Retriever (PyG) + LoRA"]},
        "05_ablations_sensitivity": {"synthetic_images": 1000, "limits": {"train": 240, "val": 60, "test": 180},
                                     "epochs": 2, "select_by": "val_score", "seeds": SEEDS, "retrieval_images": 300,
                                     "ablations": ABLATION_NAMES, "probe_inputs": ["retrieved", "whole graph"],
                                     "cycle_bases": ["BFS", "DFS", "random", "minimum basis"],
                                     "layer_values": [2, 3, 4, 5], "k2_values": [0, 1, 2, 3],
                                     "probe_plan": FULL_PROBE_PLAN},
        "06_efficiency": {"warmup": 3, "steps": 30, "memory_steps": 3, "preprocess_questions": None, "repeats": 7,
                          "queries": 10, "sizes": [10, 30, 100, 300, 1000, 1370, 3000, 10000, 30000]},
    },
    # The paper's hyperparameters (section 5.1) on a GPU with a large LLM.
    "gpu-paper": {
        "01_datasets": {"synthetic_images": 2000},
        "03_retrieval": {"synthetic_images": 1000, "encoder_path": FromEnv(ENCODER_ENV)},
        "04_training": {"limits": FULL_SPLITS, "synthetic_images": 5000, "epochs": 10, "training": gpu_training(),
                        "datasets": ["explagraphs", "synthetic_scenes"],
                        "explagraphs_only_methods": ["G-Retriever (PyG)"],
                        "methods": TABLE1_METHODS},
        "05_ablations_sensitivity": {"synthetic_images": 5000, "limits": FULL_SPLITS, "epochs": 10, "seeds": SEEDS,
                                     "training": gpu_training(), "retrieval_images": 1000, "ablations": ABLATION_NAMES,
                                     "probe_inputs": ["retrieved", "whole graph"],
                                     "cycle_bases": ["BFS", "DFS", "random", "minimum basis"],
                                     "layer_values": [2, 3, 4, 5], "k2_values": [0, 1, 2, 3]},
        "06_efficiency": {"training": merge(gpu_training(), {"model": {"hidden_dim": 1024}}), "batch_size": 8,
                          "warmup": 3, "steps": 30, "memory_steps": 3, "preprocess_questions": None, "repeats": 7,
                          "queries": 10, "feature_dim": 1024},
    },
}

NEEDS_LLM = ("04_training", "05_ablations_sensitivity", "06_efficiency")  # notebooks that gpu-paper runs on TOPORAG_LLM
TRAINS = ("04_training", "05_ablations_sensitivity")  # notebooks whose runs `TOPORAG_PREPROCESS` sends to Dask
PREPROCESS_ENV = "TOPORAG_PREPROCESS"  # `TrainConfig.preprocess` for every run they train: "dask" or an address


def notebook_parameters(profile: str, notebook: str) -> dict[str, Any]:
    """The parameters that `profile` passes to `notebook` (empty: the notebook's own defaults)."""
    if profile == "gpu-paper" and not os.environ.get(LLM_ENV) and notebook in NEEDS_LLM:
        raise ValueError("the gpu-paper profile needs TOPORAG_LLM=<a local Hugging Face causal-LM folder>")
    parameters = from_env(dict(PROFILES[profile].get(notebook, {})))
    if os.environ.get(PREPROCESS_ENV) and notebook in TRAINS:
        parameters["training"] = merge(parameters.get("training", {}), {"preprocess": os.environ[PREPROCESS_ENV]})
    if notebook == "07_results":  # the summary labels its tables with the profile that produced them
        parameters["profile"] = profile
    return parameters
