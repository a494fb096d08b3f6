"""Figures for the notebooks. Each function returns a matplotlib Figure; `save` writes PNG and SVG."""

from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import pandas as pd
import seaborn as sns


def save(fig: plt.Figure, path: str | Path) -> Path:
    """Write `path` (PNG) and the same figure as SVG beside it."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=150, bbox_inches="tight")
    fig.savefig(path.with_suffix(".svg"), bbox_inches="tight")
    return path


def dataset_histograms(per_graph: pd.DataFrame) -> plt.Figure:
    """Per dataset (rows): histograms of nodes, edges and independent cycles per graph (columns)."""
    columns = [("nodes", "nodes per graph"), ("edges", "edges per graph"),
               ("independent_cycles", "independent cycles per graph (|E|-|V|+c)")]
    names = list(dict.fromkeys(per_graph.dataset))
    fig, axes = plt.subplots(len(names), 3, figsize=(12, 2.4 * len(names)), squeeze=False)
    for r, name in enumerate(names):
        part = per_graph[per_graph.dataset == name]
        for c, (column, title) in enumerate(columns):
            ax = axes[r, c]
            values = part[column]
            discrete = values.max() - values.min() < 40
            sns.histplot(values, ax=ax, color=sns.color_palette()[c], discrete=discrete, bins="auto")
            ax.set_xlabel(title if r == len(names) - 1 else "")
            ax.set_ylabel(f"{name}\ngraphs" if c == 0 else "")
    fig.tight_layout()
    return fig
