"""The testbed's files and dataset: `sceneGraphs.json` and `questions.json` in GQA's formats, written atomically,
and `load_synthetic_scenes`, the `QADataset` of either version (through GQA's scene-graph conversion)."""

from __future__ import annotations

import json
from pathlib import Path

from toporag_lib import atomic
from toporag_lib.data.dataset import QADataset
from toporag_lib.data.errors import is_int
from toporag_lib.data.gqa import (
    QUESTIONS_JSON_FILE,
    SCENE_GRAPHS_FILE,
    build_scenegraphs,
    object_index,
    questions_from_gqa_json,
    read_questions,
    read_scene_graphs,
)
from toporag_lib.data.testbed.questions_v1 import generate_scenes
from toporag_lib.data.testbed.questions_v2 import generate_testbed
from toporag_lib.data.testbed.questions_v3 import generate_twin_testbed, image_splits

VERSIONS = {1: generate_scenes, 2: generate_testbed, 3: generate_twin_testbed}


def _write_scenes_files(out_dir: Path, scenes: dict, questions: dict) -> tuple[Path, Path]:
    """Write both files atomically under their default names; returns (scene graphs, questions) paths."""
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = out_dir / SCENE_GRAPHS_FILE, out_dir / QUESTIONS_JSON_FILE
    for path, data in zip(paths, (scenes, questions)):
        atomic.write_text(path, json.dumps(data))
    return paths


def write_scenes(out_dir: str | Path, num_images: int, questions_per_image: int = 3, seed: int = 0,
                 **kwargs: int) -> tuple[Path, Path]:
    """Generate and write `sceneGraphs.json` and `questions.json` into out_dir; returns their paths.

    `kwargs` go to `generate_scenes` (min_objects, max_objects).
    """
    return _write_scenes_files(Path(out_dir), *generate_scenes(num_images, questions_per_image, seed, **kwargs))


def load_synthetic_scenes(num_images: int = 1000, questions_per_image: int = 3, seed: int = 0,
                          root: str | Path | None = None, version: int = 2) -> QADataset:
    """Synthetic scenes as a QADataset (through the SceneGraphs conversion), with family/needs in each meta.

    `version=2` (the default) is the testbed of `questions_v2`, whose loop questions need the loop; `version=3`
    that of `questions_v3`, whose loop questions come as counterfactual twins (split by pairs); `version=1` the
    scenes of `questions_v1`, as every run before version 2 existed used them. With `root`, the files are written
    there first and read back. meta adds `family`, `needs`, `template` and `evidence` ({"nodes", "edges"}: graph ids
    of the cells the answer depends on); versions 2 and 3 also `structure` (what the reference solvers read),
    version 3 `pair` on loop questions (the id the twins share) and version 1 `evidence_nodes` (node indices of every
    object the answer depends on).
    """
    if not is_int(version) or version not in VERSIONS:  # True == 1 and 2.0 == 2 are not versions
        raise ValueError(f"synthetic_scenes version={version!r}: expected {' or '.join(map(str, VERSIONS))}")
    for name, value in (("num_images", num_images), ("questions_per_image", questions_per_image), ("seed", seed)):
        if not is_int(value):
            raise ValueError(f"synthetic_scenes {name}={value!r}: expected an integer")
    version = int(version)
    scenes, questions = VERSIONS[version](num_images, questions_per_image, seed)
    if root is None:
        records = questions_from_gqa_json(questions)
    else:
        scene_path, question_path = _write_scenes_files(Path(root), scenes, questions)
        scenes, records = read_scene_graphs(scene_path), read_questions(question_path)
    splits = image_splits(list(scenes)) if version == 3 else None
    dataset = build_scenegraphs("synthetic_scenes", scenes, records, boxes=version == 1, image_splits=splits)
    for sample in dataset:
        q = questions[sample.id]
        sample.meta.update(family=q["family"], needs=q["needs"], template=q["template"], version=version)
        if version == 1:
            index = object_index(scenes[q["imageId"]])
            sample.meta["evidence_nodes"] = [index[o] for o in q["objects"]]
        else:
            sample.meta.update(evidence=q["evidence"], structure=q["structure"])
            if "pair" in q:
                sample.meta["pair"] = q["pair"]
    return dataset
