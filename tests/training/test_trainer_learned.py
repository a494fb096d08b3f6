"""The trainer with a learned retrieval (SubgraphRAG, GNN-RAG): fitted on the training split only, then read."""

from __future__ import annotations

import json

import pytest
from tiny_models import CHATML, make_tiny_model

from toporag_lib.generation.soft_prompt import ModelConfig
from toporag_lib.retrieval.textualize import KAPING_HEADER
from toporag_lib.training import trainer as trainer_module
from toporag_lib.training.ledger import config_digest
from toporag_lib.training.preprocess import PreparedDataset
from toporag_lib.training.train_config import TrainConfig
from toporag_lib.training.trainer import Trainer, run


@pytest.fixture(scope="module")
def tiny_llm(tmp_path_factory):
    return make_tiny_model(tmp_path_factory.mktemp("tiny_llm"), CHATML)


def config(tiny_llm, tiny_encoder_path, retrieval: dict) -> TrainConfig:
    return TrainConfig.from_dict(dict(
        dataset="synthetic_scenes", dataset_options={"num_images": 8, "questions_per_image": 2, "seed": 1},
        retrieval=retrieval, limits={"train": 6, "val": 2, "test": 2}, encoder_path=str(tiny_encoder_path),
        llm_path=str(tiny_llm), llm_dtype="float32", epochs=1, batch_size=2, eval_batch_size=2, max_new_tokens=4,
        max_txt_len=48, model=ModelConfig(encoder="cellular", hidden_dim=16, projector_hidden=32, num_layers=1)))


@pytest.mark.parametrize("method", ["subgraphrag", "gnnrag"])
def test_the_retriever_is_fitted_on_the_training_questions_only(tiny_llm, tiny_encoder_path, tmp_path, monkeypatch,
                                                                method):
    seen = []
    real_fit, real_questions = trainer_module.make_retriever, PreparedDataset.questions

    def questions(prepared, indices):
        asked.append(list(indices))
        return real_questions(prepared, indices)

    def spy(retrieval, training):
        seen.append(retrieval)
        return real_fit(retrieval, training)

    asked = []
    monkeypatch.setattr(PreparedDataset, "questions", questions)
    monkeypatch.setattr(trainer_module, "make_retriever", spy)
    trainer = Trainer(config(tiny_llm, tiny_encoder_path, {"method": method, "fit_epochs": 2}), tmp_path,
                      progress=False)
    (retrieval,), (indices,) = seen, asked
    split = {name: {e.index for e in examples} for name, examples in trainer.examples.items()}
    assert retrieval.method == method and retrieval.fit_epochs == 2
    assert set(indices) == split["train"] and len(indices) == 6
    assert not set(indices) & (split["val"] | split["test"])
    start = KAPING_HEADER if method == "subgraphrag" else "node_id,node_attr\n"  # triples as facts, paths as CSV
    for examples in trainer.examples.values():  # every split reads the learned retrieval: no 2-cells
        assert all(e.complex.num_cells_2 == 0 and e.text.startswith(start) for e in examples)


def test_a_tiny_run_with_subgraphrag_retrieval_goes_end_to_end(tiny_llm, tiny_encoder_path, tmp_path):
    cfg = config(tiny_llm, tiny_encoder_path, {"method": "subgraphrag", "top_k": 3, "fit_epochs": 2})
    metrics = run(cfg, tmp_path, progress=False)
    assert metrics["n"] == 2 and 0.0 <= metrics["score"] <= 1.0
    saved = json.loads((tmp_path / "config.json").read_text())["retrieval"]
    assert saved["method"] == "subgraphrag" and saved["top_k"] == 3
    records = [json.loads(line) for line in (tmp_path / "predictions_test.jsonl").read_text().splitlines()]
    assert len(records) == 2


def test_subgraphrag_examples_hold_at_most_top_k_triples(tiny_llm, tiny_encoder_path, tmp_path):
    trainer = Trainer(config(tiny_llm, tiny_encoder_path, {"method": "subgraphrag", "top_k": 3, "fit_epochs": 1}),
                      tmp_path, progress=False)
    for examples in trainer.examples.values():
        for e in examples:
            facts = e.text.strip().splitlines()[1:]  # one triple per line after the header
            assert len(facts) == e.complex.num_cells_1 == 3  # every testbed graph has more than 3 edges
            assert all(fact.startswith("(") and fact.endswith(")") for fact in facts)


def test_the_learned_retrievals_keys_keep_old_run_ids():
    values = TrainConfig().to_dict()
    added = ("top_k", "dde_rounds", "candidates", "gnn_layers", "fit_epochs", "fit_lr", "fit_seed")
    old = {**values, "retrieval": {k: v for k, v in values["retrieval"].items() if k not in added}}
    assert len(old["retrieval"]) == len(values["retrieval"]) - len(added)
    assert config_digest(values) == config_digest(old)  # the defaults hash as if the keys were absent
    assert config_digest({**values, "retrieval": {**values["retrieval"], "top_k": 5}}) != config_digest(old)
