"""Sharded, resumable preprocessing (embed, lift, retrieve, textualize) on Dask, for corpora larger than memory.

    from distributed import Client, LocalCluster
    from toporag_lib.training.sharded import preprocess_sharded, iter_examples

    config = TrainConfig(dataset="synthetic_scenes", dataset_options={"num_images": 5000})
    with LocalCluster(n_workers=2, threads_per_worker=1) as cluster, Client(cluster) as client:
        index = preprocess_sharded(config, "runs/shards", shard_size=256, client=client)
    for example in iter_examples("runs/shards"):  # one shard in memory at a time
        ...

The trainer takes this path when `TrainConfig.preprocess` is "dask" (a `LocalCluster` on this machine) or a
scheduler address (`--set preprocess=tcp://host:8786`), writing the shards into the run folder.

The samples (the dataset, or the positions `indices` of it) are cut into chunks of `shard_size`; each chunk is one
Dask task that loads the dataset in its worker (once per worker process: the loaders read whole files, and the
graphs' text is small next to what is made from it), then runs `preprocess.prepare` and
`examples.build_examples` on its chunk alone with the config's edge texts, lifting, retrieval and text options,
writes `shard-00000.pt` (one file per chunk, atomically) and returns its name and sample count. The driver never
holds samples or records, so its memory stays flat; so does a worker's: its encoder is loaded once per process and
encodes each chunk's texts directly, without the on-disk cache of `embed.TextEncoder`, whose index lives in memory
and would grow with the corpus. With "length" or "single" batching a vector depends on its text alone, so the
examples are the local path's, bit for bit (tested for every dataset); an int batching or a retriever fitted on the
training split is refused (`config.check_preprocess`).

A shard file holds {"fingerprint", "shard", "records"}, a record per sample: index, id, question, label, family,
the retrieved `nodes`, `edges`, `cells2` (ids in the graph and its lifted complex), `text` (the subcomplex's text,
`textualize.textualize_subcomplex`) and `complex` (`ComplexData.to_dict()`); `iter_examples` turns them back into
`examples.Example`s, the same as `examples.build_examples` makes in memory.

Resuming: `manifest.json` in `out_dir` holds the job's fingerprint (a hash of the dataset's name, options, content
and chosen samples, the shard size, the config's preprocessing settings and the encoder's identity) and the
finished shards. A rerun computes only the shards not recorded there or whose file is gone. A different job in an
existing `out_dir` raises `ShardConfigError` naming what changed (use a new folder, or delete the old one).
`client=None` runs the tasks one after the other in this process with Dask's synchronous scheduler; a
`distributed.Client` spreads them over its workers (a `LocalCluster`, or `Client("tcp://scheduler:8786")` on a
cluster, whose workers must see `out_dir`, the dataset files and the encoder folder at the same paths).
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import tempfile
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import dask
import torch
from tqdm.auto import tqdm

from toporag_lib import atomic
from toporag_lib.data import load_dataset
from toporag_lib.data.dataset import QADataset
from toporag_lib.data.graph import QASample, graph_key
from toporag_lib.embed import TextEncoder
from toporag_lib.retrieval.retriever import ModelFreeRetriever
from toporag_lib.topology.batching import ComplexData
from toporag_lib.topology.lifting import lift
from toporag_lib.training import data_parallel
from toporag_lib.training.examples import Example, build_examples
from toporag_lib.training.preprocess import PreparedDataset, prepare
from toporag_lib.training.train_config import TrainConfig, check_preprocess

FORMAT_VERSION = 2
# The config fields preprocessing reads (the rest, model and optimisation, do not change a shard).
PREPROCESSING_KEYS = ("dataset", "dataset_options", "edge_text", "lift", "retrieval", "graph_text", "question_suffix",
                      "encoder_path", "embedding_batching")
MANIFEST = "manifest.json"

__all__ = ["ShardConfigError", "ShardSampleError", "ShardIndex", "preprocess_sharded", "iter_records",
           "iter_examples", "feature_dim", "shard_name"]


class ShardConfigError(ValueError):
    """`out_dir` holds (part of) a different job's shards, or is not a finished job."""


class ShardSampleError(RuntimeError):
    """One sample failed; the message names the dataset, the shard and the sample index."""


@dataclass(frozen=True)
class ShardIndex:
    """What a run left in `out_dir`: sample counts per shard and which shards this run computed."""

    out_dir: Path
    fingerprint: str
    num_samples: int
    counts: list[int]
    computed: list[int]
    dim: int  # the encoder's vector width (the cellular encoder's input)

    @property
    def paths(self) -> list[Path]:
        return [self.out_dir / shard_name(k) for k in range(len(self.counts))]


@dataclass(frozen=True)
class ShardJob:
    """Everything a worker needs for any shard (small: sent with every task)."""

    config_json: str  # the config's PREPROCESSING_KEYS
    indices_json: str  # the chosen samples, positions in the loaded dataset ("null": all of them)
    shard_size: int
    out_dir: str
    fingerprint: str

    @property
    def config(self) -> TrainConfig:
        return TrainConfig.from_dict(json.loads(self.config_json))


def shard_name(shard: int) -> str:
    return f"shard-{shard:05d}.pt"


def preprocess_sharded(config: TrainConfig, out_dir: str | Path, indices: Sequence[int] | None = None,
                       shard_size: int = 256, client: Any = None, progress: bool = True) -> ShardIndex:
    """Write one shard file per `shard_size` samples of `config`'s dataset (the samples at `indices`, in that order;
    None: all) into `out_dir`, skipping the shards a previous run of the same job finished (see the module
    docstring). `client` is a `distributed.Client`, or None: this process, shard after shard."""
    if shard_size < 1:
        raise ValueError(f"shard_size={shard_size}: expected a positive int")
    check_preprocess("dask", config.retrieval.method, config.embedding_batching)
    settings = json.loads(_canonical({k: v for k, v in config.to_dict().items() if k in PREPROCESSING_KEYS}))
    indices_json = _canonical(None if indices is None else [int(i) for i in indices])
    survey = _compute([dask.delayed(_survey)(_canonical(settings), indices_json)], client)[0]
    manifest_config = {"format": FORMAT_VERSION, **settings, "samples": _digest(indices_json),
                       "shard_size": shard_size, **survey}
    out = Path(out_dir)
    manifest = _open_manifest(out, manifest_config)
    atomic.remove_stale_temporaries(out)  # shards whose writes were killed
    job = ShardJob(_canonical(settings), indices_json, shard_size, str(out), manifest["fingerprint"])
    todo = [k for k in range(_num_shards(manifest_config)) if not _finished(out, manifest, k)]
    _run(job, todo, manifest, client, progress)
    return ShardIndex(out, job.fingerprint, survey["num_samples"],
                      [manifest["shards"][shard_name(k)] for k in range(_num_shards(manifest_config))], todo,
                      survey["dim"])


def iter_records(out_dir: str | Path) -> Iterator[dict[str, Any]]:
    """The records of a finished job in sample order, reading one shard at a time."""
    out = Path(out_dir)
    manifest = _read_manifest(out)
    total = _num_shards(manifest["config"])
    missing = [k for k in range(total) if not _finished(out, manifest, k)]
    if missing:
        raise ShardConfigError(f"{out} is unfinished: {len(missing)} of {total} shards missing (first: "
                               f"{shard_name(missing[0])}); run preprocess_sharded again to finish it")
    for k in range(total):
        payload = atomic.torch_load(out / shard_name(k), weights_only=True)
        if payload["fingerprint"] != manifest["fingerprint"]:
            raise ShardConfigError(f"{out / shard_name(k)} belongs to another job than {out / MANIFEST}")
        yield from payload["records"]


def feature_dim(out_dir: str | Path) -> int:
    """The encoder's vector width in a job's shards (the cellular encoder's input)."""
    return _read_manifest(Path(out_dir))["config"]["dim"]


def iter_examples(out_dir: str | Path) -> Iterator[Example]:
    """`examples.Example`s rebuilt from a finished job's shards, one shard in memory at a time."""
    for r in iter_records(out_dir):
        yield Example(index=r["index"], complex=ComplexData(**r["complex"]), text=r["text"],
                      question=r["question"], label=r["label"], family=r["family"], pair=r.get("pair", ""))


# Driver side.

def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=str)


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def _num_shards(config: dict[str, Any]) -> int:
    return -(-config["num_samples"] // config["shard_size"])


def _read_manifest(out: Path) -> dict[str, Any]:
    path = out / MANIFEST
    if not path.exists():
        raise ShardConfigError(f"{out} holds no {MANIFEST}: not an output folder of preprocess_sharded")
    return atomic.parse_json(path.read_text(), str(path))


def _open_manifest(out: Path, config: dict[str, Any]) -> dict[str, Any]:
    """The manifest of this job in `out` (new if there is none); ShardConfigError if `out` holds another job."""
    fingerprint = _digest(_canonical(config))
    if not (out / MANIFEST).exists():
        manifest = {"fingerprint": fingerprint, "config": json.loads(_canonical(config)), "shards": {}}
        atomic.write_text(out / MANIFEST, json.dumps(manifest, indent=1))
        return manifest
    manifest = _read_manifest(out)
    if manifest["fingerprint"] != fingerprint:
        old = manifest["config"]
        changed = sorted(k for k in set(old) | set(config) if _canonical(old.get(k)) != _canonical(config.get(k)))
        raise ShardConfigError(f"{out} holds shards of another job (differs in: {', '.join(changed)}); "
                               "use a new out_dir, or delete this one to start over")
    return manifest


def _finished(out: Path, manifest: dict[str, Any], shard: int) -> bool:
    """Recorded in the manifest, and its file is whole (a truncated or damaged shard is computed again)."""
    return shard_name(shard) in manifest["shards"] and atomic.is_intact(out / shard_name(shard))


def _run(job: ShardJob, todo: list[int], manifest: dict[str, Any], client: Any, progress: bool) -> None:
    """Compute the shards in `todo`, recording each finished one in the manifest as it finishes."""
    for k in todo:
        manifest["shards"].pop(shard_name(k), None)
    total = _num_shards(manifest["config"])
    bar = tqdm(total=total, initial=total - len(todo), desc=f"shards ({manifest['config']['dataset']})", unit="shard",
               disable=not progress)
    try:
        for name, count in _as_completed([dask.delayed(_process_shard)(job, k) for k in todo], client):
            manifest["shards"][name] = count
            bar.update()
            _write_manifest(Path(job.out_dir), manifest)
    finally:
        _write_manifest(Path(job.out_dir), manifest)
        bar.close()


def _write_manifest(out: Path, manifest: dict[str, Any]) -> None:
    manifest["shards"] = dict(sorted(manifest["shards"].items()))
    atomic.write_text(out / MANIFEST, json.dumps(manifest, indent=1))


def _compute(tasks: list, client: Any) -> list:
    """Results of Dask `tasks`, in order."""
    return list(dask.compute(*tasks, scheduler="sync") if client is None else client.gather(client.compute(tasks)))


def _as_completed(tasks: list, client: Any) -> Iterator:
    """Results of Dask `tasks` as they finish; the rest are cancelled if the caller stops or a task fails."""
    if client is None:
        for task in tasks:
            yield task.compute(scheduler="sync")
        return
    from distributed import as_completed

    futures = client.compute(tasks)
    try:
        for future in as_completed(futures):
            yield future.result()
    finally:
        client.cancel(futures)


# Worker side.

_ENCODE_LOCK = threading.Lock()  # one chunk at a time through a worker's encoder (threads_per_worker > 1)


class _ChunkEncoder:
    """`TextEncoder`'s model on one chunk's distinct texts, without its disk cache (see the module docstring)."""

    def __init__(self, path: str | None, batching: str):
        self._scratch = tempfile.TemporaryDirectory(prefix="toporag-encoder-")  # stays empty
        self.encoder = TextEncoder(path, batching=batching, cache=self._scratch.name, progress=False)

    def encode(self, texts: Sequence[str]) -> torch.Tensor:
        distinct = list(dict.fromkeys(texts))
        if not distinct:
            return torch.empty(0, self.encoder.dim)
        vectors = self.encoder.encode_uncached(distinct)
        row = {text: i for i, text in enumerate(distinct)}
        return vectors[[row[t] for t in texts]]


@functools.lru_cache(maxsize=1)
def _chunk_encoder(path: str | None, batching: str) -> _ChunkEncoder:
    return _ChunkEncoder(path, batching)


@functools.lru_cache(maxsize=1)
def _dataset(name: str, options_json: str, indices_json: str) -> QADataset:
    dataset = load_dataset(name, **json.loads(options_json))
    indices = json.loads(indices_json)
    return dataset if indices is None else dataset.take(indices)


def _job_dataset(config: TrainConfig, indices_json: str) -> QADataset:
    return _dataset(config.dataset, _canonical(config.dataset_options), indices_json)


def _sample_digest(sample: QASample) -> str:
    return _canonical([sample.id, sample.question, sample.query, sample.label, sample.meta.get("family", ""),
                       *([sample.meta["pair"]] if "pair" in sample.meta else []), graph_key(sample.graph)])


def _survey(config_json: str, indices_json: str) -> dict[str, Any]:
    """Sample count and content hash of the chosen samples, the encoder's identity and width (run on a worker)."""
    config = TrainConfig.from_dict(json.loads(config_json))
    dataset = _job_dataset(config, indices_json)
    digest = hashlib.sha256()
    for sample in dataset:
        digest.update(_sample_digest(sample).encode())
    encoder = _chunk_encoder(config.encoder_path, config.embedding_batching).encoder
    return {"num_samples": len(dataset), "dataset_digest": digest.hexdigest(), "encoder": encoder.identity,
            "dim": encoder.dim}


@contextmanager
def _naming(dataset: str, shard: int, index: int, stage: str) -> Iterator[None]:
    """Re-raise any error as a ShardSampleError naming the dataset, shard and sample."""
    try:
        yield
    except Exception as err:
        raise ShardSampleError(f"dataset {dataset!r}, {shard_name(shard)}, sample {index}: {stage} failed: "
                               f"{type(err).__name__}: {err}") from err


def _prepare_chunk(config: TrainConfig, chunk: QADataset, start: int, shard: int) -> PreparedDataset:
    """`preprocess.prepare` on one chunk; a failure names the first sample whose graph cannot be lifted alone."""
    try:
        with _ENCODE_LOCK:
            return prepare(chunk, _chunk_encoder(config.encoder_path, config.embedding_batching),
                           edge_text=config.edge_text, lift=config.lift, progress=False)
    except Exception as err:
        for i in range(len(chunk)):
            with _naming(config.dataset, shard, start + i, "lifting"):
                lift(chunk[i].graph, **config.lift.to_dict())
        raise ShardSampleError(f"dataset {config.dataset!r}, {shard_name(shard)}: embedding or lifting failed: "
                               f"{type(err).__name__}: {err}") from err


def _record(example: Example, sample: QASample, index: int) -> dict[str, Any]:
    data = example.complex
    return {"index": index, "id": sample.id, "question": example.question, "label": example.label,
            "family": example.family, "pair": example.pair, "nodes": data.node_ids, "edges": data.edge_ids, "cells2": data.cell_ids,
            "text": example.text, "complex": data.to_dict()}


def _process_shard(job: ShardJob, shard: int) -> tuple[str, int]:
    """Compute and write one shard; returns its file name and sample count only."""
    config = job.config
    dataset = _job_dataset(config, job.indices_json)
    start = shard * job.shard_size
    chunk = dataset.take(range(start, min(start + job.shard_size, len(dataset))))
    prepared = _prepare_chunk(config, chunk, start, shard)
    records = []
    for i in range(len(chunk)):
        with _naming(config.dataset, shard, start + i, "retrieval"):
            (example,) = build_examples(prepared, [i], ModelFreeRetriever(config.retrieval), config.graph_text,
                                        config.question_suffix, progress=False)
        records.append(_record(example, chunk[i], start + i))
    payload = {"fingerprint": job.fingerprint, "shard": shard, "records": records}
    atomic.torch_save(payload, Path(job.out_dir) / shard_name(shard))
    return shard_name(shard), len(records)


def sharded_examples(config: TrainConfig, indices: list[int], folder: Path,
                     progress: bool) -> tuple[list[Example], int]:
    """The samples at `indices` preprocessed on Dask into `folder` ("dask": a `LocalCluster` of one single-threaded
    worker per core; else the scheduler at that address), read back in order; under torchrun process 0 computes
    and the others wait, then all read."""
    from distributed import Client, LocalCluster

    if data_parallel.is_main():
        if config.preprocess == "dask":
            workers = max(1, len(os.sched_getaffinity(0)))
            with LocalCluster(n_workers=workers, threads_per_worker=1, dashboard_address=None) as cluster, \
                    Client(cluster) as client:
                preprocess_sharded(config, folder, indices, client=client, progress=progress)
        else:
            with Client(config.preprocess) as client:
                preprocess_sharded(config, folder, indices, client=client, progress=progress)
    data_parallel.barrier()
    return list(iter_examples(folder)), feature_dim(folder)
