"""Testbed version 1, the questions (the scenes are `layout_v1`'s); version 2, the default, is `questions_v2`.

Each image holds 1-3 pieces of furniture (table, shelf, desk, counter) and small objects standing on them,
under them or on the floor: 5-15 objects, with attributes `[colour, material, size]` and integer boxes. Relations
are `on` / `under` (object -> furniture) and a sparse, position-consistent subset of `to the left of` /
`to the right of` (box centres) and `in front of` / `behind` (box bottoms), always written in both directions.
Objects on the same furniture that are related close triangles, so the graphs have cycles.

Questions come in three families, each tagged with the cells of a cell complex it needs (`needs`):

- `attribute` (0-cell): "What colour is the lamp?" -- one node's text holds the answer.
- `path` (1-cell): follow one or two relations from the named object, e.g. "What is under the object that the
  red cup is on?" -- the answer is reached along edges.
- `loop` (2-cell): a triangle object - anchor - furniture. "Which object is both to the left of the vase and on
  the same table as it?" (several objects are to the left of the vase and several are on its table; exactly
  one is both) and "Is the object that is behind the book on the same shelf as it?" (yes/no: does the loop close).

A question is generated only when every step is unique (one object matches the description, one object along
each relation). Answers are defined by the scene graph's relations, as GQA's are. Families are assigned round
robin (equal counts, within 1); within a family the least used template and then the least used answer is
picked, which keeps yes/no near 50/50 and spreads the open answers.

Each question record is GQA's (`imageId, question, answer, fullAnswer, types, annotations`) plus `family`,
`needs`, `template`, `anchor` ({object, name, attribute}: the unique description used), `hops` (path family:
[{relation, direction}] where "in" means the next object has the relation *to* the current one), `relation` and
`surface` (loop family) and `objects` (the ids of every object the answer depends on).
"""

from __future__ import annotations

import random
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Any

from toporag_lib.data.testbed.layout_v1 import make_scene
from toporag_lib.data.testbed.vocabulary import FAMILIES, NEEDS, QUERIES, SPATIAL, YES_NO

RELATIONS = ("on", "under", *SPATIAL)
FIRST_IMAGE_ID = 4_000_000
MAX_SCENE_TRIES = 200
STRICT_TRIES = 50


def _one(ids: list[str]) -> str | None:
    """The only element, or None when there are none or several."""
    return ids[0] if len(ids) == 1 else None


class _Index:
    """A scene graph's relations by (object, relation), and the unique descriptions of its objects."""

    def __init__(self, scene: dict) -> None:
        self.objects: dict[str, dict] = scene["objects"]
        self.incoming: dict[tuple[str, str], list[str]] = defaultdict(list)  # (dst, rel) -> sources
        self.outgoing: dict[tuple[str, str], list[str]] = defaultdict(list)  # (src, rel) -> targets
        for oid, obj in self.objects.items():
            for rel in obj["relations"]:
                self.incoming[(rel["object"], rel["name"])].append(oid)
                self.outgoing[(oid, rel["name"])].append(rel["object"])
        names = Counter(obj["name"] for obj in self.objects.values())
        self.descriptions = {oid: self._descriptions(oid, names) for oid in self.objects}

    def _descriptions(self, oid: str, names: Counter) -> list[str | None]:
        """Attributes that single the object out with its name (None: the name alone), simplest first."""
        name = self.objects[oid]["name"]
        if names[name] == 1:
            return [None]
        same = [o for o in self.objects.values() if o["name"] == name]
        return [a for a in self.objects[oid]["attributes"][:2] if sum(a in o["attributes"] for o in same) == 1]

    def name(self, oid: str) -> str:
        return self.objects[oid]["name"]

    def anchor(self, oid: str, avoid: str | None = None) -> dict | None:
        """The object's simplest unique description not using the attribute `avoid`, or None."""
        options = [a for a in self.descriptions[oid] if a is None or a != avoid]
        return {"object": oid, "name": self.name(oid), "attribute": options[0]} if options else None

    def surface(self, oid: str) -> str | None:
        """The furniture the object stands on, if any."""
        return _one(self.outgoing[(oid, "on")])


@dataclass
class _Candidate:
    family: str
    template: str
    answer: str
    anchor: dict
    objects: list[str]  # every object the answer depends on
    answer_object: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)  # query / hops / relation, surface


def _attribute_candidates(ix: _Index) -> list[_Candidate]:
    out = []
    for oid, obj in ix.objects.items():
        for query, pos in QUERIES.items():
            value = obj["attributes"][pos]
            anchor = ix.anchor(oid, avoid=value)
            if anchor is not None:
                out.append(_Candidate("attribute", f"attribute_{query}", value, anchor, [oid], oid,
                                      {"query": query}))
    return out


def _step(ix: _Index, oid: str, relation: str, direction: str) -> str | None:
    """The one object reached from oid along relation ("in": it has the relation to oid; "out": oid has it)."""
    return _one((ix.incoming if direction == "in" else ix.outgoing)[(oid, relation)])


def _path_candidates(ix: _Index) -> list[_Candidate]:
    out = []
    for x in ix.objects:
        anchor = ix.anchor(x)
        if anchor is None:
            continue
        for rel in RELATIONS:
            for direction in ("in", "out"):
                y = _step(ix, x, rel, direction)
                if y is None:
                    continue
                hop = {"relation": rel, "direction": direction}
                out.append(_Candidate("path", f"path_{direction}", ix.name(y), anchor, [x, y], y, {"hops": [hop]}))
                for rel2 in RELATIONS:
                    z = _step(ix, y, rel2, "in")
                    if z is not None and z != x:
                        hops = [hop, {"relation": rel2, "direction": "in"}]
                        out.append(_Candidate("path", f"path_{direction}_in", ix.name(z), anchor, [x, y, z], z,
                                              {"hops": hops}))
    return out


def _loop_candidates(ix: _Index) -> list[_Candidate]:
    out = []
    for x in ix.objects:
        anchor, s = ix.anchor(x), ix.surface(x)
        if anchor is None or s is None:
            continue
        neighbours = [o for o in ix.incoming[(s, "on")] if o != x]
        for rel in SPATIAL:
            related = ix.incoming[(x, rel)]
            extra = {"relation": rel, "surface": s}
            both = [o for o in related if o in neighbours]
            if len(both) == 1 and len(related) >= 2 and len(neighbours) >= 2:
                y = both[0]
                out.append(_Candidate("loop", "loop_which", ix.name(y), anchor, [x, s, y], y, extra))
            y = _one(related)
            if y is not None:
                answer = "yes" if ix.surface(y) == s else "no"
                out.append(_Candidate("loop", "loop_closes", answer, anchor, [x, y, s], None, extra))
    return out


CANDIDATES = {"attribute": _attribute_candidates, "path": _path_candidates, "loop": _loop_candidates}
TEMPLATES = {"attribute": tuple(f"attribute_{q}" for q in QUERIES),
             "path": ("path_in", "path_out", "path_in_in", "path_out_in"), "loop": ("loop_which", "loop_closes")}


Part = str | tuple[str, str]  # plain words, or (words, object id) to annotate


def _compose(parts: list[Part], end: str) -> tuple[str, dict[str, str]]:
    """Join parts into a sentence and GQA's annotation of it: token span ("3" or "3:5") -> object id."""
    words: list[str] = []
    spans: dict[str, str] = {}
    for part in parts:
        text, oid = (part, None) if isinstance(part, str) else part
        new = text.split()
        if oid is not None:
            spans[str(len(words)) if len(new) == 1 else f"{len(words)}:{len(words) + len(new)}"] = oid
        words += new
    return " ".join(words) + end, spans


def _sentences(c: _Candidate, ix: _Index) -> tuple[list[Part], list[Part]]:
    """The question's and the full answer's parts for a candidate."""
    a = c.anchor
    x = (f"{a['attribute']} {a['name']}" if a["attribute"] else a["name"], a["object"])
    named = [(ix.name(o), o) for o in c.objects]
    if c.family == "attribute":
        asked = "What colour is the" if c.extra["query"] == "colour" else "What material is the"
        return [asked, x], ["The", x, f"is {c.answer}"]
    if c.family == "path":
        r = [h["relation"] for h in c.extra["hops"]]
        if len(r) == 2:
            asked = ([f"What is {r[1]} the object that is {r[0]} the", x] if c.template == "path_in_in"
                     else [f"What is {r[1]} the object that the", x, f"is {r[0]}"])
            return asked, ["The", named[2], f"is {r[1]} the", named[1]]
        if c.template == "path_in":
            return [f"What is {r[0]} the", x], ["The", named[1], f"is {r[0]} the", x]
        return ["What is the", x, r[0]], ["The", x, f"is {r[0]} the", named[1]]
    r, s = c.extra["relation"], (ix.name(c.extra["surface"]), c.extra["surface"])
    if c.template == "loop_which":
        return ([f"Which object is both {r} the", x, "and on the same", s, "as it"],
                ["The", named[2], f"is {r} the", x, "and on the same", s])
    verdict = "Yes, the" if c.answer == "yes" else "No, the"
    return ([f"Is the object that is {r} the", x, "on the same", s, "as it"],
            [verdict, named[1], "is on the same" if c.answer == "yes" else "is not on the same", s, "as the", x])


def _record(c: _Candidate, image_id: str, ix: _Index) -> dict:
    """The candidate as a GQA question record (plus family, needs, template and its structure)."""
    question_parts, answer_parts = _sentences(c, ix)
    question, question_spans = _compose(question_parts, "?")
    full_answer, answer_spans = _compose(answer_parts, ".")
    binary = c.answer in YES_NO
    return {"imageId": image_id, "question": question, "answer": c.answer, "fullAnswer": full_answer,
            "types": {"structural": "verify" if binary else "query",
                      "semantic": "attr" if c.family == "attribute" else "rel", "detailed": c.template},
            "annotations": {"question": question_spans, "fullAnswer": answer_spans,
                            "answer": {"0": c.answer_object} if c.answer_object else {}},
            "family": c.family, "needs": NEEDS[c.family], "template": c.template, "anchor": c.anchor,
            "objects": c.objects, **c.extra}


@dataclass
class _Tally:
    """How often each template and each answer has been used within one family."""

    templates: Counter = field(default_factory=Counter)
    answers: Counter = field(default_factory=Counter)

    def lagging(self, answer: str) -> bool:
        """True for a yes/no answer already ahead of its opposite."""
        return answer in YES_NO and self.answers[answer] > self.answers[YES_NO[answer]]


def _choose(pool: list[_Candidate], tally: _Tally, rng: random.Random) -> _Candidate:
    """The least used template's least used answer; a yes/no that would widen the gap yields to another template."""
    rng.shuffle(pool)
    templates = sorted(dict.fromkeys(c.template for c in pool), key=lambda t: tally.templates[t])
    for k, template in enumerate(templates):
        best = min((c for c in pool if c.template == template), key=lambda c: tally.answers[c.answer])
        if not tally.lagging(best.answer) or k == len(templates) - 1:
            break
    tally.templates[best.template] += 1
    tally.answers[best.answer] += 1
    pool.remove(best)
    return best


def _offers_lagging_template(pool: list[_Candidate], family: str, tally: _Tally) -> bool:
    """True if the pool has a candidate of one of the family's least used templates."""
    fewest = min(tally.templates[t] for t in TEMPLATES[family])
    return any(tally.templates[c.template] == fewest for c in pool)


def _scene_with_pools(rng: random.Random, image_id: str, need: Counter, tallies: dict[str, _Tally],
                      min_objects: int, max_objects: int) -> tuple[dict, _Index, dict[str, list[_Candidate]]]:
    """A fresh scene with enough candidate questions of every needed family.

    For the first STRICT_TRIES scenes, each family must also offer its least used template (this keeps rare
    templates, such as loop_which, as frequent as the others); ValueError after MAX_SCENE_TRIES.
    """
    for attempt in range(MAX_SCENE_TRIES):
        scene = make_scene(rng, image_id, min_objects, max_objects)
        ix = _Index(scene)
        pools = {family: CANDIDATES[family](ix) for family in need}
        if all(len(pools[f]) >= n and (attempt >= STRICT_TRIES or _offers_lagging_template(pools[f], f, tallies[f]))
               for f, n in need.items()):
            return scene, ix, pools
    raise ValueError(f"no scene with {dict(need)} questions in {MAX_SCENE_TRIES} tries: ask fewer per image")


def generate_scenes(num_images: int, questions_per_image: int = 3, seed: int = 0, min_objects: int = 5,
                    max_objects: int = 15) -> tuple[dict, dict]:
    """(scene graphs, questions) in GQA's JSON formats; families round robin over all questions."""
    if not 3 <= min_objects <= max_objects <= 99:
        raise ValueError(f"need 3 <= min_objects <= max_objects <= 99, got {min_objects}, {max_objects}")
    rng = random.Random(seed)
    tallies = {family: _Tally() for family in FAMILIES}
    scenes: dict[str, dict] = {}
    questions: dict[str, dict] = {}
    for i in range(num_images):
        image_id = str(FIRST_IMAGE_ID + i)
        families = [FAMILIES[(i * questions_per_image + j) % len(FAMILIES)] for j in range(questions_per_image)]
        scene, ix, pools = _scene_with_pools(rng, image_id, Counter(families), tallies, min_objects,
                                              max_objects)
        scenes[image_id] = scene
        for family in families:
            questions[f"{len(questions):08d}"] = _record(_choose(pools[family], tallies[family], rng), image_id, ix)
    return scenes, questions
