"""Testbed version 3: every loop question has a counterfactual twin that no name-level rule can tell apart."""

from __future__ import annotations

from collections import Counter, defaultdict

import pytest

from toporag_lib.data.metrics import twin_accuracy
from toporag_lib.data.testbed.loader import load_synthetic_scenes
from toporag_lib.data.testbed.solvers import loop_answer, path_only_answer


@pytest.fixture(scope="module")
def testbed():
    return load_synthetic_scenes(version=3)  # the default size: 500 pairs, 3,000 questions


def twins(dataset, ids):
    pairs = defaultdict(list)
    for i in ids:
        if dataset[i].meta["family"] == "loop":
            pairs[dataset[i].meta["pair"]].append(dataset[i])
    return pairs


def name_level(sample) -> tuple:
    """What a reader of texts sees without node ids: node texts, triples as texts, counts of each name."""
    graph = sample.graph
    names = Counter(text.split(";")[0] for text in graph.nodes)
    triples = Counter((graph.nodes[s], r, graph.nodes[d]) for s, d, r in graph.edges)
    return sorted(graph.nodes), triples, names


def test_twins_share_a_split_and_a_question_and_have_opposite_answers(testbed):
    for split, ids in testbed.split.items():
        pairs = twins(testbed, ids)
        assert pairs and all(len(p) == 2 for p in pairs.values()), split
        for a, b in pairs.values():
            assert a.question == b.question and a.meta["template"] == b.meta["template"]
            assert {a.label, b.label} == {"yes", "no"}
            assert a.meta["image_id"] != b.meta["image_id"]
        by_template = Counter((s.meta["template"], s.label) for p in pairs.values() for s in p)
        for template in {t for t, _ in by_template}:
            assert by_template[(template, "yes")] == by_template[(template, "no")], (split, template)


def test_twins_agree_on_every_name_level_statistic_on_the_whole_split(testbed):
    everything = [i for ids in testbed.split.values() for i in ids]
    for a, b in twins(testbed, everything).values():
        assert name_level(a) == name_level(b), a.id
        assert len(a.graph.edges) == len(b.graph.edges)
        moved = [k for k, (ea, eb) in enumerate(zip(a.graph.edges, b.graph.edges)) if ea != eb]
        assert len(moved) == 1 and a.graph.edges[moved[0]][2] == "on"  # one `on` edge reaches another node


def test_only_the_loop_decides_a_loop_question(testbed):
    test = testbed.split["test"]
    loops = [testbed[i] for i in test if testbed[i].meta["family"] == "loop"]
    pairs = [s.meta["pair"] for s in loops]
    for solver, accuracy, twins_right in ((loop_answer, 1.0, 1.0), (path_only_answer, 0.5, 0.0)):
        correct = [solver(s) == s.label for s in loops]
        assert sum(correct) / len(correct) == accuracy and twin_accuracy(correct, pairs) == twins_right
    for constant in ("yes", "no"):
        assert twin_accuracy([s.label == constant for s in loops], pairs) == 0.0
    others = [testbed[i] for i in test if testbed[i].meta["family"] != "loop"]
    assert all(loop_answer(s) == s.label for s in others)
    assert Counter(testbed[i].meta["family"] for i in test) == {"attribute": 200, "path": 200, "loop": 200}


def test_version_3_refuses_sizes_it_cannot_pair():
    with pytest.raises(ValueError, match="even num_images"):
        load_synthetic_scenes(num_images=7, version=3)
    with pytest.raises(ValueError, match="questions_per_image = 3"):
        load_synthetic_scenes(num_images=8, questions_per_image=2, version=3)


def test_twin_accuracy_counts_whole_pairs_only():
    assert twin_accuracy([True, True, True, False, True], ["a", "a", "b", "b", "c"]) == 0.5  # "c" lost its twin
    assert twin_accuracy([True, True], ["", ""]) != twin_accuracy([True, True], ["", ""])  # nan: no pair
    with pytest.raises(ValueError, match="more than two"):
        twin_accuracy([True] * 3, ["a"] * 3)


def test_a_runs_metrics_carry_twin_accuracy_per_family_where_questions_have_twins():
    from toporag_lib.training.evaluation import split_metrics

    records = [{"label": "yes", "pred": "yes", "family": "loop", "pair": "0"},
               {"label": "no", "pred": "no", "family": "loop", "pair": "0"},
               {"label": "yes", "pred": "no", "family": "loop", "pair": "1"},
               {"label": "no", "pred": "no", "family": "loop", "pair": "1"},
               {"label": "red", "pred": "red", "family": "attribute"}]
    metrics = split_metrics("synthetic_scenes", "test", records)
    assert metrics["per_family"]["loop"] == 0.75 and metrics["twin"] == {"loop": 0.5}
    assert "twin" not in split_metrics("synthetic_scenes", "test", records[4:])  # no twins, no twin accuracy
