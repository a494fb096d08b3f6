"""Synthetic scenes, version 1: every answer re-derived by an independent checker from the scene-graph JSON alone."""

import json
from collections import Counter

import pytest

from toporag_lib.data.gqa import load_scenegraphs
from toporag_lib.data.testbed.loader import (
    generate_scenes,
    load_synthetic_scenes,
    write_scenes,
)

# The checker's own vocabulary (deliberately not imported from the generator).
COLOURS = {"red", "blue", "green", "white", "black", "yellow", "brown", "gray"}
MATERIALS = {"wooden", "metal", "glass", "plastic", "ceramic"}
SPATIAL = {"to the left of", "to the right of", "in front of", "behind"}
NEEDS = {"attribute": "0-cell", "path": "1-cell", "loop": "2-cell"}


@pytest.fixture(scope="module")
def generated():
    return generate_scenes(200, questions_per_image=3, seed=7)


# ---------------------------------------------------------------- the independent checker

def triples(scene: dict) -> set[tuple[str, str, str]]:
    return {(src, r["name"], r["object"]) for src, o in scene["objects"].items() for r in o["relations"]}


def having(scene: dict, edges: set, relation: str, *, to: str | None = None, of: str | None = None) -> list[str]:
    """Objects o with (o, relation, to) -- or, with `of`, the targets t of (of, relation, t)."""
    if to is not None:
        return [o for o in scene["objects"] if (o, relation, to) in edges]
    return [t for t in scene["objects"] if (of, relation, t) in edges]


def connected(edges: set, a: str, b: str) -> bool:
    return any({s, d} == {a, b} for s, _, d in edges)


def check_anchor(q: dict, scene: dict) -> str:
    a = q["anchor"]
    matching = [oid for oid, o in scene["objects"].items()
                if o["name"] == a["name"] and (a["attribute"] is None or a["attribute"] in o["attributes"])]
    assert matching == [a["object"]], "the description must single out exactly one object"
    described = f"the {a['attribute']} {a['name']}" if a["attribute"] else f"the {a['name']}"
    assert described in q["question"]
    return a["object"]


def expected_answer(q: dict, scene: dict) -> tuple[str, str | None]:
    """(answer, the object holding it or None), derived from the scene graph and the question's structure."""
    objects, edges = scene["objects"], triples(scene)
    x = check_anchor(q, scene)
    if q["family"] == "attribute":
        vocab = COLOURS if q["query"] == "colour" else MATERIALS
        values = [a for a in objects[x]["attributes"] if a in vocab]
        assert len(values) == 1 and (("colour" in q["question"]) == (q["query"] == "colour"))
        return values[0], x
    if q["family"] == "path":
        current = x
        for hop in q["hops"]:
            assert hop["relation"] in q["question"]
            step = (having(scene, edges, hop["relation"], to=current) if hop["direction"] == "in"
                    else having(scene, edges, hop["relation"], of=current))
            assert len(step) == 1, "every hop must lead to exactly one object"
            current = step[0]
        assert current != x
        return objects[current]["name"], current
    relation = q["relation"]
    assert relation in SPATIAL and relation in q["question"]
    surfaces = having(scene, edges, "on", of=x)
    assert surfaces == [q["surface"]] and f"same {objects[q['surface']]['name']}" in q["question"]
    s = surfaces[0]
    if q["template"] == "loop_which":
        both = [o for o in objects if (o, relation, x) in edges and (o, "on", s) in edges]  # brute force
        assert len(both) == 1
        assert len(having(scene, edges, relation, to=x)) >= 2, "the relation alone must be ambiguous"
        assert len([o for o in having(scene, edges, "on", to=s) if o != x]) >= 2, "so must the furniture"
        y = both[0]
        assert connected(edges, y, x) and connected(edges, y, s) and connected(edges, x, s), "a triangle"
        return objects[y]["name"], y
    related = having(scene, edges, relation, to=x)
    assert len(related) == 1
    closes = (related[0], "on", s) in edges
    if closes:
        assert connected(edges, related[0], x) and connected(edges, related[0], s) and connected(edges, x, s)
    return ("yes" if closes else "no"), None


def test_every_answer_rederived_independently(generated):
    scenes, questions = generated
    assert len(questions) == 600
    for qid, q in questions.items():
        answer, holder = expected_answer(q, scenes[q["imageId"]])
        assert q["answer"] == answer, qid
        assert q["annotations"]["answer"] == ({"0": holder} if holder else {}), qid
        assert q["needs"] == NEEDS[q["family"]]


def test_question_ids_refer_to_scene_objects(generated):
    scenes, questions = generated
    for q in questions.values():
        objects = scenes[q["imageId"]]["objects"]
        spans = [oid for part in ("question", "fullAnswer") for oid in q["annotations"][part].values()]
        assert all(oid in objects for oid in spans + q["objects"])
        words = q["question"].rstrip("?").split()
        for span, oid in q["annotations"]["question"].items():
            start, end = (int(v) for v in span.split(":")) if ":" in span else (int(span), int(span) + 1)
            assert words[end - 1] == objects[oid]["name"]


# ---------------------------------------------------------------- scenes

def test_scenes_are_gqa_shaped_and_positions_agree_with_relations(generated):
    scenes, _ = generated
    for scene in scenes.values():
        objects = scene["objects"]
        assert 5 <= len(objects) <= 15
        for o in objects.values():
            assert {"name", "x", "y", "w", "h", "attributes", "relations"} <= set(o)
            assert all(isinstance(o[k], int) for k in "xywh")
            assert len(set(o["attributes"]) & COLOURS) == 1 and len(set(o["attributes"]) & MATERIALS) == 1
            for r in o["relations"]:
                t = objects[r["object"]]
                centre, t_centre = o["x"] + o["w"] / 2, t["x"] + t["w"] / 2
                bottom, t_bottom = o["y"] + o["h"], t["y"] + t["h"]
                inside = t["x"] <= o["x"] and o["x"] + o["w"] <= t["x"] + t["w"]
                assert {"to the left of": centre < t_centre, "to the right of": centre > t_centre,
                        "in front of": bottom > t_bottom, "behind": bottom < t_bottom,
                        "on": inside and bottom == t["y"], "under": inside and bottom == t_bottom}[r["name"]]


def test_graphs_have_cycles():
    ds = load_synthetic_scenes(num_images=50, seed=3, version=1)
    assert sum(s.graph.num_independent_cycles() > 0 for s in ds) >= 0.9 * len(ds)


# ---------------------------------------------------------------- balance

@pytest.mark.parametrize("num_images,per_image", [(200, 3), (61, 4), (40, 2)])
def test_families_are_equally_frequent(num_images, per_image):
    _, questions = generate_scenes(num_images, per_image, seed=1)
    counts = Counter(q["family"] for q in questions.values())
    assert len(questions) == num_images * per_image and max(counts.values()) - min(counts.values()) <= 1


def test_answers_are_balanced_within_families(generated):
    _, questions = generated
    for family in NEEDS:
        answers = Counter(q["answer"] for q in questions.values() if q["family"] == family)
        assert answers.most_common(1)[0][1] <= 0.3 * sum(answers.values()), (family, answers.most_common(3))
    yes_no = Counter(q["answer"] for q in questions.values() if q["answer"] in ("yes", "no"))
    assert abs(yes_no["yes"] - yes_no["no"]) <= 0.05 * sum(yes_no.values()) and sum(yes_no.values()) >= 50


# ---------------------------------------------------------------- determinism and speed

def test_same_seed_same_output_different_seed_different():
    first = json.dumps(generate_scenes(30, seed=5))
    assert first == json.dumps(generate_scenes(30, seed=5))
    assert first != json.dumps(generate_scenes(30, seed=6))


# ---------------------------------------------------------------- dataset

def test_load_synthetic_scenes_meta_points_at_the_right_nodes(generated):
    scenes, questions = generated
    ds = load_synthetic_scenes(num_images=200, questions_per_image=3, seed=7, version=1)
    assert ds.name == "synthetic_scenes" and len(ds) == 600 and ds.dropped == 0
    assert sorted(i for idx in ds.split.values() for i in idx) == list(range(600))
    for sample in ds:
        q = questions[sample.id]
        assert sample.question == f"Question: {q['question']}\n\nAnswer:" and sample.label == q["answer"]
        assert sample.meta["family"] == q["family"] and sample.meta["needs"] == NEEDS[q["family"]]
        nodes = sample.graph.nodes
        if q["answer"] in ("yes", "no"):
            assert sample.meta["answer_nodes"] == []
        elif q["family"] == "attribute":
            (node,) = sample.meta["answer_nodes"]
            assert q["answer"] in nodes[node].split("; ")[1] and nodes[node].startswith(f"name: {q['anchor']['name']};")
        else:
            (node,) = sample.meta["answer_nodes"]
            assert nodes[node].startswith(f"name: {q['answer']};")
        assert [nodes[i].split(";")[0] for i in sample.meta["evidence_nodes"]] == [
            f"name: {scenes[q['imageId']]['objects'][o]['name']}" for o in q["objects"]]


def test_write_scenes_round_trips_through_load_scenegraphs(tmp_path):
    paths = write_scenes(tmp_path, 20, questions_per_image=3, seed=2)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["questions.json", "sceneGraphs.json"]  # no temp files
    assert json.loads(paths[0].read_text()) == generate_scenes(20, 3, seed=2)[0]
    from_files = load_scenegraphs(tmp_path)
    in_memory = load_synthetic_scenes(num_images=20, questions_per_image=3, seed=2, version=1)
    under_root = load_synthetic_scenes(num_images=20, questions_per_image=3, seed=2, root=tmp_path / "sub", version=1)
    assert from_files.name == "scenegraphs" and from_files.split == in_memory.split == under_root.split
    for a, b, c in zip(from_files, in_memory, under_root):
        assert (a.id, a.question, a.label, a.graph) == (b.id, b.question, b.label, b.graph) == (c.id, c.question,
                                                                                               c.label, c.graph)
        assert b.meta == c.meta and all(b.meta[k] == v for k, v in a.meta.items())


def test_bad_object_range_raises():
    with pytest.raises(ValueError, match="min_objects"):
        generate_scenes(1, min_objects=2)
