"""Question entities and answer-bearing cells of a sample, as the learned retrievers (SubgraphRAG, GNN-RAG) read them.

Question entities (the topic entities both papers start from):
- WebQSP (`sample.meta["q_entity"]`): the nodes whose text is a q_entity, lower-cased as the loader lower-cases
  node texts.
- Otherwise (scene graphs, the synthetic testbed, GQA, ExplaGraphs): the nodes the question names. A node's name is
  the `name:` field of a scene-graph node text (`name: cup; attribute: red, glass`), else its whole text. The
  question (`sample.query`) and the names are normalised (lower case, each run of other characters than letters and
  digits one space) and matched as whole words, longer names first: a mention is taken by the longest name that
  matches it, so "coffee table" does not also name every "table". When the words just before a mention are
  attributes of that name's nodes ("the red cup"), only the nodes having all of them are kept, if any has.

Training targets, `targets="answers"` (the default, `RetrievalConfig.fit_targets`): what a real dataset has, as
the two papers train on it.
- Answer nodes (GNN-RAG's): WebQSP's a_entity nodes and GQA's (and the testbed's) annotated answer objects
  (`meta["answer_nodes"]`, found by the loaders); otherwise the nodes whose text names the label (normalised, whole
  words). Yes/no questions and ExplaGraphs' labels (support, counter) name no node: they give no target.
- Answer triples (SubgraphRAG's): every edge on a shortest undirected path from a question entity to an answer node
  (SubgraphRAG's labels on WebQSP: the shortest paths from q_entity to a_entity), plus the edges touching an answer
  node that no such path reaches (it is a question entity, or no entity reaches it).
`targets="evidence"` is what runs before this choice existed trained on: the testbed's evidence cells
(`meta["evidence"]`; version 1: `meta["evidence_nodes"]`), its answer key, which no real dataset has.
"""

from __future__ import annotations

import re

import numpy as np

from toporag_lib.data.graph import QASample, TextualGraph
from toporag_lib.retrieval.baselines.fitted.graph_paths import shortest_path_edges
from toporag_lib.retrieval.retrieval_config import FIT_TARGETS
from toporag_lib.topology.complex import CellComplex

_OTHER = re.compile(r"[^0-9a-z]+")


def normalise(text: str) -> str:
    """Lower case, every run of characters other than letters and digits one space, stripped."""
    return _OTHER.sub(" ", text.lower()).strip()


def node_fields(text: str) -> tuple[str, set[str]]:
    """(normalised name, attribute words) of a node text: a scene-graph text's `name:` and `attribute:` fields,
    else the whole text and no attributes."""
    fields = dict(part.split(":", 1) for part in text.split(";") if ":" in part)
    fields = {key.strip().lower(): value for key, value in fields.items()}
    if "name" not in fields:
        return normalise(text), set()
    return normalise(fields["name"]), set(normalise(fields.get("attribute", "")).split())


def named_nodes(graph: TextualGraph, question: str) -> np.ndarray:
    """Sorted ids of the nodes `question` names (the rule of the module docstring)."""
    words = normalise(question).split()
    taken = np.zeros(len(words), dtype=bool)
    by_name: dict[str, list[int]] = {}
    attributes = []
    for node, text in enumerate(graph.nodes):
        name, attrs = node_fields(text)
        if name:
            by_name.setdefault(name, []).append(node)
        attributes.append(attrs)
    found: set[int] = set()
    for name in sorted(by_name, key=lambda n: (-len(n.split()), -len(n), n)):
        span = name.split()
        vocabulary = set().union(*(attributes[v] for v in by_name[name]))
        for start in range(len(words) - len(span) + 1):
            if words[start:start + len(span)] != span or taken[start:start + len(span)].any():
                continue
            taken[start:start + len(span)] = True
            before = start
            while before > 0 and words[before - 1] in vocabulary:
                before -= 1
            modifiers = set(words[before:start])
            fitting = [v for v in by_name[name] if modifiers <= attributes[v]]
            found.update(fitting or by_name[name])
    return np.array(sorted(found), dtype=np.int64)


def question_entities(sample: QASample) -> np.ndarray:
    """Sorted node ids of the sample's question entities (module docstring)."""
    if "q_entity" in sample.meta:
        wanted = {str(e).lower() for e in sample.meta["q_entity"]}
        return np.array([v for v, text in enumerate(sample.graph.nodes) if text in wanted], dtype=np.int64)
    return named_nodes(sample.graph, sample.query)


def answer_nodes(sample: QASample, targets: str = "answers") -> np.ndarray:
    """Sorted node ids that bear the sample's answer under `targets` (module docstring); empty when none is known."""
    meta = sample.meta
    if targets not in FIT_TARGETS:
        raise ValueError(f"fit targets {targets!r}: expected one of {list(FIT_TARGETS)}")
    if targets == "evidence" and "answer_nodes" in meta and "a_entity" in meta:
        nodes = meta["answer_nodes"]
    elif targets == "evidence" and isinstance(meta.get("evidence"), dict):
        nodes = meta["evidence"]["nodes"]
    elif targets == "evidence" and "evidence_nodes" in meta:
        nodes = meta["evidence_nodes"]
    elif targets == "answers" and meta.get("answer_nodes"):
        nodes = meta["answer_nodes"]
    else:
        label = normalise(sample.label)
        nodes = [v for v, text in enumerate(sample.graph.nodes)
                 if label and f" {label} " in f" {normalise(text)} "]
    nodes = np.unique(np.asarray(nodes, dtype=np.int64))
    if len(nodes) and (nodes[0] < 0 or nodes[-1] >= sample.graph.num_nodes):
        raise ValueError(f"sample {sample.id!r}: answer nodes {nodes.tolist()} outside 0..{sample.graph.num_nodes - 1}")
    return nodes


def answer_edges(sample: QASample, cc: CellComplex, entities: np.ndarray, answers: np.ndarray,
                 targets: str = "answers") -> np.ndarray:
    """Sorted edge ids of the sample's answer triples under `targets` (module docstring), given its entities and
    answer nodes."""
    evidence = sample.meta.get("evidence")
    if targets == "evidence" and isinstance(evidence, dict) and len(evidence.get("edges", [])):
        edges = np.unique(np.asarray(evidence["edges"], dtype=np.int64))
        if edges[0] < 0 or edges[-1] >= cc.num_cells(1):
            raise ValueError(f"sample {sample.id!r}: evidence edges {edges.tolist()} outside 0..{cc.num_cells(1) - 1}")
        return edges
    on_paths = shortest_path_edges(cc, entities, answers)
    reached = np.zeros(cc.num_nodes, dtype=bool)
    reached[cc.edge_src[on_paths]] = reached[cc.edge_dst[on_paths]] = True
    alone = np.setdiff1d(answers, np.flatnonzero(reached))
    touching = np.flatnonzero(np.isin(cc.edge_src, alone) | np.isin(cc.edge_dst, alone))
    return np.union1d(on_paths, touching).astype(np.int64)
