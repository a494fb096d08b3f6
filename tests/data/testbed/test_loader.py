"""The testbed's files: every version still generates, byte for byte, what it generated when its runs were made."""

from __future__ import annotations

import hashlib

import pytest

from toporag_lib.data.testbed.loader import load_synthetic_scenes

# sha256 of the files of 30 images, 3 questions each, seed 0: versions 1 and 2 as written before the testbed moved
# into one folder (as their runs read them), version 3 as first written
FILES = {
    1: {"questions.json": "5df0b0e7022f98d30a4979267315311cfb759dd4e642c2d3c38bad16c56b526c",
        "sceneGraphs.json": "d5b321d364b4f90b99496105f45ae398eb9fa8270a12384378c4113efc3da614"},
    2: {"questions.json": "abf79d4766e365076ac5839e46413a340830764015f5d76f5e700cc1b33796a1",
        "sceneGraphs.json": "c26aa6431aa3958830974b4b299244696deb9c2242b4ce591cd0859badde7965"},
    3: {"questions.json": "893309e39a884bd165147f5a21f8cb70bc3dc78b023aab5a17eddb18a477e064",
        "sceneGraphs.json": "f65917f5bb3e8acbffaf71132062e53e4782ddb61717858d8491147cf8de5b13"},  # when it was made
}


@pytest.mark.parametrize("version", sorted(FILES))
def test_every_version_writes_the_same_bytes_as_when_its_runs_were_made(tmp_path, version):
    dataset = load_synthetic_scenes(30, 3, 0, root=tmp_path, version=version)
    written = {path.name: hashlib.sha256(path.read_bytes()).hexdigest() for path in tmp_path.iterdir()}
    assert written == FILES[version]  # no temporary file left beside them either
    assert len(dataset) == 90 and {s.meta["version"] for s in dataset} == {version}


def test_the_dataset_is_the_same_with_or_without_files(tmp_path):
    on_disk, in_memory = load_synthetic_scenes(12, 3, 1, root=tmp_path), load_synthetic_scenes(12, 3, 1)
    assert [(s.id, s.question, s.label, s.graph, s.meta) for s in on_disk] == \
           [(s.id, s.question, s.label, s.graph, s.meta) for s in in_memory]


@pytest.mark.parametrize("options, message", [
    ({"version": True}, r"version=True: expected 1 or 2 or 3"),
    ({"version": 2.0}, r"version=2.0: expected"),
    ({"num_images": 4.0}, r"num_images=4.0: expected an integer"),
    ({"seed": None}, r"seed=None: expected an integer"),
])
def test_an_option_that_is_not_an_integer_is_refused_not_read_as_one(options, message):
    with pytest.raises(ValueError, match=r"synthetic_scenes " + message):
        load_synthetic_scenes(**{"num_images": 4, **options})
