"""Testbed version 1, the scenes: furniture and objects with boxes, attributes and position-consistent relations,
as one GQA-format scene graph per image (`make_scene`). Its questions are `questions_v1`'s.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from toporag_lib.data.testbed.vocabulary import COLOURS, ITEMS, MATERIALS, SPATIAL, SURFACES

WIDTH, HEIGHT = 640, 480
MARGIN = 10  # pixels: closer boxes get no spatial relation
P_RELATED_SAME_SURFACE = 0.6  # chance that two objects on the same furniture get a spatial relation
P_RELATED_OTHER = 0.2
PLACEMENT = {"on": 0.65, "under": 0.1, "floor": 0.25}


@dataclass
class _Obj:
    name: str
    box: tuple[int, int, int, int]
    attributes: list[str]
    support: tuple[str, int] | None = None  # ("on" | "under", index of the furniture)


def _furniture(rng: random.Random, slot: int, slot_width: int) -> _Obj:
    w, h = rng.randint(slot_width * 6 // 10, slot_width * 9 // 10), rng.randint(60, 110)
    x, y = slot * slot_width + rng.randint(0, slot_width - w), rng.randint(220, 300)
    return _Obj(rng.choice(SURFACES), (x, y, w, h), _attributes(rng, w >= 200))


def _attributes(rng: random.Random, large: bool) -> list[str]:
    return [rng.choice(COLOURS), rng.choice(MATERIALS), "large" if large else "small"]


def _item(rng: random.Random, furniture: list[_Obj]) -> _Obj:
    place = rng.choices(list(PLACEMENT), weights=list(PLACEMENT.values()))[0]
    w = rng.randint(20, 70)
    if place == "floor":
        h = rng.randint(20, 80)
        box = (rng.randint(0, WIDTH - w), rng.randint(400, HEIGHT) - h, w, h)
        return _Obj(rng.choice(ITEMS), box, _attributes(rng, max(w, h) >= 50))
    s = rng.randrange(len(furniture))
    sx, sy, sw, sh = furniture[s].box
    h = rng.randint(20, 80) if place == "on" else rng.randint(15, sh - 10)
    y = sy - h if place == "on" else sy + sh - h
    return _Obj(rng.choice(ITEMS), (rng.randint(sx, sx + sw - w), y, w, h), _attributes(rng, max(w, h) >= 50),
                (place, s))


def _spatial(rng: random.Random, a: _Obj, b: _Obj) -> str | None:
    """A relation from a to b consistent with their boxes (centres left/right, bottoms front/behind), or None."""
    dx = (b.box[0] + b.box[2] / 2) - (a.box[0] + a.box[2] / 2)
    dy = (a.box[1] + a.box[3]) - (b.box[1] + b.box[3])
    options = []
    if abs(dx) >= MARGIN:
        options.append("to the left of" if dx > 0 else "to the right of")
    if abs(dy) >= MARGIN:
        options.append("in front of" if dy > 0 else "behind")
    return rng.choice(options) if options else None


def _relations(rng: random.Random, objs: list[_Obj]) -> list[list[tuple[str, int]]]:
    """Per object, its outgoing (relation, target index): support relations, then sampled spatial ones."""
    out: list[list[tuple[str, int]]] = [[] for _ in objs]
    for i, obj in enumerate(objs):
        if obj.support is not None:
            out[i].append((obj.support[0], obj.support[1]))
    for i in range(len(objs)):
        for j in range(i + 1, len(objs)):
            a, b = objs[i], objs[j]
            if b.support is not None and b.support[1] == i:  # b stands on / under furniture i
                continue
            same = a.support is not None and a.support == b.support and a.support[0] == "on"
            if rng.random() >= (P_RELATED_SAME_SURFACE if same else P_RELATED_OTHER):
                continue
            rel = _spatial(rng, a, b)
            if rel is not None:
                out[i].append((rel, j))
                out[j].append((SPATIAL[rel], i))
    return out


def make_scene(rng: random.Random, image_id: str, min_objects: int = 5, max_objects: int = 15) -> dict:
    """One scene graph in GQA's format; object ids are `{image_id}{k:02d}`."""
    n_objects = rng.randint(min_objects, max_objects)
    n_furniture = min(rng.randint(1, 3), n_objects - 2)
    slot_width = WIDTH // n_furniture
    objs = [_furniture(rng, s, slot_width) for s in range(n_furniture)]
    objs += [_item(rng, objs[:n_furniture]) for _ in range(n_objects - n_furniture)]
    ids = [f"{image_id}{k:02d}" for k in range(n_objects)]
    objects = {}
    for oid, obj, rels in zip(ids, objs, _relations(rng, objs)):
        x, y, w, h = obj.box
        objects[oid] = {"name": obj.name, "x": x, "y": y, "w": w, "h": h, "attributes": obj.attributes,
                        "relations": [{"name": name, "object": ids[t]} for name, t in rels]}
    return {"width": WIDTH, "height": HEIGHT, "objects": objects}
