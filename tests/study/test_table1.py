"""The paper's Table 1 rows as presets: each method reads the input its own paper gives it (issue 19)."""

from __future__ import annotations

import pytest
import torch
from tiny_models import CHATML, make_tiny_model

from toporag_lib.data.graph import TextualGraph
from toporag_lib.data.registry import EXPLAGRAPHS_TASK, dataset_spec
from toporag_lib.generation.llm import load_llm
from toporag_lib.generation.soft_prompt import (
    ModelConfig,
    TopoRAGModel,
    initial_virtual_tokens,
)
from toporag_lib.retrieval.subcomplex import Subcomplex
from toporag_lib.retrieval.textualize import KAPING_HEADER, textualize_subcomplex
from toporag_lib.study.experiments import COT, COT_BAG, TABLE1_METHODS, method_config
from toporag_lib.topology import lift
from toporag_lib.training.ledger import config_digest
from toporag_lib.training.train_config import TrainConfig

LLM_ONLY = ["zero-shot", "zero-shot CoT", "CoT-BAG", "prompt tuning", "LoRA (text only)"]


@pytest.fixture(scope="module")
def tiny_llm(tmp_path_factory):
    return load_llm(make_tiny_model(tmp_path_factory.mktemp("tiny_llm"), CHATML), dtype=torch.float32)


@pytest.mark.parametrize("method", LLM_ONLY)
def test_llm_only_baselines_read_gretrievers_textual_graph(method):
    config = method_config(method, "synthetic_scenes")
    assert config.retrieval.method == "gretriever" and config.model.encoder is None and config.graph_text
    assert method_config(method, "explagraphs").retrieval.method == "whole_graph"  # G-Retriever's input there


def test_chain_of_thought_prompts_and_the_papers_32_new_tokens():
    assert method_config("zero-shot CoT", "explagraphs").question_suffix == COT == "\nLet's think step by step."
    assert method_config("CoT-BAG", "explagraphs").question_suffix.endswith(
        "Let's construct a graph with the nodes and edges first.") and COT_BAG
    assert {method_config(m, "explagraphs").max_new_tokens for m in TABLE1_METHODS} == {32}


def test_kaping_ranks_verbalised_triples_and_prepends_them_as_facts():
    config = method_config("KAPING", "explagraphs")
    assert config.edge_text == "triple" and config.retrieval.reads() == {"method": "kaping", "k1": 5}
    graph = TextualGraph(["cat", "mat", "dog"], [(0, 1, "sits on"), (2, 0, "chases")])
    cc = lift(graph)
    sub = Subcomplex(torch.tensor([0, 2]), torch.tensor([1]), torch.empty(0, dtype=torch.long), method="kaping")
    assert textualize_subcomplex(graph, cc, sub) == f"{KAPING_HEADER}\n(dog, chases, cat)\n"
    other = Subcomplex(sub.nodes, sub.edges, sub.cells2, method="gretriever")
    assert textualize_subcomplex(graph, cc, other).startswith("node_id,node_attr")  # the others read CSV


def test_graphtoken_encodes_the_whole_graph_and_reads_no_graph_text():
    config = method_config("GraphToken", "synthetic_scenes")
    assert config.retrieval.method == "whole_graph" and not config.graph_text and config.model.encoder == "gat"


def test_gretriever_at_its_papers_and_at_its_codes_settings():
    paper, own = method_config("G-Retriever", "webqsp"), method_config("G-Retriever (own code)", "webqsp")
    assert (paper.retrieval.k0, paper.retrieval.k1, paper.model.num_layers) == (3, 3, 2)  # section 5.1's top-k
    assert (own.retrieval.k0, own.retrieval.k1, own.retrieval.cost_e, own.model.num_layers) == (3, 5, 0.5, 4)
    scenes = method_config("G-Retriever (own code) + LoRA", "synthetic_scenes")
    assert (scenes.retrieval.k1, scenes.edge_text, scenes.model.lora) == (3, "relation", True)


def test_prompt_tuning_starts_from_the_datasets_prompt():
    assert method_config("prompt tuning", "explagraphs").model.virtual_init == EXPLAGRAPHS_TASK
    assert method_config("prompt tuning", "synthetic_scenes").model.virtual_init == dataset_spec(
        "synthetic_scenes").task_prompt
    assert method_config("prompt tuning", "explagraphs").model.virtual_tokens == 10


def test_virtual_tokens_are_the_prompts_word_embeddings_repeated(tiny_llm):
    text = "Question: is there"
    ids = tiny_llm.tokenizer(text).input_ids
    assert 1 < len(ids) < 10
    tokens = initial_virtual_tokens(tiny_llm, 10, text)
    table = tiny_llm.model.get_input_embeddings().weight.float()
    expected = torch.stack([table[ids[i % len(ids)]] for i in range(10)])
    assert tokens.dtype == torch.float32 and torch.equal(tokens, expected)
    torch.manual_seed(0)
    random = initial_virtual_tokens(tiny_llm, 4, None)
    assert random.shape == (4, tiny_llm.hidden_size) and random.std() < 0.05


def test_prompt_tuning_trains_only_its_virtual_tokens_which_come_first(tiny_llm):
    model = TopoRAGModel(tiny_llm, 32, ModelConfig(encoder=None, virtual_tokens=3, virtual_init="is there"))
    assert [n for n, p in model.named_parameters() if p.requires_grad] == ["virtual"]
    from toporag_lib.generation.inputs import ExampleBatch

    batch = ExampleBatch(graphs=None, texts=["node_id,node_attr\n0,cat\n"], questions=["is there a cat?"],
                         labels=["yes"], indices=[0])
    soft = model.soft_prompt(batch)
    assert soft.shape == (1, 3, tiny_llm.hidden_size) and torch.equal(soft[0], model.virtual)
    model.loss(batch).backward()
    assert model.virtual.grad is not None and model.virtual.grad.abs().sum() > 0
    assert all(p.grad is None for n, p in tiny_llm.model.named_parameters())  # the LLM stays frozen


def test_keys_added_later_keep_old_run_ids():
    values = TrainConfig().to_dict()
    assert values["model"]["virtual_init"] is None and values["embedding_batching"] == "length"
    old = {k: v for k, v in values.items() if k != "embedding_batching"}
    old["model"] = {k: v for k, v in values["model"].items() if k != "virtual_init"}
    assert config_digest({**values, "embedding_batching": "single"}) == config_digest(old)  # as before the keys
    assert config_digest(values) != config_digest(old)  # "length" is a new run
    changed = {**values, "embedding_batching": "single", "model": {**values["model"], "virtual_init": "x"}}
    assert config_digest(changed) != config_digest(old)


def test_subgraphrag_and_gnnrag_keep_their_own_learned_retrieval_everywhere():
    for dataset in ("explagraphs", "synthetic_scenes"):
        sub, gnn = method_config("SubgraphRAG", dataset), method_config("GNN-RAG", dataset)
        assert sub.retrieval.method == "subgraphrag" and not sub.train and sub.model.encoder is None
        assert gnn.retrieval.method == "gnnrag" and gnn.train and gnn.model.lora and gnn.model.encoder is None
    assert method_config("SubgraphRAG", "webqsp").retrieval.top_k == 100  # SubgraphRAG's K on WebQSP
    assert method_config("SubgraphRAG", "synthetic_scenes").retrieval.top_k == 10


def test_subgraphrag_reads_its_triples_as_facts():
    graph = TextualGraph(["cat", "mat"], [(0, 1, "sits on")])
    sub = Subcomplex(torch.tensor([0, 1]), torch.tensor([0]), torch.empty(0, dtype=torch.long), method="subgraphrag")
    assert textualize_subcomplex(graph, lift(graph), sub) == f"{KAPING_HEADER}\n(cat, sits on, mat)\n"


TRAINS = {"prompt tuning": {"virtual"}, "GraphToken": {"encoder", "projector"}, "G-Retriever": {"encoder", "projector"},
          "G-Retriever (own code)": {"encoder", "projector"}, "TopoRAG": {"encoder", "projector"},
          "LoRA (text only)": {"lora"}, "GNN-RAG": {"lora"}, "G-Retriever + LoRA": {"encoder", "projector", "lora"},
          "TopoRAG + LoRA": {"encoder", "projector", "lora"}}


@pytest.mark.parametrize("method", sorted(TRAINS))
def test_each_trained_method_trains_only_its_own_parts(method, tmp_path_factory):
    llm = load_llm(make_tiny_model(tmp_path_factory.mktemp("llm"), CHATML), dtype=torch.float32)  # LoRA changes it
    config = method_config(method, "synthetic_scenes").model
    config = ModelConfig(**{**config.to_dict(), "hidden_dim": 8, "projector_hidden": 8})
    model = TopoRAGModel(llm, 16, config)
    parts = {"lora" if "lora_" in n else n.split(".")[0] for n, p in model.named_parameters() if p.requires_grad}
    assert parts == TRAINS[method]
    assert method_config(method, "synthetic_scenes").train
