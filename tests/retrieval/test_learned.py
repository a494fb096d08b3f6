"""SubgraphRAG and GNN-RAG, fitted on small graphs whose answer is known (`retrieval.baselines.fitted`)."""

from dataclasses import replace

import numpy as np
import pytest
import torch

from toporag_lib.data.dataset import QADataset
from toporag_lib.data.graph import QASample, TextualGraph
from toporag_lib.retrieval import RetrievalConfig, make_retriever, retrieve
from toporag_lib.retrieval.baselines.fitted.fitting import fit
from toporag_lib.retrieval.baselines.fitted.question import graph_question
from toporag_lib.retrieval.retriever import ModelFreeRetriever
from toporag_lib.training.preprocess import PreparedDataset, retrieve_all

DIM = 8
NAMES = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india"]


def fit_retriever(prepared: PreparedDataset, config: RetrievalConfig, indices):
    return make_retriever(config, prepared.questions(indices))


def question_of(prepared: PreparedDataset, i: int):
    return graph_question(*prepared.question(i))


def puzzle(seed: int) -> tuple[QASample, torch.Tensor, torch.Tensor]:
    """A random graph with one `owns` edge out of the question's node (the answer triple) and one elsewhere (a
    decoy only the question entity tells apart), plus `near` edges; node and edge features, no encoder."""
    rng = np.random.default_rng(seed)
    n = len(NAMES)
    entity, answer, a, b = rng.permutation(n)[:4]
    edges = [(int(entity), int(answer), "owns"), (int(a), int(b), "owns")]
    edges += [(int(u), int(v), "near") for u, v in rng.integers(0, n, size=(10, 2)) if u != v]
    order = rng.permutation(len(edges))
    edges = [edges[j] for j in order]
    answer_edge = int(np.flatnonzero(order == 0)[0])
    graph = TextualGraph(NAMES, edges)
    meta = {"query": f"What does {NAMES[entity]} own?", "evidence": {"nodes": [int(answer)], "edges": [answer_edge]}}
    relation = {"owns": torch.ones(DIM), "near": -torch.ones(DIM)}
    x = torch.tensor(rng.normal(size=(n, DIM)), dtype=torch.float32)
    edge_features = torch.stack([relation[r] for *_, r in edges])
    return QASample(f"p{seed}", meta["query"], NAMES[answer], graph, meta), x, edge_features


def puzzles(count: int = 70) -> PreparedDataset:
    from toporag_lib.topology import lift

    made = [puzzle(seed) for seed in range(count)]
    split = {"train": list(range(60)), "val": list(range(60, 62)), "test": list(range(62, count))}
    dataset = QADataset("puzzles", [s for s, _, _ in made], split)
    complexes = [lift(s.graph, x, e) for s, x, e in made]
    queries = torch.ones(count, DIM) / DIM
    return PreparedDataset(dataset, complexes, list(range(count)), queries, {})


@pytest.fixture(scope="module")
def prepared():
    return puzzles()


def answer_edge(prepared, i) -> int:
    return prepared.sample(i).meta["evidence"]["edges"][0]


def assert_valid(prepared, i, sub):
    cc = prepared.complex_of(i)
    assert np.all(np.diff(sub.nodes) > 0) and np.all(np.diff(sub.edges) > 0) and len(sub.cells2) == 0
    assert 0 <= sub.nodes.min() and sub.nodes.max() < cc.num_nodes
    assert np.all((0 <= sub.edges) & (sub.edges < cc.num_cells(1)))
    ends = set(cc.edge_src[sub.edges].tolist()) | set(cc.edge_dst[sub.edges].tolist())
    assert ends <= set(sub.nodes.tolist())


def test_subgraphrag_retrieves_the_answer_triple_of_unseen_graphs(prepared):
    config = RetrievalConfig("subgraphrag", top_k=1, fit_epochs=20)
    fitted = fit_retriever(prepared, config, prepared.dataset.split["train"])
    assert fitted.trained_on == 60
    test = prepared.dataset.split["test"]
    subs = retrieve_all(prepared, fitted, test)
    for i, sub in zip(test, subs):
        assert_valid(prepared, i, sub)
        assert sub.edges.tolist() == [answer_edge(prepared, i)]  # the decoy `owns` edge is not the entity's
        assert sub.method == "subgraphrag" and sub.params["top_k"] == 1


def test_gnnrag_retrieves_the_path_to_the_answer_node(prepared):
    config = RetrievalConfig("gnnrag", candidates=1, fit_epochs=20)
    fitted = fit_retriever(prepared, config, prepared.dataset.split["train"])
    test = prepared.dataset.split["test"]
    for i, sub in zip(test, retrieve_all(prepared, fitted, test)):
        assert_valid(prepared, i, sub)
        answer = prepared.sample(i).meta["evidence"]["nodes"][0]
        assert answer in sub.nodes
        assert answer_edge(prepared, i) in sub.edges  # entity -owns-> answer is a shortest path


@pytest.mark.parametrize("method", ["subgraphrag", "gnnrag"])
def test_fitting_is_deterministic_given_its_seed(prepared, method):
    train = prepared.dataset.split["train"][:8]
    first, second = (fit_retriever(prepared, RetrievalConfig(method, fit_epochs=2), train) for _ in range(2))
    other = fit_retriever(prepared, RetrievalConfig(method, fit_epochs=2, fit_seed=1), train)
    for (name, a), b, c in zip(first.model.state_dict().items(), second.model.state_dict().values(),
                               other.model.state_dict().values()):
        assert torch.equal(a, b), name
    assert not all(torch.equal(a, c) for a, c in zip(first.model.state_dict().values(),
                                                     other.model.state_dict().values()))
    test = prepared.dataset.split["test"]
    config = RetrievalConfig(method, fit_epochs=2)
    for a, b in zip(*(retrieve_all(prepared, f, test) for f in (first, second))):
        assert np.array_equal(a.nodes, b.nodes) and np.array_equal(a.edges, b.edges)


def test_fitting_reads_only_the_training_questions():
    clean, corrupted = puzzles(), puzzles()
    for i in corrupted.dataset.split["val"] + corrupted.dataset.split["test"]:
        corrupted.sample(i).meta["evidence"] = {"nodes": [0], "edges": [0]}
    train = clean.dataset.split["train"]
    a, b = (fit_retriever(p, RetrievalConfig("subgraphrag", fit_epochs=2), train) for p in (clean, corrupted))
    assert all(torch.equal(x, y) for x, y in zip(a.model.state_dict().values(), b.model.state_dict().values()))
    c = fit_retriever(corrupted, RetrievalConfig("subgraphrag", fit_epochs=2), train + corrupted.dataset.split["test"])
    assert not all(torch.equal(x, y) for x, y in zip(a.model.state_dict().values(), c.model.state_dict().values()))


@pytest.mark.parametrize("method", ["subgraphrag", "gnnrag"])
def test_without_any_training_target_the_whole_graph_is_retrieved(method):
    prepared = puzzles()
    for i in prepared.dataset.split["train"]:  # an ExplaGraphs-like label that names no node, no evidence
        sample = prepared.dataset.samples[i]
        prepared.dataset.samples[i] = replace(sample, label="support", meta={"query": sample.query})
    fitted = fit_retriever(prepared, RetrievalConfig(method), prepared.dataset.split["train"])
    assert fitted.model is None and fitted.trained_on == 0
    sub = fitted.retrieve(*prepared.question(65))
    cc = prepared.complex_of(65)
    assert sub.nodes.tolist() == list(range(cc.num_nodes)) and sub.edges.tolist() == list(range(cc.num_cells(1)))


@pytest.mark.parametrize("method", ["subgraphrag", "gnnrag"])
def test_plain_retrieve_points_to_the_fitting_function(prepared, method):
    with pytest.raises(ValueError, match=rf"{method!r} is fitted .*make_retriever\(config, training\)"):
        retrieve(prepared.complex_of(0), prepared.queries[0], RetrievalConfig(method))


def test_a_model_free_retriever_reads_no_training_question_and_a_fitted_one_keeps_its_config(prepared):
    def never():
        raise AssertionError("a model-free retriever read a training question")
        yield
    retriever = make_retriever(RetrievalConfig("toporag"), never())
    assert isinstance(retriever, ModelFreeRetriever)
    assert retrieve_all(prepared, retriever, [0])[0].method == "toporag"
    config = RetrievalConfig("subgraphrag", fit_epochs=1, top_k=5)
    fitted = fit_retriever(prepared, config, [0, 1])
    assert fitted.config == config and retrieve_all(prepared, fitted, [2])[0].params["top_k"] == 5
    with pytest.raises(TypeError, match="make_retriever takes a RetrievalConfig, not dict"):
        make_retriever({"method": "toporag"})


@pytest.mark.parametrize("params, error, message", [
    ({"top_k": 0}, ValueError, r"RetrievalConfig.top_k=0: expected an int >= 1"),
    ({"fit_epochs": 2.5}, ValueError, r"RetrievalConfig.fit_epochs=2.5: expected an int >= 1"),
    ({"fit_lr": 0.0}, ValueError, r"RetrievalConfig.fit_lr=0.0: expected a finite number > 0"),
    ({"dde_rounds": -1}, ValueError, r"RetrievalConfig.dde_rounds=-1: expected an int >= 0"),
])
def test_bad_parameters_are_named(prepared, params, error, message):
    with pytest.raises(error, match=message):
        fit_retriever(prepared, RetrievalConfig("subgraphrag", **params), [0])


def test_fitting_needs_questions_built_with_their_answers(prepared):
    with pytest.raises(ValueError, match=r"sample 'p0' \(and 1 more\) was built without its answer cells"):
        fit(RetrievalConfig("gnnrag"), [question_of(prepared, 0), question_of(prepared, 1)])


def test_a_question_of_another_feature_size_is_refused(prepared):
    fitted = fit_retriever(prepared, RetrievalConfig("gnnrag", fit_epochs=1), [0, 1])
    sample, cc, _ = prepared.question(2)
    with pytest.raises(ValueError, match=r"sample 'p2': query embedding of shape \(7,\): expected \(8,\)"):
        fitted.retrieve(sample, cc, torch.ones(DIM - 1))


def test_an_all_zero_query_is_refused_by_a_fitted_retriever(prepared):
    from toporag_lib.retrieval.by_method import QueryEmbeddingError

    fitted = fit_retriever(prepared, RetrievalConfig("gnnrag", fit_epochs=1), [0, 1])
    sample, cc, _ = prepared.question(2)
    with pytest.raises(QueryEmbeddingError, match=r"sample 'p2': query embedding is all zeros"):
        fitted.retrieve(sample, cc, torch.zeros(DIM))


def test_config_defaults_are_documented_values():
    config = RetrievalConfig("subgraphrag")
    assert (config.top_k, config.dde_rounds, config.candidates, config.gnn_layers) == (10, 2, 3, 2)
    assert config.reads() == {"method": "subgraphrag", "top_k": 10, "dde_rounds": 2, "fit_epochs": 10,
                               "fit_lr": 1e-3, "fit_seed": 0, "fit_targets": "answers"}
