"""Sharded preprocessing on a two-worker LocalCluster: same examples as the in-memory path, resumable, guarded."""

from __future__ import annotations

import json
import operator
import os
import time
from dataclasses import replace

import pytest
import torch
from distributed import Client, LocalCluster

from toporag_lib import atomic
from toporag_lib.data import load_dataset
from toporag_lib.data.graph import QASample, TextualGraph
from toporag_lib.embed import TextEncoder
from toporag_lib.retrieval import dataset_retrieval
from toporag_lib.seeding import one_torch_thread
from toporag_lib.training import sharded
from toporag_lib.training.examples import build_examples
from toporag_lib.training.preprocess import prepare
from toporag_lib.training.sharded import (
    ShardConfigError,
    ShardSampleError,
    iter_examples,
    iter_records,
    preprocess_sharded,
)

OPTIONS = {"num_images": 6, "questions_per_image": 3}  # 18 questions, 4 shards of 5 (the last one short)
SHARD_SIZE = 5


@pytest.fixture(scope="module")
def client():
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster, \
            Client(cluster) as client:
        yield client


@pytest.fixture(scope="module")
def job(client, tiny_encoder_path, tmp_path_factory):
    """One finished sharded run (its output folder and index) shared by the tests that only read it."""
    out = tmp_path_factory.mktemp("shards")
    index = preprocess_sharded("synthetic_scenes", out, shard_size=SHARD_SIZE, dataset_options=OPTIONS,
                               encoder_path=tiny_encoder_path, client=client, progress=False)
    return out, index


def run(out, encoder_path, client, **changes):
    kwargs = {"shard_size": SHARD_SIZE, "dataset_options": OPTIONS, "encoder_path": encoder_path,
              "client": client, "progress": False, **changes}
    return preprocess_sharded("synthetic_scenes", out, **kwargs)


def in_memory_examples(dataset, encoder_path, cache_root):
    """What `prepare` + `build_examples` make of each chunk of SHARD_SIZE samples, with one torch thread as in a Dask
    worker (distributed sets OMP_NUM_THREADS=1 there): a vector's last float bits depend on the thread count."""
    with one_torch_thread():
        return _chunks_in_memory(dataset, encoder_path, cache_root)


def _chunks_in_memory(dataset, encoder_path, cache_root):
    examples = []
    for k, start in enumerate(range(0, len(dataset), SHARD_SIZE)):
        chunk = dataset.take(range(start, min(start + SHARD_SIZE, len(dataset))))
        encoder = TextEncoder(encoder_path, cache=cache_root / str(k), progress=False)
        prepared = prepare(chunk, encoder, progress=False)
        built = build_examples(prepared, range(len(chunk)), dataset_retrieval("synthetic_scenes"), progress=False)
        examples += [replace(e, index=start + e.index) for e in built]
    return examples


def test_shards_hold_what_the_in_memory_path_builds(job, tiny_encoder_path, tmp_path):
    out, index = job
    dataset = load_dataset("synthetic_scenes", **OPTIONS)
    assert index.counts == [5, 5, 5, 3] and index.computed == [0, 1, 2, 3]
    assert all(path.exists() for path in index.paths)
    expected = in_memory_examples(dataset, tiny_encoder_path, tmp_path)
    examples = list(iter_examples(out))
    assert [e.index for e in examples] == [e.index for e in expected] == list(range(len(dataset)))
    assert sum(e.complex.num_cells_2 for e in examples) > 0  # 2-cells were retrieved, so they are compared too
    for got, want in zip(examples, expected):
        assert (got.text, got.question, got.label, got.family) == (want.text, want.question, want.label, want.family)
        assert got.complex.keys() == want.complex.keys()
        for key in got.complex.keys():
            same = torch.equal if isinstance(got.complex[key], torch.Tensor) else operator.eq
            assert same(got.complex[key], want.complex[key]), (got.index, key)
    records = list(iter_records(out))
    assert torch.equal(records[0]["nodes"], examples[0].complex.node_ids)
    assert [r["id"] for r in records] == [s.id for s in dataset]


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
    with pytest.raises(ShardConfigError, match=r"differs in: lift_options, retrieval"):
        run(out, tiny_encoder_path, client, retrieval={"k2": 3}, lift_options={"tree": "dfs"})
    with pytest.raises(ShardConfigError, match=r"differs in: dataset_digest, dataset_options, num_samples"):
        run(out, tiny_encoder_path, client, dataset_options={**OPTIONS, "num_images": 7})


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
        preprocess_sharded("synthetic_scenes", tmp_path, shard_size=SHARD_SIZE, dataset_options=OPTIONS,
                           encoder_path=tiny_encoder_path, progress=False)
    manifest = json.loads((tmp_path / sharded.MANIFEST).read_text())
    assert list(manifest["shards"]) == [sharded.shard_name(0)]  # what finished before the error stays recorded
    sharded._dataset.cache_clear()


def test_a_damaged_manifest_is_a_named_error(tmp_path):
    (tmp_path / sharded.MANIFEST).write_text('{"fingerprint": "ab')
    with pytest.raises(atomic.DamagedFileError, match=f"{sharded.MANIFEST} is damaged"):
        list(iter_records(tmp_path))
