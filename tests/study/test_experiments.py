"""Methods and ablations are configurations of one model: the presets, the order overrides apply in, and the
table helpers."""

from __future__ import annotations

import json
from dataclasses import replace

import pandas as pd
import pytest

from toporag_lib.study.experiments import (
    ABLATIONS,
    CYCLE_BASES,
    PRESETS,
    config_digest,
    mean_and_std,
    method_config,
    variant_config,
)
from toporag_lib.topology import LiftConfig
from toporag_lib.training.ledger import read_ledger


@pytest.mark.parametrize("method", sorted(PRESETS))
def test_every_preset_is_a_valid_config(method):
    config = method_config(method, "synthetic_scenes", {"epochs": 3})
    assert config.epochs == 3 and config.retrieval.method


def test_explagraphs_gives_every_graph_method_the_whole_graph_except_kaping_and_learned_retrievals():
    # the whole graph's 2-cells (the text's cycle table) are TopoRAG's input alone
    assert method_config("G-Retriever", "explagraphs").retrieval.reads() == {"method": "whole_graph", "k2": 0}
    assert method_config("zero-shot", "explagraphs").retrieval.reads() == {"method": "whole_graph", "k2": 0}
    assert method_config("TopoRAG", "explagraphs").retrieval.reads() == {"method": "whole_graph", "k2": 2}
    assert method_config("KAPING", "explagraphs").retrieval.reads() == {"method": "kaping", "k1": 5}


def test_retrieval_overrides_apply_after_the_dataset_and_method_defaults():
    config = method_config("TopoRAG", "synthetic_scenes", {"retrieval": {"k2": 0}})
    assert (config.retrieval.method, config.retrieval.k2, config.retrieval.k1) == ("toporag", 0, 8)  # the testbed k1
    assert method_config("TopoRAG", "explagraphs", {"retrieval": {"method": "shortest_path"}}).retrieval.reads() == \
        {"method": "shortest_path", "k0": 3}


def test_ablations_change_one_thing_each():
    base = variant_config("TopoRAG", "synthetic_scenes", ABLATIONS["TopoRAG"], {"epochs": 1})
    crl = variant_config("TopoRAG", "synthetic_scenes", ABLATIONS["w/o CRL (no 2-cells)"], {"epochs": 1})
    tsr = variant_config("TopoRAG", "synthetic_scenes", ABLATIONS["w/o TSR (shortest path)"], {"epochs": 1})
    mtr = variant_config("TopoRAG", "synthetic_scenes", ABLATIONS["w/o MTR (GCN)"], {"epochs": 1})
    assert crl.retrieval == replace(base.retrieval, k2=0) and crl.model == base.model
    assert tsr.retrieval.method == "shortest_path" and tsr.model == base.model
    assert mtr.model.encoder == "gcn" and mtr.retrieval == base.retrieval
    assert variant_config("TopoRAG", "synthetic_scenes", CYCLE_BASES["minimum basis"]).lift == \
        LiftConfig(basis="minimum", parallel="ignore")  # the testbed's default keeps no digons


def test_the_unchanged_variant_is_the_methods_own_run():
    overrides = {"limits": {"train": 8, "val": 2, "test": 2}, "model": {"hidden_dim": 16}}
    plain = method_config("TopoRAG", "synthetic_scenes", {**overrides, "seed": 7})
    variant = variant_config("TopoRAG", "synthetic_scenes", {}, overrides, seed=7)
    assert config_digest(plain) == config_digest(variant)
    assert config_digest(plain) != config_digest(variant_config("TopoRAG", "synthetic_scenes", {}, overrides, 8))


def test_mean_and_std_over_seeds():
    runs = pd.DataFrame({"variant": ["a", "a", "b"], "seed": [1, 2, 1], "score": [0.2, 0.4, 0.5],
                         "acc_loop": [0.0, 1.0, 0.5], "n": [10, 10, 10]})
    table = mean_and_std(runs).set_index("variant")
    assert table.loc["a", "score"] == pytest.approx(0.3) and table.loc["a", "score_std"] == pytest.approx(0.1414, 1e-3)
    assert table.loc["a", "runs"] == 2 and pd.isna(table.loc["b", "score_std"])
    assert "n" not in table


def test_a_finished_run_is_read_back_under_another_name(tmp_path, monkeypatch):
    from toporag_lib.study import experiments

    config = method_config("TopoRAG", "synthetic_scenes", {"epochs": 1})
    calls = []

    def fake_run(cfg, out, progress):
        calls.append(out)
        out.mkdir(parents=True, exist_ok=True)  # run_cached made it, holding its lock
        metrics = {"n": 2, "score": 0.5, "per_family": {"loop": 1.0}}
        (out / "config.json").write_text(json.dumps(cfg.to_dict()))
        (out / "metrics_test.json").write_text(json.dumps(metrics))
        (out / "predictions_test.jsonl").write_text('{"index": 0}\n{"index": 1}\n')
        return metrics

    monkeypatch.setattr(experiments, "run", fake_run)
    ledger = tmp_path / "ledger"
    first = experiments.run_cached(config, "TopoRAG", tmp_path, ledger=ledger)
    again = experiments.run_cached(config, "TopoRAG TopoRAG", tmp_path, ledger=ledger)  # notebook 05's name
    assert len(calls) == 1 and first == again and first["acc_loop"] == 1.0
    experiments.run_cached(method_config("TopoRAG", "synthetic_scenes", {"epochs": 2}), "TopoRAG", tmp_path,
                           ledger=ledger)
    assert len(calls) == 2
    records = read_ledger(ledger)  # one record per config, under the name it was first run with
    assert [r["name"] for r in records] == ["TopoRAG", "TopoRAG"] and len({r["run_id"] for r in records}) == 2
    assert all(r["config"]["dataset"] == "synthetic_scenes" and r["metrics"]["score"] == 0.5 for r in records)
    assert all((ledger / r["run_id"] / "predictions_test.jsonl").read_text().count("\n") == 2 for r in records)
