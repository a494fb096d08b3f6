"""Question entities, answer cells and shortest-path labels on fixed samples (`retrieval.baselines.fitted.entities`)."""

import numpy as np
import pytest
import torch

from toporag_lib.data.graph import QASample, TextualGraph
from toporag_lib.retrieval.baselines.fitted.dde import directional_distance_encoding
from toporag_lib.retrieval.baselines.fitted.entities import (
    answer_edges,
    answer_nodes,
    named_nodes,
    question_entities,
)
from toporag_lib.retrieval.baselines.fitted.graph_paths import shortest_path_edges
from toporag_lib.topology import lift

SCENE = TextualGraph(
    ["name: coffee table; attribute: brown, wooden", "name: table; attribute: white", "name: cup; attribute: red",
     "name: cup; attribute: blue, glass", "name: table; attribute: black", "name: lamp"],
    [(2, 0, "on"), (3, 1, "on"), (5, 4, "on"), (2, 3, "to the left of")])


def sample(question, label="x", graph=SCENE, **meta) -> QASample:
    return QASample("s1", f"Question: {question}\n\nAnswer:", label, graph, {"query": question, **meta})


def test_longer_names_take_their_mentions_first():
    assert named_nodes(SCENE, "Is the cup on the coffee table?").tolist() == [0, 2, 3]  # no plain table
    assert named_nodes(SCENE, "Is the cup on the coffee table or on a table?").tolist() == [0, 1, 2, 3, 4]


def test_attributes_just_before_a_name_narrow_its_nodes():
    assert named_nodes(SCENE, "What is the red cup on?").tolist() == [2]
    assert named_nodes(SCENE, "What is the blue glass cup on?").tolist() == [3]
    assert named_nodes(SCENE, "Is the white lamp on a table?").tolist() == [1, 4, 5]  # no white lamp: every lamp
    assert named_nodes(SCENE, "Is the cup red?").tolist() == [2, 3]  # an attribute after the name narrows nothing


def test_names_match_whole_words_after_normalising():
    assert named_nodes(SCENE, "Which CUPS are there?").tolist() == []
    assert named_nodes(SCENE, "LAMP, on the table?").tolist() == [1, 4, 5]
    concepts = TextualGraph(["cannabis", "more available", "legal"], [(0, 1, "capable of")])
    assert named_nodes(concepts, "Cannabis should be legal; it's more-available.").tolist() == [0, 1, 2]


def test_webqsp_question_entities_are_its_q_entity_nodes():
    graph = TextualGraph(["m.0abc", "barack obama", "honolulu"], [(1, 2, "people.person.place_of_birth")])
    s = sample("where was obama born", "honolulu", graph, q_entity=["Barack Obama"], a_entity=["Honolulu"],
               answer_nodes=[2])
    assert question_entities(s).tolist() == [1]
    assert answer_nodes(s).tolist() == [2]


def test_answer_nodes_are_what_a_real_dataset_has_and_the_evidence_only_by_name():
    with_evidence = sample("q", evidence={"nodes": [4, 1], "edges": []})
    assert answer_nodes(with_evidence, "evidence").tolist() == [1, 4]
    assert answer_nodes(with_evidence).tolist() == []  # the paper's targets never read the answer key
    assert answer_nodes(sample("q", evidence_nodes=[3]), "evidence").tolist() == [3]
    assert answer_nodes(sample("q", answer_nodes=[3], evidence={"nodes": [4], "edges": []})).tolist() == [3]
    assert answer_nodes(sample("what is on the table?", label="red")).tolist() == [2]
    assert answer_nodes(sample("support or counter?", label="support")).tolist() == []
    with pytest.raises(ValueError, match="fit targets 'labels'"):
        answer_nodes(with_evidence, "labels")


def square_complex():
    graph = TextualGraph(["a", "b", "c", "d", "e"], [(0, 1, "r"), (1, 2, "r"), (3, 2, "r"), (0, 3, "r"), (2, 4, "r")])
    return graph, lift(graph, torch.zeros(5, 4), torch.zeros(5, 4))


def test_every_shortest_path_labels_its_edges():
    _, cc = square_complex()
    assert shortest_path_edges(cc, np.array([0]), np.array([2])).tolist() == [0, 1, 2, 3]  # both ways round
    assert shortest_path_edges(cc, np.array([0]), np.array([1])).tolist() == [0]
    assert shortest_path_edges(cc, np.array([0]), np.array([0])).tolist() == []


def test_answer_edges_follow_evidence_then_paths_then_the_answers_own_edges():
    graph, cc = square_complex()
    with_evidence = QASample("s", "q", "x", graph, {"evidence": {"nodes": [1], "edges": [4]}})
    assert answer_edges(with_evidence, cc, np.array([0]), np.array([1]), "evidence").tolist() == [4]
    assert answer_edges(with_evidence, cc, np.array([0]), np.array([1])).tolist() == [0]  # the shortest path
    plain = QASample("s", "q", "x", graph)
    assert answer_edges(plain, cc, np.array([0]), np.array([4])).tolist() == [0, 1, 2, 3, 4]
    assert answer_edges(plain, cc, np.array([], dtype=np.int64), np.array([4])).tolist() == [4]  # no entity
    assert answer_edges(plain, cc, np.array([2]), np.array([2])).tolist() == [1, 2, 4]  # the answer is the entity


def test_directional_distance_encoding_on_a_chain():
    graph = TextualGraph(["a", "b", "c"], [(0, 1, "r"), (1, 2, "r")])
    dde = directional_distance_encoding(lift(graph, torch.zeros(3, 2), torch.zeros(2, 2)), np.array([1]), 1)
    # [(other, entity) | forward round (mean over in-edges) | backward round (mean over out-edges)]
    assert dde.tolist() == [[1, 0, 0, 0, 0, 1], [0, 1, 1, 0, 1, 0], [1, 0, 0, 1, 0, 0]]
