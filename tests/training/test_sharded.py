"""Sharded preprocessing on a two-worker LocalCluster: the local path's examples for every dataset, resumable,
guarded."""

from __future__ import annotations

import json
import operator
import os
import time

import pytest
import torch
from distributed import Client, LocalCluster

from toporag_lib import atomic
from toporag_lib.data import load_dataset
from toporag_lib.data.graph import QASample, TextualGraph
from toporag_lib.embed import TextEncoder
from toporag_lib.paths import BUNDLED_DATA
from toporag_lib.retrieval import make_retriever
from toporag_lib.settings import ConfigError
from toporag_lib.training import sharded
from toporag_lib.training.examples import build_examples
from toporag_lib.training.ledger import config_digest
from toporag_lib.training.preprocess import prepare
from toporag_lib.training.sharded import (
    ShardConfigError,
    ShardSampleError,
    feature_dim,
    iter_examples,
    iter_records,
    preprocess_sharded,
)
from toporag_lib.training.train_config import TrainConfig
from toporag_lib.training.trainer import make_examples

OPTIONS = {"num_images": 6, "questions_per_image": 3}  # 18 questions, 4 shards of 5 (the last one short)
SHARD_SIZE = 5


@pytest.fixture(scope="module")
def client():
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster, \
            Client(cluster) as client:
        yield client


def scenes(encoder_path, **changes) -> TrainConfig:
    return TrainConfig.from_dict({"dataset": "synthetic_scenes", "dataset_options": OPTIONS,
                                  "encoder_path": str(encoder_path), **changes})


@pytest.fixture(scope="module")
def job(client, tiny_encoder_path, tmp_path_factory):
    """One finished sharded run (its output folder and index) shared by the tests that only read it."""
    out = tmp_path_factory.mktemp("shards")
    index = preprocess_sharded(scenes(tiny_encoder_path), out, shard_size=SHARD_SIZE, client=client, progress=False)
    return out, index


def run(out, encoder_path, client, **changes):
    return preprocess_sharded(scenes(encoder_path, **changes), out, shard_size=SHARD_SIZE, client=client,
                              progress=False)


def assert_same_examples(got, want):
    """Field by field, tensors bit for bit."""
    assert [e.index for e in got] == [e.index for e in want]
    for a, b in zip(got, want):
        assert (a.text, a.question, a.label, a.family, a.pair) == (b.text, b.question, b.label, b.family, b.pair), \
            a.index
        assert a.complex.keys() == b.complex.keys()
        for key in a.complex.keys():
            same = torch.equal if isinstance(a.complex[key], torch.Tensor) else operator.eq
            assert same(a.complex[key], b.complex[key]), (a.index, key)


def test_shards_hold_what_the_local_path_builds(job, tiny_encoder_path):
    out, index = job
    dataset = load_dataset("synthetic_scenes", **OPTIONS)
    assert index.counts == [5, 5, 5, 3] and index.computed == [0, 1, 2, 3] and index.dim == feature_dim(out)
    assert all(path.exists() for path in index.paths)
    config = scenes(tiny_encoder_path, limits={"train": None, "val": None, "test": None})
    local = prepare(dataset, TextEncoder(config.encoder_path, progress=False), progress=False)
    expected = build_examples(local, range(len(dataset)), make_retriever(config.retrieval), progress=False)
    examples = list(iter_examples(out))
    assert sum(e.complex.num_cells_2 for e in examples) > 0  # 2-cells were retrieved, so they are compared too
    assert_same_examples(examples, expected)
    records = list(iter_records(out))
    assert torch.equal(records[0]["nodes"], examples[0].complex.node_ids)
    assert [r["id"] for r in records] == [s.id for s in dataset]


# Every dataset that runs offline, at its own defaults (edge texts, lifting, retrieval), a few questions per split.
DATASETS = {"explagraphs": {}, "synthetic_scenes": OPTIONS, "gqa_fixtures": {},
            "webqsp": {"root": str(BUNDLED_DATA / "webqsp_fixture")},
            "synthetic_scenes v3": {"num_images": 6, "questions_per_image": 3, "version": 3}}  # twins: `pair`


@pytest.mark.parametrize("name", sorted(DATASETS))
def test_the_trainers_examples_are_the_same_made_locally_or_on_dask(name, client, tiny_encoder_path, tmp_path):
    dataset = name.split()[0]
    values = {"dataset": dataset, "dataset_options": DATASETS[name], "encoder_path": str(tiny_encoder_path),
              "limits": {"train": 6, "val": 3, "test": 4}, "seed": 3}
    local, local_dim = make_examples(TrainConfig.from_dict(values), progress=False)
    address = client.scheduler.address  # the path a `--set preprocess=tcp://host:port` run takes
    on_dask, dask_dim = make_examples(TrainConfig.from_dict({**values, "preprocess": address}), progress=False,
                                      shards=tmp_path)
    assert local.keys() == on_dask.keys() and local_dim == dask_dim and sum(map(len, local.values())) >= 6
    if "version" in DATASETS[name]:
        assert any(e.pair for split in local.values() for e in split)
    for split in local:
        assert_same_examples(on_dask[split], local[split])


def test_a_dask_run_starts_its_own_local_cluster_and_keeps_its_identity(tiny_encoder_path, tmp_path):
    local = scenes(tiny_encoder_path, limits={"train": 4, "val": 2, "test": 2})
    on_dask = scenes(tiny_encoder_path, limits={"train": 4, "val": 2, "test": 2}, preprocess="dask")
    examples, _ = make_examples(on_dask, progress=False, shards=tmp_path)
    assert_same_examples(examples["test"], make_examples(local, progress=False)[0]["test"])
    assert (tmp_path / sharded.MANIFEST).exists()
    assert config_digest(on_dask.to_dict()) == config_digest(local.to_dict())  # where it ran is not what it is


def test_what_the_shards_cannot_make_is_refused_before_any_work():
    with pytest.raises(ConfigError, match=r"retrieval 'subgraphrag' is fitted on the training split"):
        TrainConfig(dataset="synthetic_scenes", retrieval={"method": "subgraphrag"}, preprocess="dask")
    with pytest.raises(ConfigError, match=r"needs embedding_batching 'length' or 'single'"):
        TrainConfig(embedding_batching=16, preprocess="tcp://127.0.0.1:8786")
    with pytest.raises(ConfigError, match=r"preprocess='cluster': expected one of \['local', 'dask'\]"):
        TrainConfig(preprocess="cluster")
    with pytest.raises(ValueError, match=r"writes shards: pass the folder"):
        make_examples(TrainConfig(preprocess="dask"), progress=False)


def test_rerun_recomputes_only_missing_shards(client, tiny_encoder_path, tmp_path):
    first = run(tmp_path, tiny_encoder_path, client)
    before = {path.name: (path.stat().st_mtime_ns, path.read_bytes()) for path in first.paths}
    first.paths[2].unlink()  # a lost shard
    manifest = json.loads((tmp_path / sharded.MANIFEST).read_text())
    del manifest["shards"][sharded.shard_name(1)]  # a shard written just before a kill, not yet recorded
    (tmp_path / sharded.MANIFEST).write_text(json.dumps(manifest))
    first.paths[3].write_bytes(before[sharded.shard_name(3)][1][:1000])  # a shard truncated after it was recorded
    leftover = tmp_path / ".shard-00001.pt.tmp"  # the temporary file of a killed write
    leftover.write_bytes(b"half a shard")
    os.utime(leftover, (time.time() - 7200, time.time() - 7200))
    second = run(tmp_path, tiny_encoder_path, client)
    assert not leftover.exists()
    assert second.computed == [1, 2, 3] and second.counts == first.counts
    after = {path.name: (path.stat().st_mtime_ns, path.read_bytes()) for path in second.paths}
    assert after[sharded.shard_name(0)] == before[sharded.shard_name(0)]  # untouched
    assert after[sharded.shard_name(3)][1] == before[sharded.shard_name(3)][1]  # recomputed, identical
    records = [atomic.torch_load(path, weights_only=True)["records"] for path in second.paths]
    assert [r["text"] for shard in records for r in shard] == [r["text"] for r in iter_records(tmp_path)]
    assert run(tmp_path, tiny_encoder_path, client).computed == []


def test_a_changed_job_in_the_same_folder_is_refused(job, tiny_encoder_path, client):
    out, _ = job
    with pytest.raises(ShardConfigError, match=r"differs in: lift, retrieval"):
        run(out, tiny_encoder_path, client, retrieval={"k2": 3}, lift={"tree": "dfs"})
    with pytest.raises(ShardConfigError, match=r"differs in: dataset_digest, dataset_options, num_samples"):
        run(out, tiny_encoder_path, client, dataset_options={**OPTIONS, "num_images": 7})
    with pytest.raises(ShardConfigError, match=r"differs in: edge_text"):
        run(out, tiny_encoder_path, client, edge_text="relation")


def test_unfinished_folder_is_not_read(tmp_path, tiny_encoder_path):
    run(tmp_path, tiny_encoder_path, None)
    (tmp_path / sharded.shard_name(3)).unlink()
    with pytest.raises(ShardConfigError, match=r"unfinished: 1 of 4 shards missing \(first: shard-00003.pt\)"):
        next(iter_records(tmp_path))


def test_a_graph_that_cannot_be_lifted_names_dataset_shard_and_sample(monkeypatch, tmp_path, tiny_encoder_path):
    def broken(name, **options):
        dataset = load_dataset("synthetic_scenes", **options)
        good = dataset[7]
        dataset.samples[7] = QASample(good.id, good.question, good.label, TextualGraph([], []), good.meta)
        return dataset

    monkeypatch.setattr(sharded, "load_dataset", broken)  # in this process: client=None runs the tasks here
    sharded._dataset.cache_clear()  # the unbroken dataset of an earlier test is cached under the same name
    with pytest.raises(ShardSampleError, match=r"dataset 'synthetic_scenes', shard-00001.pt, sample 7: lifting "
                                               r"failed: ValueError: cannot lift a graph with no nodes"):
        run(tmp_path, tiny_encoder_path, None)
    manifest = json.loads((tmp_path / sharded.MANIFEST).read_text())
    assert list(manifest["shards"]) == [sharded.shard_name(0)]  # what finished before the error stays recorded
    sharded._dataset.cache_clear()


def test_a_damaged_manifest_is_a_named_error(tmp_path):
    (tmp_path / sharded.MANIFEST).write_text('{"fingerprint": "ab')
    with pytest.raises(atomic.DamagedFileError, match=f"{sharded.MANIFEST} is damaged"):
        list(iter_records(tmp_path))
