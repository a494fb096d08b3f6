"""Evidence recall per retrieval variant, learned retrievals fitted on the training split only."""

from __future__ import annotations

import pytest

from toporag_lib.data import load_dataset
from toporag_lib.embed import TextEncoder
from toporag_lib.study import floors_and_evidence

VARIANTS = {"TopoRAG": {}, "SubgraphRAG": {"retrieval": {"method": "subgraphrag", "fit_epochs": 2}}}


def test_learned_variants_are_fitted_on_the_given_split_or_left_out(tiny_encoder_path, tmp_path, monkeypatch):
    scenes = load_dataset("synthetic_scenes", num_images=20, seed=3)
    test, train = scenes.take(scenes.split["test"]), scenes.take(scenes.split["train"])
    encoder = TextEncoder(tiny_encoder_path, cache=tmp_path, progress=False)
    fitted_on = []
    real = floors_and_evidence.make_retriever

    def spy(config, training=()):
        training = list(training)
        if training:
            fitted_on.append(training)
        return real(config, training)

    monkeypatch.setattr(floors_and_evidence, "make_retriever", spy)
    table = floors_and_evidence.evidence_table(test, VARIANTS, encoder, fit_on=train)
    assert set(table.method) == {"TopoRAG", "SubgraphRAG"}
    assert [len(d) for d in fitted_on] == [len(train)]  # fitted once, on the training questions
    assert table[table.method == "SubgraphRAG"].n.sum() == table[table.method == "TopoRAG"].n.sum()
    without = floors_and_evidence.evidence_table(test, VARIANTS, encoder)
    assert set(without.method) == {"TopoRAG"}


def test_accuracy_by_cycles_finds_questions_with_a_method_suffix():
    from toporag_lib.data.metrics import explagraphs_correct
    from toporag_lib.study.experiments import COT_BAG

    data = load_dataset("explagraphs")
    test = data.take(data.split["test"][:40])
    records = [{"question": s.question + COT_BAG, "label": s.label, "pred": s.label} for s in test]
    table = floors_and_evidence.accuracy_by_cycles(records, test, explagraphs_correct)
    assert table.n.sum() == 40 and (table.accuracy.dropna() == 1.0).all()
    with pytest.raises(KeyError, match="not one of the dataset's"):
        floors_and_evidence.accuracy_by_cycles([{"question": "elsewhere", "label": "x", "pred": "x"}], test, explagraphs_correct)


def test_the_budget_table_weighs_tokens_by_questions_and_reads_loop_and_path_rates():
    import pandas as pd

    from toporag_lib.study import plots

    rows = [("a", "attribute", 10, 1.0, None, 100.0), ("a", "path", 30, 0.5, 0.8, 200.0),
            ("a", "loop", 60, 0.25, None, 300.0), ("b", "attribute", 10, 1.0, None, 50.0),
            ("b", "path", 30, 0.9, 0.9, 50.0), ("b", "loop", 60, 0.0, None, 50.0),
            ("a", "loop, answer yes", 30, 0.5, None, 500.0), ("a", "loop, answer no", 30, 0.0, None, 100.0)]
    evidence = pd.DataFrame(rows, columns=["method", "family", "n", "evidence_recall", "covers_answer", "tokens"])
    for rate in ("evidence_recall", "covers_answer"):
        evidence[f"{rate}_lo"], evidence[f"{rate}_hi"] = evidence[rate] - 0.1, evidence[rate] + 0.1
    budget = floors_and_evidence.budget_table(evidence).set_index("method")
    assert budget.loc["a", "tokens"] == (10 * 100 + 30 * 200 + 60 * 300) / 100 and budget.loc["b", "tokens"] == 50
    assert budget.loc["a", "loop_evidence_recall"] == 0.25 and budget.loc["a", "path_covers_answer"] == 0.8
    assert budget.loc["b", "path_covers_answer_lo"] == pytest.approx(0.8) and budget.loc["a", "n"] == 100
    fig = plots.budget_frontier(budget.reset_index(), {"b": "method b"})
    assert [ax.get_ylabel() for ax in fig.axes][0] == "share of questions"
    assert len(floors_and_evidence.BUDGET_GRID) == 12 and {"k1": 8, "cost_e": 0.5, "cells": "all"} in [
        v["retrieval"] for v in floors_and_evidence.BUDGET_GRID.values()]  # the testbed default is one of the grid's points


def test_the_v3_setting_is_the_cheapest_that_holds_the_loop_for_yes_and_no():
    import pandas as pd

    def method(name, yes, no, tokens):
        return [(name, "loop", 20, (yes + no) / 2, tokens), (name, "attribute", 20, 1.0, tokens),
                (name, "loop, answer yes", 10, yes, tokens), (name, "loop, answer no", 10, no, tokens)]

    rows = method("leaks", 1.0, 0.8, 100.0) + method("costly", 0.95, 0.95, 300.0) + method("cheap", 0.9, 0.92, 200.0)
    evidence = pd.DataFrame(rows, columns=["method", "family", "n", "evidence_recall", "tokens"])
    choice = floors_and_evidence.choose_setting(evidence).set_index("method")
    assert choice.chosen.to_dict() == {"leaks": False, "costly": False, "cheap": True}
    assert choice.loc["leaks", "loop_no"] == 0.8 and not choice.loc["leaks", "qualifies"]
    assert not floors_and_evidence.choose_setting(evidence, min_recall=0.99).chosen.any()
    with pytest.raises(ValueError, match="count_tokens"):
        floors_and_evidence.choose_setting(evidence.drop(columns="tokens"))
