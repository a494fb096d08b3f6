"""On-disk cache of lifted complexes: one `.npz` file per (graph, lifting options, FORMAT_VERSION).

Layout: `<cache>/lifting/<key>.npz`, `<cache>` being `paths.cache_dir()` unless a folder is given.

The key hashes the node texts, the edges (source, target, text), the lifting options with their defaults filled
in, and FORMAT_VERSION. Features are not part of the key: the file holds the topology only, and
`lift_cached` attaches the embeddings it is given afterwards (Z2 is recomputed from them, which is cheap).
Files are written atomically (`atomic.write_bytes`: a temporary file beside the target, then `os.replace`), so a
reader never sees half a file; a file that cannot be read or does not match its graph is recomputed and rewritten.
Temporary files that killed writes left behind are deleted the first time a process uses the folder.

Worth it for slow lifts (basis="minimum": seconds; long DFS or random-tree cycles). A BFS lift of a WebQSP-sized
graph (~2 ms) costs about as much as hashing the graph and reading its file.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import warnings
from operator import itemgetter
from pathlib import Path
from typing import Any

import numpy as np
from torch import Tensor

from toporag_lib import atomic
from toporag_lib.data.graph import TextualGraph
from toporag_lib.paths import cache_dir as default_cache_root
from toporag_lib.topology.complex import CellComplex
from toporag_lib.topology.lifting import LiftConfig, lift

FORMAT_VERSION = 1
_ARRAYS = ("edge_src", "edge_dst", "cell_ptr", "cell_nodes", "cell_edges", "cell_signs", "cell_generator")

_swept: set[Path] = set()  # folders whose leftover temporary files this process has cleared

__all__ = ["FORMAT_VERSION", "cache_key", "cache_path", "lift_cached", "lifting_options"]


def lifting_options(**options: Any) -> dict[str, Any]:
    """`lift`'s topology options with defaults filled in (TypeError for unknown names)."""
    known = set(LiftConfig.__dataclass_fields__)
    unknown = set(options) - known
    if unknown:
        raise TypeError(f"unknown lifting options {sorted(unknown)}; expected some of {sorted(known)}")
    return LiftConfig(**options).to_dict()


def cache_key(graph: TextualGraph, **options: Any) -> str:
    """SHA-256 of FORMAT_VERSION, the complete lifting options, the node texts and the edges."""
    digest = hashlib.sha256()
    header = {"format": FORMAT_VERSION, "options": lifting_options(**options)}
    for part in (header, graph.nodes, graph.edges):
        digest.update(json.dumps(part, sort_keys=True, ensure_ascii=False).encode())
        digest.update(b"\n")
    return digest.hexdigest()


def cache_path(graph: TextualGraph, cache_dir: str | os.PathLike | None = None, **options: Any) -> Path:
    """Where `lift_cached` keeps the complex of `graph` under `options` (default folder: <cache>/lifting)."""
    folder = default_cache_root() / "lifting" if cache_dir is None else Path(cache_dir)
    return folder / f"{cache_key(graph, **options)}.npz"


def lift_cached(graph: TextualGraph, cache_dir: str | os.PathLike | None = None, node_emb: Tensor | None = None,
                edge_emb: Tensor | None = None, **options: Any) -> CellComplex:
    """`lift(graph, node_emb, edge_emb, **options)`, reading and writing the topology under `cache_dir`."""
    options = lifting_options(**options)
    path = cache_path(graph, cache_dir, **options)
    if path.parent not in _swept and path.parent.exists():
        atomic.remove_stale_temporaries(path.parent)
        _swept.add(path.parent)
    cc = _load(path, graph)
    if cc is None:
        cc = lift(graph, **options)
        _save(path, cc)
    if node_emb is None and edge_emb is None:
        return cc
    return cc.with_features(node_emb, edge_emb)


def _save(path: Path, cc: CellComplex) -> None:
    """Serialize the topology (no features) and write it atomically."""
    arrays = {name: getattr(cc, name) for name in _ARRAYS}
    tree_mask = np.zeros(0, dtype=bool) if cc.tree_mask is None else cc.tree_mask
    meta = json.dumps({"format": FORMAT_VERSION, "num_nodes": cc.num_nodes, "has_tree": cc.tree_mask is not None,
                       "options": cc.options})
    buffer = io.BytesIO()
    np.savez(buffer, meta=np.array(meta), tree_mask=tree_mask, **arrays)
    atomic.write_bytes(path, buffer.getvalue())


def _load(path: Path, graph: TextualGraph) -> CellComplex | None:
    """The cached complex, or None when there is no file; a corrupt or mismatched file warns and gives None."""
    if not path.exists():
        return None
    try:
        with open(path, "rb") as f, np.load(f, allow_pickle=False) as data:
            meta = json.loads(str(data["meta"]))
            arrays = {name: data[name] for name in _ARRAYS}
            tree_mask = data["tree_mask"] if meta["has_tree"] else None
        cc = CellComplex(meta["num_nodes"], tree_mask=tree_mask, options=meta["options"], **arrays)
        _check_loaded(cc, meta, graph)
    except Exception as err:  # a damaged file can fail in many ways (zip, json, key, shape): recompute it
        warnings.warn(f"recomputing unreadable lifting cache file {path}: {err!r}", stacklevel=3)
        return None
    return cc


def _check_loaded(cc: CellComplex, meta: dict, graph: TextualGraph) -> None:
    """Raise ValueError unless `cc` is a well-formed complex of `graph`."""
    ptr = cc.cell_ptr
    src = np.fromiter(map(itemgetter(0), graph.edges), np.int64, graph.num_edges)
    dst = np.fromiter(map(itemgetter(1), graph.edges), np.int64, graph.num_edges)
    problems = [
        meta["format"] != FORMAT_VERSION,
        cc.num_nodes != graph.num_nodes,
        not (np.array_equal(cc.edge_src, src) and np.array_equal(cc.edge_dst, dst)),
        len(ptr) != len(cc.cell_generator) + 1 or ptr[0] != 0 or np.any(np.diff(ptr) < 0),
        not (ptr[-1] == len(cc.cell_nodes) == len(cc.cell_edges) == len(cc.cell_signs)),
        len(cc.cell_nodes) > 0 and not (0 <= cc.cell_nodes.min() and cc.cell_nodes.max() < graph.num_nodes),
        len(cc.cell_edges) > 0 and not (0 <= cc.cell_edges.min() and cc.cell_edges.max() < graph.num_edges),
        cc.tree_mask is not None and len(cc.tree_mask) != graph.num_edges,
    ]
    if any(problems):
        raise ValueError("cached complex does not match its graph")
