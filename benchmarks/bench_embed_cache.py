"""Embedding benchmark: fill an empty cache with every text of a dataset, per batching mode, against plain batching.

In one process, with the model loaded once and on one thread for every row, the rows interleaved `--repeats` times
(fastest run kept, so that load from other processes shifts every row alike):
- reference: sentence-transformers' own `encode(distinct_texts, batch_size=64)`, no cache (vectors depend on
  their companions);
- `length` (the default), `single` and `batch64`: `embed_graphs` into an empty cache (texts deduplicated across
  the dataset, then encoded and written), and then a warm read of the same cache by a new encoder.
Targets (issue 21): `length` cold at most 1.3x the reference; warm at least 10x faster than cold.

    python benchmarks/bench_embed_cache.py [--dataset explagraphs] [--edge-text relation] [--out ...]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import pandas as pd

from toporag_lib.data import load_dataset
from toporag_lib.embed import TextEncoder, embed_graphs
from toporag_lib.seeding import one_torch_thread


def timed(run) -> float:
    start = time.perf_counter()
    run()
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", default="explagraphs")
    parser.add_argument("--edge-text", default="relation", choices=["relation", "triple"])
    parser.add_argument("--graphs", type=int, default=None, help="only the first N graphs")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--with-single", action="store_true", help="also time one-at-a-time encoding (slow)")
    parser.add_argument("--out", default="benchmarks/out/embed_cache.csv")
    args = parser.parse_args()
    graphs = load_dataset(args.dataset).graphs[:args.graphs]
    texts = [t for g in graphs for t in [*g.nodes, *(g.edge_texts if args.edge_text == "relation" else g.triples())]]
    distinct = list(dict.fromkeys(texts))
    model = TextEncoder(progress=False).model

    def reference() -> None:
        with one_torch_thread():
            model.encode(distinct, batch_size=64, show_progress_bar=False)

    def fill(batching: str | int) -> tuple[float, float]:
        with tempfile.TemporaryDirectory() as cache:
            encoder = TextEncoder(cache=cache, batching=batching, progress=False)
            encoder._model = model  # the same loaded model: model loading is not timed
            cold = timed(lambda: embed_graphs(graphs, encoder, args.edge_text))
            warm = timed(lambda: embed_graphs(graphs, TextEncoder(cache=cache, batching=batching, progress=False),
                                              args.edge_text))
        return cold, warm

    modes: list[str | int] = ["length", 64] + (["single"] if args.with_single else [])
    base, runs = float("inf"), {mode: (float("inf"), float("inf")) for mode in modes}
    for _ in range(args.repeats):
        base = min(base, timed(reference))
        for mode in modes:
            runs[mode] = tuple(map(min, runs[mode], fill(mode)))
    rows = [{"mode": "reference: plain batches of 64", "cold_s": round(base, 2), "x_reference": 1.0}]
    for mode, (cold, warm) in runs.items():
        rows.append({"mode": f"{mode if isinstance(mode, str) else f'batch{mode}'} (cached)", "cold_s": round(cold, 2),
                     "x_reference": round(cold / base, 2), "warm_s": round(warm, 3),
                     "cold_over_warm": round(cold / warm, 1)})
    table = pd.DataFrame(rows).assign(dataset=args.dataset, texts=len(texts), distinct=len(distinct))
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    table.to_csv(args.out, index=False)
    print(table.to_string(index=False))


if __name__ == "__main__":
    main()
