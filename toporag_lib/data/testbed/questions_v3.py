"""Testbed version 3: loop questions as counterfactual twins, so that nothing but the loop decides them.

Images come in pairs. The second scene of a pair is the first with one `on` edge moved: the loop question's object
N stands on another piece of furniture of the same kind. Both scenes are asked the same loop question ("Is the N that
is r the V on the same S as the V?"), and their answers are opposite: yes where N's and V's `on` edges reach one
furniture node (the triangle N - V - S closes), no where they reach two. Pieces of furniture of one kind have the
same attributes, so their node texts are identical: the twins have the same node texts, the same multiset of
triples (as texts) and the same counts of every kind; only which node an edge reaches tells them apart. Any rule on
texts, names, templates or counts gives both twins the same answer, so it scores 0.5 on the loop family and 0 in
twin accuracy (both twins right).

A pair is one split's (G-Retriever's split of the pairs, `image_splits`); each template holds as many yes as no
questions in every split (each pair gives one of each), and which scene of a pair is the moved one is random. Each
image also gets one attribute and one path question from its own scene (chosen as in version 2), so the three
families stay equal in size. Loop questions carry `pair` (the twins' shared id). The moved edge keeps N's position,
so N's spatial relations stay as they were; the boxes are not in the node texts.
"""

from __future__ import annotations

import copy
import random
from collections import Counter

from toporag_lib.data.gqa import split_image_ids
from toporag_lib.data.testbed.questions_v2 import (
    CANDIDATES,
    MAX_SCENE_TRIES,
    NEEDS,
    Question,
    SceneIndex,
    _choose,
)
from toporag_lib.data.testbed.scenes_v2 import make_testbed_scene

VERSION = 3
FIRST_IMAGE_ID = 6_000_000
QUESTIONS_PER_IMAGE = 3  # one loop, one attribute and one path question
SPLITS = ("train", "val", "test")


def pair_images(image_ids: list[str]) -> list[tuple[str, str]]:
    return list(zip(image_ids[::2], image_ids[1::2]))


def image_splits(image_ids: list[str]) -> dict[str, str]:
    """G-Retriever's 60/20/20 split drawn over the pairs (by their first image), each image in its pair's split."""
    pairs = pair_images(image_ids)
    of_pair = split_image_ids([first for first, _ in pairs])
    return {image: of_pair[first] for first, second in pairs for image in (first, second)}


def same_kind_alike(scene: dict) -> dict:
    """The scene with every piece of furniture of a kind given the first one's attributes (identical node texts)."""
    first: dict[str, list[str]] = {}
    for obj in scene["objects"].values():
        if obj["attributes"][-1] == "large":  # furniture (`scenes_v2`: objects are "small")
            obj["attributes"] = list(first.setdefault(obj["name"], obj["attributes"]))
    return scene


def renamed(scene: dict, old_image: str, new_image: str) -> dict:
    """A deep copy of the scene whose object ids carry `new_image` in place of `old_image`."""
    def new_id(oid: str) -> str:
        return new_image + oid[len(old_image):]

    out = copy.deepcopy(scene)
    out["objects"] = {new_id(oid): {**obj, "relations": [{**r, "object": new_id(r["object"])} for r in obj["relations"]]}
                      for oid, obj in out["objects"].items()}
    return out


def move_on_edge(scene: dict, obj: str, target: str) -> dict:
    """A copy of the scene in which `obj`'s `on` relation reaches `target` (its place in the relation list kept)."""
    out = copy.deepcopy(scene)
    out["objects"][obj]["relations"] = [{**r, "object": target} if r["name"] == "on" else r
                                        for r in out["objects"][obj]["relations"]]
    return out


def twin_of(question: Question, ix: SceneIndex, twin_ix: SceneIndex) -> Question | None:
    """The same loop question over the twin scene (same template, anchor, relation and object name), or None."""
    same = [q for q in CANDIDATES["loop"](twin_ix)
            if (q.template, q.structure) == (question.template, question.structure) and q.answer != question.answer]
    return same[0] if len(same) == 1 else None


def _twins(rng: random.Random, image_id: str, tally: Counter) -> tuple[dict, Question, dict, Question] | None:
    """A scene, one of its loop questions, the scene with that question's `on` edge moved, and its twin; None when
    the scene has no loop question whose object can move to another piece of furniture of its kind."""
    scene = same_kind_alike(make_testbed_scene(rng, image_id))
    ix = SceneIndex(scene)
    pool = CANDIDATES["loop"](ix)
    if not pool:
        return None
    question = _choose(pool, Counter(tally), rng)  # counted by the caller once the twins exist
    names = {i: oid for oid, i in ix.node.items()}
    x = [o for o in ix.incoming[(names[question.structure["anchor"]], question.structure["relation"])]
         if ix.name(o) == question.structure["name"]][0]
    sx, sv = ix.step(x, "on", "out"), ix.step(names[question.structure["anchor"]], "on", "out")
    if question.answer == "no":
        target = sv
    else:
        others = [o for o in ix.objects if o != sx and ix.name(o) == ix.name(sx)
                  and ix.objects[o]["attributes"][-1] == "large"]  # furniture of the same kind
        if not others:
            return None
        target = rng.choice(others)
    moved = move_on_edge(scene, x, target)
    twin = twin_of(question, ix, SceneIndex(moved))
    return None if twin is None else (scene, question, moved, twin)


def _record(image_id: str, q: Question, family: str, pair: str | None) -> dict:
    return {"imageId": image_id, "question": q.text, "answer": q.answer, "fullAnswer": q.answer,
            "types": {"detailed": q.template},
            "annotations": {"answer": {"0": q.answer_object}} if q.answer_object else {}, "family": family,
            "needs": NEEDS[family], "template": q.template, "evidence": q.evidence, "structure": q.structure,
            "version": VERSION, **({"pair": pair} if pair is not None else {})}


def generate_twin_testbed(num_images: int, questions_per_image: int = QUESTIONS_PER_IMAGE,
                          seed: int = 0) -> tuple[dict, dict]:
    """(scene graphs, questions) in GQA's JSON formats: `num_images // 2` twin pairs (see the module docstring)."""
    if questions_per_image != QUESTIONS_PER_IMAGE or num_images < 2 or num_images % 2:
        raise ValueError(f"synthetic_scenes version 3: an even num_images >= 2 and questions_per_image = "
                         f"{QUESTIONS_PER_IMAGE} (one loop, attribute and path question per image), got "
                         f"num_images={num_images}, questions_per_image={questions_per_image}")
    rng = random.Random(seed)
    image_ids = [str(FIRST_IMAGE_ID + i) for i in range(num_images)]
    split_of = image_splits(image_ids)
    tallies = {(split, family): Counter() for split in SPLITS for family in CANDIDATES}
    scenes, questions = {}, {}
    for k, (first, second) in enumerate(pair_images(image_ids)):
        split = split_of[first]
        for _ in range(MAX_SCENE_TRIES):
            made = _twins(rng, first, tallies[(split, "loop")])
            if made is not None:
                break
        else:
            raise ValueError(f"no twin scenes for images {first}, {second} in {MAX_SCENE_TRIES} tries")
        scene, question, moved, twin = made
        tallies[(split, "loop")].update([question.answer, question.template])
        order = [(scene, question), (moved, twin)]
        rng.shuffle(order)  # which image of the pair holds the moved scene says nothing
        for image_id, (graph, loop) in zip((first, second), order):
            graph = renamed(graph, first, image_id)
            ix = SceneIndex(graph)
            scenes[image_id] = graph
            asked = [("loop", loop)]
            for family in ("attribute", "path"):
                pool = CANDIDATES[family](ix)
                if pool:
                    asked.append((family, _choose(pool, tallies[(split, family)], rng)))
            for family, q in asked:
                questions[f"{len(questions):08d}"] = _record(image_id, q, family, f"{k:06d}" if family == "loop"
                                                             else None)
    return scenes, questions
