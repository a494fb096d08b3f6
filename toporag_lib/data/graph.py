"""The data model: textual graphs, question-answer samples, and G-Retriever's textualization."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import pandas as pd
import torch

from toporag_lib.data.errors import DatasetFormatError, is_int, shown, unencodable

Edge = tuple[int, int, str]


@dataclass(frozen=True)
class TextualGraph:
    """A directed multigraph whose nodes and edges carry text.

    `nodes[i]` is node i's text; `edges[j] = (src, dst, text)` is edge j. Parallel edges and self-loops are
    allowed here; how the lifting treats them is documented in `toporag_lib.topology.lifting`.

    Refused (DatasetFormatError): a node or edge text that is not a string or not UTF-8 text (a lone surrogate), an
    end that is not an integer (a float such as 1.7 is not truncated; numpy integers are integers) or names no node.
    """

    nodes: list[str]
    edges: list[Edge]

    def __post_init__(self) -> None:
        n = len(self.nodes)
        for j, edge in enumerate(self.edges):
            if len(edge) != 3:
                raise DatasetFormatError(f"edge {j} is {edge!r}: expected (src, dst, text)")
            src, dst, text = edge
            if not (type(src) is int and type(dst) is int and type(text) is str):  # the common case, fast
                check_edge(j, src, dst, text)
            if not (0 <= src < n and 0 <= dst < n):
                raise DatasetFormatError(f"edge {j} ({src} -> {dst}) names a node outside 0..{n - 1}")
        check_graph_texts(self.nodes, self.edges)

    @property
    def num_nodes(self) -> int:
        return len(self.nodes)

    @property
    def num_edges(self) -> int:
        return len(self.edges)

    @property
    def edge_texts(self) -> list[str]:
        return [text for _, _, text in self.edges]

    def triples(self) -> list[str]:
        """Each edge verbalised with its ends, `(head text, relation, tail text)`, as KAPING and SubgraphRAG score
        triples."""
        return [f"({self.nodes[s]}, {text}, {self.nodes[d]})" for s, d, text in self.edges]

    @property
    def edge_index(self) -> torch.Tensor:
        """Long tensor of shape [2, num_edges]: row 0 sources, row 1 targets."""
        if not self.edges:
            return torch.empty(2, 0, dtype=torch.long)
        return torch.tensor([[s for s, _, _ in self.edges], [d for _, d, _ in self.edges]], dtype=torch.long)

    def num_components(self) -> int:
        """Connected components of the underlying undirected graph (isolated nodes count)."""
        parent = list(range(self.num_nodes))

        def find(x: int) -> int:
            while parent[x] != x:
                parent[x] = parent[parent[x]]
                x = parent[x]
            return x

        components = self.num_nodes
        for src, dst, _ in self.edges:
            a, b = find(src), find(dst)
            if a != b:
                parent[a] = b
                components -= 1
        return components

    def num_independent_cycles(self) -> int:
        """First Betti number |E| - |V| + components of the simple graph (no self-loops, no parallel edges)."""
        simple = {frozenset((s, d)) for s, d, _ in self.edges if s != d}
        return len(simple) - self.num_nodes + self.num_components()


def check_edge(j: int, src, dst, text) -> None:
    for name, end in (("source", src), ("target", dst)):
        if not is_int(end):
            raise DatasetFormatError(f"edge {j}'s {name} is {shown(end)}: expected an integer node id")
    if not isinstance(text, str):
        raise DatasetFormatError(f"edge {j}'s text is {shown(text)}: expected a string")


def check_graph_texts(nodes: list[str], edges: list[Edge]) -> None:
    """Every node and edge text a string that UTF-8 can encode (one encode for all; one by one to name a failure)."""
    for i, node in enumerate(nodes):
        if not isinstance(node, str):
            raise DatasetFormatError(f"node {i}'s text is {shown(node)}: expected a string")
    try:
        "".join(nodes).encode("utf-8")
        "".join(text for _, _, text in edges).encode("utf-8")
    except UnicodeEncodeError:
        for what, texts in (("node", nodes), ("edge", [text for _, _, text in edges])):
            for i, text in enumerate(texts):
                reason = unencodable(text)
                if reason:
                    raise DatasetFormatError(f"{what} {i}'s text {text[:60]!r} is not UTF-8 text: {reason}") from None


@dataclass(frozen=True)
class QASample:
    """One question about one graph. `meta` holds dataset-specific extras: `query` (the raw question that retrieval
    embeds, as G-Retriever does; defaults to `question`), a question family, answer nodes."""

    id: str
    question: str
    label: str
    graph: TextualGraph
    meta: dict[str, Any] = field(default_factory=dict)

    @property
    def query(self) -> str:
        return self.meta.get("query", self.question)


def graph_key(graph: TextualGraph) -> str:
    """Content hash of a graph (node texts, edges), so that questions sharing one graph can share its work."""
    digest = hashlib.sha1()
    for node in graph.nodes:
        digest.update(node.encode() + b"\0")
    for src, dst, text in graph.edges:
        digest.update(f"{src},{dst},{text}\0".encode())
    return digest.hexdigest()


def nodes_frame(graph: TextualGraph, node_ids: list[int] | None = None) -> pd.DataFrame:
    """G-Retriever's nodes table (`node_id,node_attr`), optionally restricted to `node_ids`."""
    ids = range(graph.num_nodes) if node_ids is None else node_ids
    return pd.DataFrame({"node_id": list(ids), "node_attr": [graph.nodes[i] for i in ids]},
                        columns=["node_id", "node_attr"])


def edges_frame(graph: TextualGraph, edge_ids: list[int] | None = None) -> pd.DataFrame:
    """G-Retriever's edges table (`src,edge_attr,dst`), optionally restricted to `edge_ids`."""
    ids = range(graph.num_edges) if edge_ids is None else edge_ids
    rows = [graph.edges[j] for j in ids]
    return pd.DataFrame({"src": [s for s, _, _ in rows], "edge_attr": [t for _, _, t in rows],
                         "dst": [d for _, d, _ in rows]}, columns=["src", "edge_attr", "dst"])


CSV_QUOTED = (",", '"', "\n", "\r")  # a field holding any of these is quoted, its quotes doubled


def csv_field(value: object) -> str:
    """One CSV field as pandas' `to_csv` writes it (the csv module's minimal quoting), except that a field holding a
    carriage return is quoted too: pandas ends lines with "\n" and leaves a lone "\r" bare, which readers (pandas'
    and the csv module's) take for a line break; the csv module with its default "\r\n" line ending quotes it."""
    text = str(value)
    if any(c in text for c in CSV_QUOTED):
        return '"' + text.replace('"', '""') + '"'
    return text


def csv_table(header: Sequence[str], rows: Iterable[Sequence[object]]) -> str:
    """A CSV table (header, rows, each line ending "\n"), fields as `csv_field` writes them."""
    return "".join(",".join(map(csv_field, row)) + "\n" for row in [header, *rows])


def textualize(graph: TextualGraph, node_ids: list[int] | None = None, edge_ids: list[int] | None = None) -> str:
    """G-Retriever's text of a (sub)graph: the nodes CSV, a newline, the edges CSV, byte for byte as pandas writes
    them (`nodes_frame(...).to_csv(index=False)`), but for a text holding "\r", which is quoted (`csv_field`)."""
    nodes = range(graph.num_nodes) if node_ids is None else node_ids
    edges = range(graph.num_edges) if edge_ids is None else edge_ids
    node_rows = ((i, graph.nodes[i]) for i in nodes)
    edge_rows = ((graph.edges[j][0], graph.edges[j][2], graph.edges[j][1]) for j in edges)
    return csv_table(("node_id", "node_attr"), node_rows) + "\n" + csv_table(("src", "edge_attr", "dst"), edge_rows)
