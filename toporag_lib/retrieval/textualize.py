"""Text of a retrieved subcomplex, as the LLM reads it.

G-Retriever's nodes CSV and edges CSV (original ids, as `graph.textualize` writes them), then, only when 2-cells
were retrieved, a blank line and a compact table of the 2-cells as closed walks in node ids and relations:

    cell_id,cycle
    0,3 -on-> 5 <-under- 7 -to the left of-> 3

`a -r-> b` is an edge from a to b with text r; `a <-r- b` one from b to a. Without 2-cells the text is exactly
G-Retriever's (but for a text holding a carriage return, which is quoted: `graph.csv_field`), so baselines and
TopoRAG differ only by what they retrieve. KAPING's retrieval reads as its paper prompts it: its triples, one per
line, under "Below are the facts that might be relevant to answer the question:"; so does SubgraphRAG's (its LLM
reads the retrieved triples as a list).
"""

from __future__ import annotations

from toporag_lib.data.graph import TextualGraph, csv_table, textualize
from toporag_lib.retrieval.by_method import Subcomplex
from toporag_lib.topology.complex import CellComplex


def cycle_text(graph: TextualGraph, cc: CellComplex, cell: int) -> str:
    """One 2-cell's boundary walk, e.g. `3 -on-> 5 <-under- 7 -left of-> 3`."""
    nodes, edges, signs, _ = cc.cell(cell)
    parts = [str(nodes[0])]
    for i, (edge, sign) in enumerate(zip(edges, signs)):
        relation = graph.edges[edge][2]
        arrow = f"-{relation}->" if sign > 0 else f"<-{relation}-"
        parts += [arrow, str(nodes[(i + 1) % len(nodes)])]
    return " ".join(parts)


def cells_csv(graph: TextualGraph, cc: CellComplex, cells2) -> str:
    """The 2-cells table, quoted as the nodes and edges tables are (`graph.csv_field`)."""
    return csv_table(("cell_id", "cycle"), ((int(c), cycle_text(graph, cc, int(c))) for c in cells2))


KAPING_HEADER = "Below are the facts that might be relevant to answer the question:"
TRIPLE_LISTS = ("kaping", "subgraphrag")  # retrievals whose LLM reads their triples as a list of facts


def textualize_subcomplex(graph: TextualGraph, cc: CellComplex, sub: Subcomplex) -> str:
    """Nodes CSV, edges CSV, and (when there are any) the retrieved 2-cells as cycles; KAPING's triples as facts."""
    if sub.method in TRIPLE_LISTS:
        triples = graph.triples()
        return "\n".join([KAPING_HEADER, *(triples[e] for e in sub.edges.tolist())]) + "\n"
    text = textualize(graph, node_ids=sub.nodes.tolist(), edge_ids=sub.edges.tolist())
    if sub.num_cells(2):
        text += "\n" + cells_csv(graph, cc, sub.cells2)
    return text
