"""Runs compared question by question: pooled over the seeds both methods ran, and per seed."""

from __future__ import annotations

import pytest

from toporag_lib.study import paired_runs


def _record(name: str, seed: int, right: list[bool]) -> dict:
    from toporag_lib.training.train_config import TrainConfig
    config = TrainConfig(dataset="synthetic_scenes", seed=seed).to_dict()
    families = ["loop", "loop", "path", "attribute"]
    return {"name": name, "config": config,
            "predictions": [{"index": i, "label": "yes", "pred": "yes" if r else "no", "family": families[i]}
                            for i, r in enumerate(right)]}


def test_pooled_pair_averages_each_question_over_the_common_seeds():
    records = [_record("TopoRAG", 42, [True, True, False, True]), _record("TopoRAG", 43, [True, False, False, True]),
               _record("G-Retriever", 42, [False, True, False, True]),
               _record("G-Retriever", 43, [False, False, True, True]),
               _record("TopoRAG", 44, [False, False, False, False])]  # G-Retriever lacks seed 44: left out
    table = paired_runs.pooled(records).set_index("family")
    assert table.loc["all", "seeds"] == "42, 43" and table.loc["all", "n"] == 4
    assert table.loc["loop", "score_a"] == 0.75 and table.loc["loop", "score_b"] == 0.25
    assert table.loc["loop", "diff"] == 0.5 and table.loc["path", "diff"] == -0.5
    assert table.loc["all", "diff"] == (1 + 0 - 0.5 + 0) / 4
    # TopoRAG's loop answers: yes, yes (seed 42) and yes, no (43); G-Retriever's: no, yes and no, no
    assert table.loc["loop", "one_answer_a"] == 0.75 and table.loc["loop", "one_answer_b"] == 0.75
    assert table.loc["path", "one_answer_a"] == 1.0
    assert paired_runs.pooled(records[:2]).empty  # no common seed


def test_by_seed_runs_mcnemar_on_the_family_for_each_common_seed():
    records = [_record("TopoRAG", 42, [True, True, False, True]), _record("G-Retriever", 42, [False, True, False, True]),
               _record("TopoRAG", 43, [True, True, True, True])]
    table = paired_runs.by_seed(records)
    assert table.seed.tolist() == [42] and table.loc[0, "n"] == 2 and table.loc[0, "only_a"] == 1
    assert paired_runs.by_seed(records, family=None).loc[0, "n"] == 4


def test_two_runs_of_one_method_and_seed_or_two_datasets_are_refused():
    twice = [_record("TopoRAG", 42, [True] * 4), _record("TopoRAG", 42, [False] * 4)]
    with pytest.raises(ValueError, match="two runs of 'TopoRAG' with seed 42"):
        paired_runs.pooled(twice)
    other = _record("G-Retriever", 42, [True] * 4)
    other["config"]["dataset"] = "explagraphs"
    with pytest.raises(ValueError, match="several datasets"):
        paired_runs.pooled([twice[0], other])


def test_pairs_stacks_each_pair_and_leaves_out_pairs_without_a_common_seed():
    records = [_record("TopoRAG", 42, [True, True, False, True]), _record("TopoRAG w/o CRL", 42, [True, False, True, True]),
               _record("TopoRAG + LoRA", 42, [True] * 4), _record("G-Retriever + LoRA", 43, [True] * 4)]
    table = paired_runs.pairs(records, [("TopoRAG", "TopoRAG w/o CRL"), ("TopoRAG + LoRA", "G-Retriever + LoRA")])
    assert set(table.b) == {"TopoRAG w/o CRL"} and len(table) == 4  # all, attribute, loop, path
    assert table.set_index("family").loc["loop", "diff"] == 0.5
    assert paired_runs.pairs(records, [("TopoRAG + LoRA", "G-Retriever + LoRA")]).empty


def test_twin_pairs_are_units_of_their_own_right_in_a_run_only_when_both_twins_are():
    records = [_record(name, seed, right) for name, seed, right in (
        ("TopoRAG", 42, [True, True, False, True]), ("TopoRAG", 43, [True, False, False, True]),
        ("G-Retriever", 42, [True, False, False, True]), ("G-Retriever", 43, [False, True, True, True]))]
    for record in records:  # the two loop questions are twins
        record["predictions"][0]["pair"] = record["predictions"][1]["pair"] = "scene-1"
    table = paired_runs.pooled(records).set_index("family")
    twins = table.loc["loop twins"]
    assert (twins.score_a, twins.score_b, twins["diff"], twins.n) == (0.5, 0.0, 0.5, 1)  # TopoRAG's seed 42 only
    assert "attribute twins" not in table.index and table.loc["loop", "n"] == 2
    assert "loop twins" not in paired_runs.pooled([_record("TopoRAG", 42, [True] * 4),
                                                   _record("G-Retriever", 42, [True] * 4)]).family.tolist()
