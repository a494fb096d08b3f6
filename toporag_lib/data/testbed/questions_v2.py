"""Testbed version 2, the questions: each family needs exactly the cells of its dimension.

Each image has two or three pieces of furniture of the same kind (two tables, say) and sometimes one of another
kind, with small objects on them or on the floor. Object names repeat across the furniture (a cup on each table),
so a name rarely identifies an object and the furniture's name never tells its instance apart. Relations: `on`
(object -> furniture) and position-consistent spatial ones between objects, on the same furniture and across
(`to the left of` / `to the right of`, `in front of` / `behind`, written in both directions). Node texts carry name
and attributes but no box, so that the graph's relations, not coordinates, decide the answers.

Families, each with a closed answer vocabulary (`ANSWERS`):
- `attribute` (0-cells): "What colour is the red cup?" style, about one uniquely described object.
- `path` (1-cells): follow one or two relations from a uniquely described object; the answer is an object's name.
- `loop` (2-cells): "Is the cup that is to the left of the vase on the same table as the vase?" The cup is on a
  table and the vase is on a table, always: the answer is yes exactly when the triangle cup - vase - table closes,
  that is when both `on` edges reach the same table node. No "no" is decided by a missing relation, and a solver
  that checks each relation on its own (and may not compare the furniture's identity) cannot beat chance.
  Yes and no are balanced within the family.

Every question records its evidence, the minimal cells its answer depends on, as graph node and edge ids
(`sample.meta["evidence"] = {"nodes": [...], "edges": [...]}`): the object for `attribute`; the path's nodes and
edges for `path`; for `loop` the two objects, their furniture and the three edges (a triangle when the answer is
yes). The scenes are `scenes_v2`'s; the reference solvers `solvers`'.
"""

from __future__ import annotations

import random
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Any

from toporag_lib.data.gqa import split_image_ids
from toporag_lib.data.testbed.scenes_v2 import make_testbed_scene
from toporag_lib.data.testbed.vocabulary import (
    ANSWERS,
    FAMILIES,
    NEEDS,
    QUERIES,
    SPATIAL,
)

VERSION = 2
RELATIONS = ("on", *SPATIAL)
FIRST_IMAGE_ID = 5_000_000
MAX_SCENE_TRIES = 200


class SceneIndex:
    """A scene's objects, their relations both ways, graph node and edge ids, and unique descriptions."""

    def __init__(self, scene: dict) -> None:
        self.objects: dict[str, dict] = scene["objects"]
        self.node = {oid: i for i, oid in enumerate(self.objects)}
        self.edge: dict[tuple[str, str, str], int] = {}
        self.outgoing: dict[tuple[str, str], list[str]] = defaultdict(list)
        self.incoming: dict[tuple[str, str], list[str]] = defaultdict(list)
        for oid, obj in self.objects.items():  # edge ids in the order scene_graph_to_graph writes them
            for rel in obj["relations"]:
                self.edge[(oid, rel["name"], rel["object"])] = len(self.edge)
                self.outgoing[(oid, rel["name"])].append(rel["object"])
                self.incoming[(rel["object"], rel["name"])].append(oid)

    def name(self, oid: str) -> str:
        return self.objects[oid]["name"]

    def anchor(self, oid: str, avoid: str | None = None) -> dict | None:
        """The simplest unique description of an object (its name, or an attribute and its name) not using the
        attribute `avoid`; None when there is none."""
        same = [o for o in self.objects.values() if o["name"] == self.name(oid)]
        if len(same) == 1:
            return {"object": oid, "name": self.name(oid), "attribute": None}
        for attribute in self.objects[oid]["attributes"][:2]:
            if attribute != avoid and sum(attribute in o["attributes"] for o in same) == 1:
                return {"object": oid, "name": self.name(oid), "attribute": attribute}
        return None

    def step(self, oid: str, relation: str, direction: str) -> str | None:
        """The one object reached along `relation` ("out": oid has it; "in": it has it to oid), or None."""
        found = (self.outgoing if direction == "out" else self.incoming)[(oid, relation)]
        return found[0] if len(found) == 1 else None

    def evidence(self, nodes: list[str], edges: list[tuple[str, str, str]]) -> dict[str, list[int]]:
        return {"nodes": sorted({self.node[o] for o in nodes}), "edges": sorted(self.edge[e] for e in edges)}


@dataclass
class Question:
    family: str
    template: str
    answer: str
    text: str
    evidence: dict[str, list[int]]
    structure: dict[str, Any] = field(default_factory=dict)  # what the reference solvers read
    answer_object: str | None = None  # the object whose text holds the answer (none for yes/no)


def _described(anchor: dict) -> str:
    return f"{anchor['attribute']} {anchor['name']}" if anchor["attribute"] else anchor["name"]


def attribute_questions(ix: SceneIndex) -> list[Question]:
    out = []
    for oid, obj in ix.objects.items():
        for query, position in QUERIES.items():
            anchor = ix.anchor(oid, avoid=obj["attributes"][position])
            if anchor is not None:
                text = f"What {query} is the {_described(anchor)}?"
                out.append(Question("attribute", f"attribute_{query}", obj["attributes"][position], text,
                                    ix.evidence([oid], []), {"anchor": ix.node[oid], "query": query}, oid))
    return out


def path_questions(ix: SceneIndex) -> list[Question]:
    out = []
    for x in ix.objects:
        anchor = ix.anchor(x)
        if anchor is None:
            continue
        for rel in RELATIONS:
            for direction in ("out", "in"):
                y = ix.step(x, rel, direction)
                if y is None:
                    continue
                e1 = (x, rel, y) if direction == "out" else (y, rel, x)
                hops = [{"relation": rel, "direction": direction}]
                text = (f"What is the {_described(anchor)} {rel}?" if direction == "out"
                        else f"What is {rel} the {_described(anchor)}?")
                out.append(Question("path", f"path_{direction}", ix.name(y), text, ix.evidence([x, y], [e1]),
                                    {"anchor": ix.node[x], "hops": hops}, y))
                for rel2 in SPATIAL:
                    z = ix.step(y, rel2, "in")
                    if z is None or z == x:
                        continue
                    text = (f"What is {rel2} the object that the {_described(anchor)} is {rel}?" if direction == "out"
                            else f"What is {rel2} the object that is {rel} the {_described(anchor)}?")
                    out.append(Question("path", f"path_{direction}_in", ix.name(z), text,
                                        ix.evidence([x, y, z], [e1, (z, rel2, y)]),
                                        {"anchor": ix.node[x], "hops": hops + [{"relation": rel2, "direction": "in"}]},
                                        z))
    return out


def loop_questions(ix: SceneIndex) -> list[Question]:
    """"Is the N that is r the V on the same S as the V?": N and V both stand on an S, so only the identity of the
    two S nodes decides (see the module docstring)."""
    out = []
    for v in ix.objects:
        anchor, sv = ix.anchor(v), ix.step(v, "on", "out")
        if anchor is None or sv is None:
            continue
        for rel in SPATIAL:
            related = ix.incoming[(v, rel)]
            for x in related:
                same_name = [o for o in related if ix.name(o) == ix.name(x)]
                sx = ix.step(x, "on", "out")
                if len(same_name) != 1 or sx is None or ix.name(sx) != ix.name(sv):
                    continue
                answer = "yes" if sx == sv else "no"
                surface = ix.name(sv)
                for template, text in (
                        ("loop_same", f"Is the {ix.name(x)} that is {rel} the {_described(anchor)} on the same "
                                      f"{surface} as the {_described(anchor)}?"),
                        ("loop_same_reversed", f"Is the {_described(anchor)} on the same {surface} as the "
                                               f"{ix.name(x)} that is {rel} it?")):
                    out.append(Question("loop", template, answer, text,
                                        ix.evidence([x, v, sx, sv], [(x, rel, v), (x, "on", sx), (v, "on", sv)]),
                                        {"anchor": ix.node[v], "relation": rel, "name": ix.name(x),
                                         "surface": surface}))
    return out


CANDIDATES = {"attribute": attribute_questions, "path": path_questions, "loop": loop_questions}


def _choose(pool: list[Question], tally: Counter, rng: random.Random) -> Question:
    """A question of the least used (template, answer), so yes and no stay balanced and templates spread."""
    rng.shuffle(pool)
    best = min(pool, key=lambda q: (tally[q.answer], tally[q.template]))
    tally[best.answer] += 1
    tally[best.template] += 1
    pool.remove(best)
    return best


def generate_testbed(num_images: int, questions_per_image: int = 3, seed: int = 0) -> tuple[dict, dict]:
    """(scene graphs, questions) in GQA's JSON formats; families round robin. Answers are balanced within each
    split (the image split is known in advance: G-Retriever's split of the image ids), so that yes and no are
    equally frequent among the test split's loop questions too."""
    rng = random.Random(seed)
    image_ids = [str(FIRST_IMAGE_ID + i) for i in range(num_images)]
    split_of = split_image_ids(image_ids)
    tallies = {(split, family): Counter() for split in ("train", "val", "test") for family in FAMILIES}
    scenes, questions = {}, {}
    for i, image_id in enumerate(image_ids):
        split = split_of[image_id]
        need = Counter(FAMILIES[(i * questions_per_image + j) % len(FAMILIES)] for j in range(questions_per_image))
        for _ in range(MAX_SCENE_TRIES):
            scene = make_testbed_scene(rng, image_id)
            ix = SceneIndex(scene)
            pools = {family: CANDIDATES[family](ix) for family in need}
            if all(len(pools[f]) >= n for f, n in need.items()) and (
                    "loop" not in need or _offers(pools["loop"], tallies[(split, "loop")])):
                break
        else:
            raise ValueError(f"no testbed scene with {dict(need)} questions in {MAX_SCENE_TRIES} tries")
        scenes[image_id] = scene
        for family, count in need.items():
            for _ in range(count):
                q = _choose(pools[family], tallies[(split, family)], rng)
                questions[f"{len(questions):08d}"] = {
                    "imageId": image_id, "question": q.text, "answer": q.answer, "fullAnswer": q.answer,
                    "types": {"detailed": q.template},
                    "annotations": {"answer": {"0": q.answer_object}} if q.answer_object else {}, "family": family,
                    "needs": NEEDS[family], "template": q.template, "evidence": q.evidence,
                    "structure": q.structure, "version": VERSION}
    return scenes, questions


def _offers(pool: list[Question], tally: Counter) -> bool:
    """The scene can give the loop family the answer it lacks (yes when yes trails, no when no trails)."""
    lacking = [a for a in ("yes", "no") if tally[a] <= min(tally["yes"], tally["no"])]
    return any(q.answer in lacking for q in pool)
