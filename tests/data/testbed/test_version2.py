"""Synthetic scenes, version 2 (the testbed): loop questions need the loop, answers are balanced, evidence names the
cells an answer depends on, and the reference solvers score what the design says."""

from __future__ import annotations

from collections import Counter

import pytest

from toporag_lib.data import load_dataset
from toporag_lib.data.testbed.vocabulary import ANSWERS, FAMILIES
from toporag_lib.data.testbed.solvers import loop_answer, path_only_answer
from toporag_lib.study.floors_and_evidence import floors


@pytest.fixture(scope="module")
def testbed():
    return load_dataset("synthetic_scenes", num_images=240, seed=5)


def by_family(dataset, family):
    return [s for s in dataset if s.meta["family"] == family]


def test_families_round_robin_and_loop_answers_balanced(testbed):
    counts = Counter(s.meta["family"] for s in testbed)
    assert set(counts) == set(FAMILIES) and max(counts.values()) - min(counts.values()) <= 1
    loops = Counter(s.label for s in by_family(testbed, "loop"))
    assert set(loops) == {"yes", "no"} and abs(loops["yes"] - loops["no"]) <= 1


def test_answers_come_from_each_familys_closed_vocabulary(testbed):
    for sample in testbed:
        assert sample.label in ANSWERS[sample.meta["family"]], sample.id
        assert sample.meta["version"] == 2 and "(x,y,w,h)" not in " ".join(sample.graph.nodes)  # no box to read


def test_evidence_is_connected_and_in_the_graphs_own_ids(testbed):
    for sample in testbed:
        nodes, edges = sample.meta["evidence"]["nodes"], sample.meta["evidence"]["edges"]
        ends = {v for e in edges for v in sample.graph.edges[e][:2]}
        assert ends <= set(nodes) and (edges or len(nodes) == 1), sample.id
        parent = {v: v for v in nodes}
        for e in edges:
            a, b = (parent[v] for v in sample.graph.edges[e][:2])
            parent = {v: (b if p == a else p) for v, p in parent.items()}
        assert len(set(parent.values())) == 1, sample.id


def test_a_loop_question_holds_every_relation_and_its_answer_is_whether_the_triangle_closes(testbed):
    for sample in by_family(testbed, "loop"):
        graph, nodes = sample.graph, sample.meta["evidence"]["nodes"]
        relations = sorted(graph.edges[e][2] for e in sample.meta["evidence"]["edges"])
        assert relations.count("on") == 2 and len(relations) == 3, sample.id
        surfaces = {graph.edges[e][1] for e in sample.meta["evidence"]["edges"] if graph.edges[e][2] == "on"}
        names = {graph.nodes[s].split(";")[0] for s in surfaces}
        assert len(names) == 1, sample.id  # both stand on furniture of the same name: the name does not tell
        assert (sample.label == "yes") == (len(surfaces) == 1) == (len(nodes) == 3), sample.id


def test_the_loop_solver_is_always_right_and_the_path_only_solver_is_at_chance_on_loops(testbed):
    for family in FAMILIES:
        samples = by_family(testbed, family)
        assert all(loop_answer(s) == s.label for s in samples), family
        path_only = sum(path_only_answer(s) == s.label for s in samples) / len(samples)
        majority = Counter(s.label for s in samples).most_common(1)[0][1] / len(samples)
        assert path_only == (1.0 if family != "loop" else pytest.approx(majority, abs=0.05)), family
    assert {path_only_answer(s) for s in by_family(testbed, "loop")} == {"yes"}


def test_floors_table_reports_majority_yes_no_and_solvers(testbed):
    table = floors(testbed, "test").set_index("family")
    assert list(table.index) == ["attribute", "path", "loop", "all"]
    assert table.loc["loop", "yes_no_contains"] == 1.0 and table.loc["loop", "loop solver"] == 1.0
    assert table.loc["loop", "path-only solver"] == pytest.approx(table.loc["loop", "majority_rate"], abs=0.05)
    assert table.loc["all", "n"] == len(testbed.split["test"])


def test_solvers_refuse_version_1_samples():
    sample = load_dataset("synthetic_scenes", num_images=3, version=1)[0]
    with pytest.raises(ValueError, match="need synthetic_scenes version 2"):
        loop_answer(sample)
    with pytest.raises(ValueError, match="version=4: expected 1 or 2 or 3"):
        load_dataset("synthetic_scenes", num_images=3, version=4)


def test_accuracy_by_cycles_splits_on_the_questions_graph():
    from toporag_lib.data.dataset import QADataset
    from toporag_lib.data.graph import QASample, TextualGraph
    from toporag_lib.study.paired_runs import pooled
    from toporag_lib.study.floors_and_evidence import accuracy_by_cycles, with_cycle_families

    triangle = TextualGraph(["a", "b", "c"], [(0, 1, "r"), (1, 2, "r"), (2, 0, "r")])
    path = TextualGraph(["a", "b"], [(0, 1, "r")])
    samples = [QASample("0", "q0", "support", triangle), QASample("1", "q1", "counter", path),
               QASample("2", "q2", "support", path)]
    dataset = QADataset("explagraphs", samples, {"train": [], "val": [], "test": [0, 1, 2]})
    records = [{"question": "q0", "label": "support", "pred": "support"},
               {"question": "q1", "label": "counter", "pred": "support"},
               {"question": "q2", "label": "support", "pred": "support"}]
    table = accuracy_by_cycles(records, dataset, lambda p, y: p == y).set_index("questions")
    assert table.loc["graph with a cycle"].tolist() == [1, 1.0] and table.loc["acyclic graph"].tolist() == [2, 0.5]
    ledger = [{"name": name, "config": {"dataset": "explagraphs", "seed": 42},
               "predictions": [{**r, "index": i, "pred": pred} for i, (r, pred) in enumerate(zip(records, preds))]}
              for name, preds in (("a", ["support", "support", "support"]), ("b", ["counter", "counter", "support"]))]
    paired = pooled(with_cycle_families(ledger, dataset), "a", "b").set_index("family")
    assert paired.loc["graph with a cycle", "diff"] == 1.0 and paired.loc["graph with a cycle", "n"] == 1
    assert paired.loc["acyclic graph", "diff"] == -0.5 and paired.loc["all", "n"] == 3
    assert ledger[0]["predictions"][0].get("family") is None  # the records themselves are left as they were


@pytest.mark.realmodel
def test_every_answer_fits_the_testbeds_generation_budget():
    """`TESTBED_ANSWER_TOKENS` stops generation past the answer: every vocabulary answer, capitalised, with an article
    and a full stop, must still fit under the bundled LLM's tokenizer."""
    from transformers import AutoTokenizer

    from toporag_lib.data.registry import TESTBED_ANSWER_TOKENS
    from toporag_lib.generation.bundled import bundled_model_dir

    tokenizer = AutoTokenizer.from_pretrained(bundled_model_dir())
    for answer in {a for family in ANSWERS.values() for a in family}:
        assert len(tokenizer(f"The {answer.capitalize()}.", add_special_tokens=False).input_ids) <= TESTBED_ANSWER_TOKENS
