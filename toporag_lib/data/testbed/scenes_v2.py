"""Testbed version 2, the scenes: two or three pieces of furniture of one kind (sometimes one of another), small
objects on them or on the floor whose names repeat across the furniture, and position-consistent spatial relations
on the same furniture and across. Node texts carry name and attributes but no box. Its questions are
`questions_v2`'s.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from toporag_lib.data.testbed.vocabulary import COLOURS, ITEMS, MATERIALS, SPATIAL, SURFACES

P_SPATIAL_SAME = 0.5  # chance that two objects on the same furniture are spatially related
P_SPATIAL_ACROSS = 0.35  # the same for objects on different furniture (these make the "no" loops)


@dataclass
class _Thing:
    name: str
    attributes: list[str]
    x: float
    y: float
    on: int | None = None  # index of the furniture it stands on


def make_testbed_scene(rng: random.Random, image_id: str) -> dict:
    """One scene graph in GQA's format (boxes are unit squares at the objects' positions)."""
    kind = rng.choice(SURFACES)
    furniture = [kind] * rng.choice((2, 2, 3))
    if rng.random() < 0.5:
        furniture.append(rng.choice([s for s in SURFACES if s != kind]))
    things = [_Thing(name, [rng.choice(COLOURS), rng.choice(MATERIALS), "large"], 100.0 * k, 0.0)
              for k, name in enumerate(furniture)]
    names = rng.sample(ITEMS, rng.randint(3, 5))  # few names: they repeat across the furniture
    for _ in range(rng.randint(6, 12)):
        on = rng.randrange(len(furniture)) if rng.random() < 0.9 else None
        x = (100.0 * on if on is not None else 100.0 * rng.random() * len(furniture)) + rng.uniform(-40, 40)
        things.append(_Thing(rng.choice(names), [rng.choice(COLOURS), rng.choice(MATERIALS), "small"], x,
                             rng.uniform(0, 50), on))
    relations: list[list[tuple[str, int]]] = [[] for _ in things]
    for i, thing in enumerate(things):
        if thing.on is not None:
            relations[i].append(("on", thing.on))
    items = range(len(furniture), len(things))
    for i in items:
        for j in (j for j in items if j > i):
            a, b = things[i], things[j]
            same = a.on is not None and a.on == b.on
            if rng.random() >= (P_SPATIAL_SAME if same else P_SPATIAL_ACROSS):
                continue
            rel = _spatial(rng, a, b)
            if rel is not None:
                relations[i].append((rel, j))
                relations[j].append((SPATIAL[rel], i))
    ids = [f"{image_id}{k:02d}" for k in range(len(things))]
    objects = {oid: {"name": t.name, "x": int(t.x), "y": int(t.y), "w": 1, "h": 1, "attributes": t.attributes,
                     "relations": [{"name": name, "object": ids[k]} for name, k in rels]}
               for oid, t, rels in zip(ids, things, relations)}
    return {"width": 100 * len(furniture), "height": 100, "objects": objects}


def _spatial(rng: random.Random, a: _Thing, b: _Thing) -> str | None:
    """A relation from a to b consistent with their positions, or None when they are too close to tell."""
    options = []
    if abs(b.x - a.x) >= 5:
        options.append("to the left of" if b.x > a.x else "to the right of")
    if abs(b.y - a.y) >= 5:
        options.append("in front of" if a.y > b.y else "behind")
    return rng.choice(options) if options else None
