"""Reference solvers of the testbed (versions 2 and 3): what nodes and paths can answer, and
what takes loops.

Both read only the sample's graph (node texts, edges) and its question's structure (`sample.meta["structure"]`:
the anchor node, the relations to follow, the names asked about), never the answer or the evidence.

- `path_only_answer` may use nodes and paths: it follows relations from the anchor, and checks each relation a
  loop question names on its own, by the names of the objects involved, without comparing which node two paths
  reach. On a loop question it answers "yes" when every named relation exists.
- `loop_answer` may also use loops: it checks whether the two `on` edges of a loop question reach the same node,
  i.e. whether the triangle closes.

On the testbed the loop solver is right on every question, and the path-only solver on every attribute and path
question but only at chance on loops (every loop question has all of its relations, so it always says "yes").
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable

from toporag_lib.data.graph import QASample, TextualGraph
from toporag_lib.data.testbed.vocabulary import QUERIES


class GraphView:
    """A scene graph's node names and attributes (parsed from G-Retriever's node text) and its edges both ways."""

    def __init__(self, graph: TextualGraph) -> None:
        self.names, self.attributes = [], []
        for text in graph.nodes:
            fields = dict(part.split(": ", 1) for part in text.split("; ") if ": " in part)
            self.names.append(fields["name"])
            self.attributes.append(fields.get("attribute", "").split(", "))
        self.outgoing: dict[tuple[int, str], list[int]] = defaultdict(list)
        self.incoming: dict[tuple[int, str], list[int]] = defaultdict(list)
        for src, dst, relation in graph.edges:
            self.outgoing[(src, relation)].append(dst)
            self.incoming[(dst, relation)].append(src)

    def step(self, node: int, relation: str, direction: str) -> int | None:
        found = (self.outgoing if direction == "out" else self.incoming)[(node, relation)]
        return found[0] if len(found) == 1 else None


def _structure(sample: QASample) -> dict:
    if "structure" not in sample.meta:
        raise ValueError(f"sample {sample.id} has no question structure: the reference solvers need synthetic_scenes "
                         "version 2 or 3")
    return sample.meta["structure"]


def _follow(view: GraphView, sample: QASample) -> str:
    """Attribute and path questions: the anchor's attribute, or the name at the end of the hops."""
    s = _structure(sample)
    node = s["anchor"]
    if sample.meta["family"] == "attribute":
        return view.attributes[node][QUERIES[s["query"]]]
    for hop in s["hops"]:
        node = view.step(node, hop["relation"], hop["direction"])
        if node is None:
            return ""
    return view.names[node]


def _loop_object(view: GraphView, s: dict) -> int | None:
    """The object of a loop question: the one named `name` with `relation` to the anchor."""
    found = [u for u in view.incoming[(s["anchor"], s["relation"])] if view.names[u] == s["name"]]
    return found[0] if len(found) == 1 else None


def _answer(sample: QASample, loop: Callable[[GraphView, dict, int | None], str]) -> str:
    """Attribute and path questions by following the graph; loop questions by `loop(view, structure, object)`."""
    view = GraphView(sample.graph)
    if sample.meta["family"] != "loop":
        return _follow(view, sample)
    s = _structure(sample)
    return loop(view, s, _loop_object(view, s))


def _relations_hold(view: GraphView, s: dict, x: int | None) -> str:
    """"yes" when the object exists and both it and the anchor stand on something named like the surface."""
    def on_a(node: int) -> bool:
        return any(view.names[t] == s["surface"] for t in view.outgoing[(node, "on")])

    return "yes" if x is not None and on_a(x) and on_a(s["anchor"]) else "no"


def _triangle_closes(view: GraphView, s: dict, x: int | None) -> str:
    """"yes" when the object's and the anchor's `on` edges reach the same node."""
    if x is None:
        return "no"
    sx, sv = view.step(x, "on", "out"), view.step(s["anchor"], "on", "out")
    return "yes" if sx is not None and sx == sv else "no"


def path_only_answer(sample: QASample) -> str:
    """Nodes and paths only: a loop question's relations checked one by one, by name (see the module docstring)."""
    return _answer(sample, _relations_hold)


def loop_answer(sample: QASample) -> str:
    """Nodes, paths and loops: a loop question is answered by whether its triangle closes."""
    return _answer(sample, _triangle_closes)


SOLVERS = {"path-only solver": path_only_answer, "loop solver": loop_answer}
