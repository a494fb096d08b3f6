"""A small ledger written by the tests of the question explorer: records of a few methods on limited splits of real
data (the testbed's small scenes and ExplaGraphs), each with test predictions made from the trainer's own examples
(`trainer.make_examples`: the indices, questions and labels a run writes) and answers chosen by a rule, so that who
is right where is known."""

from __future__ import annotations

import json
from pathlib import Path

from toporag_lib.study.experiments import method_config, variant_config
from toporag_lib.training.ledger import run_id
from toporag_lib.training.run_files import write_predictions
from toporag_lib.training.trainer import make_examples

SCENES = {"num_images": 9, "questions_per_image": 3, "seed": 1}
LIMITS = {"train": 4, "val": 2, "test": 10}
WRONG = "not this"


def rule(name: str, position: int) -> bool:
    """Whether run `name` answers its test question at `position` right: TopoRAG on even positions, G-Retriever on
    odd ones and on every third, the others always."""
    return {"TopoRAG": position % 2 == 0, "G-Retriever": position % 2 == 1 or position % 3 == 0}.get(name, True)


def configs(encoder: Path):
    overrides = {"encoder_path": str(encoder), "seed": 0, "limits": LIMITS}
    scenes = {**overrides, "dataset_options": SCENES}
    return {
        ("synthetic_scenes", "TopoRAG"): method_config("TopoRAG", "synthetic_scenes", scenes),
        ("synthetic_scenes", "G-Retriever"): method_config("G-Retriever", "synthetic_scenes", scenes),
        ("synthetic_scenes", "TopoRAG w/o CRL (no 2-cells)"): variant_config(
            "TopoRAG", "synthetic_scenes", {"retrieval": {"k2": 0}}, scenes, seed=0),
        ("synthetic_scenes", "SubgraphRAG"): method_config("SubgraphRAG", "synthetic_scenes", scenes),  # fitted
        ("explagraphs", "TopoRAG"): method_config("TopoRAG", "explagraphs", overrides),
        ("explagraphs", "G-Retriever"): method_config("G-Retriever", "explagraphs", overrides),
    }


def write_record(ledger: Path, name: str, config: dict, predictions: list[dict] | None) -> Path:
    folder = ledger / run_id(config)
    folder.mkdir(parents=True)
    score = sum(p["pred"] == p["label"] for p in predictions or []) / max(1, len(predictions or []))
    record = {"run_id": folder.name, "name": name, "command": "tests", "commit": None, "hardware": "tests",
              "finished": "2026-01-01 00:00 UTC", "config": config,
              "metrics": {"dataset": config["dataset"], "split": "test", "n": len(predictions or []), "score": score}}
    (folder / "record.json").write_text(json.dumps(record, indent=1) + "\n")
    if predictions is not None:
        write_predictions(folder / "predictions_test.jsonl", predictions)
    return folder


def write_ledger(ledger: Path, encoder: Path) -> dict:
    """The ledger's records; returns, per (dataset, name), the trainer's test examples of the run."""
    ledger.mkdir(parents=True, exist_ok=True)
    examples = {}
    for (dataset, name), config in configs(encoder).items():
        made, _ = make_examples(config, progress=False)
        examples[(dataset, name)] = made["test"]
        predictions = [{"index": e.index, "question": e.question, "label": e.label,
                        "pred": e.label if rule(name, k) else WRONG, "family": e.family}
                       for k, e in enumerate(made["test"])]
        write_record(ledger, name, config.to_dict(), predictions)
    return examples
