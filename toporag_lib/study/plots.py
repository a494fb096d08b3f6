"""Figures for the notebooks. Each function returns a matplotlib Figure; `save` writes PNG and SVG."""

from __future__ import annotations

import re
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns

from toporag_lib.data.registry import dataset_spec


def save(fig: plt.Figure, path: str | Path) -> Path:
    """Write `path` (PNG) and the same figure as SVG beside it; the same figure gives the same bytes (no date in
    the SVG, element ids salted with a constant), so a re-run that changed nothing leaves results/ unchanged."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=150, bbox_inches="tight")
    with plt.rc_context({"svg.hashsalt": "toporag"}):
        fig.savefig(path.with_suffix(".svg"), bbox_inches="tight", metadata={"Date": None})
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


def layout(graph, seed: int = 0) -> dict[int, tuple[float, float]]:
    """A deterministic 2-D layout: Kamada-Kawai per connected component, components side by side by size."""
    import networkx as nx

    g = nx.Graph()
    g.add_nodes_from(range(graph.num_nodes))
    g.add_edges_from((s, d) for s, d, _ in graph.edges if s != d)
    pos, left = {}, 0.0
    for component in sorted(nx.connected_components(g), key=lambda c: (-len(c), min(c))):
        part = g.subgraph(sorted(component))
        coords = nx.kamada_kawai_layout(part) if len(part) > 2 else nx.spring_layout(part, seed=seed)
        xy = np.array([coords[v] for v in part])
        scale = np.sqrt(len(part))
        xy = (xy - xy.min(0)) / max(np.ptp(xy, axis=0).max(), 1e-9) * scale
        for v, (x, y) in zip(part, xy):
            pos[v] = (left + x, y)
        left += xy[:, 0].max() + 0.6
    return pos


BOX = re.compile(r"\(x,y,w,h\): \((-?\d+), (-?\d+), (-?\d+), (-?\d+)\)")


def scene_layout(graph) -> dict[int, tuple[float, float]]:
    """Scene-graph nodes placed at their bounding boxes' centres (image y points down); `layout` otherwise."""
    boxes = [BOX.search(text) for text in graph.nodes]
    if not all(boxes):
        return layout(graph)
    centres = {v: (int(m[1]) + int(m[3]) / 2, -(int(m[2]) + int(m[4]) / 2)) for v, m in enumerate(boxes)}
    rng = np.random.default_rng(0)  # separate objects that share a centre
    return {v: (x + rng.uniform(-3, 3), y + rng.uniform(-3, 3)) for v, (x, y) in centres.items()}


def _short(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def _parallel_offsets(graph) -> np.ndarray:
    """Curvature of each edge so that parallel edges between the same two nodes fan out (0 for a single edge)."""
    groups: dict[tuple[int, int], list[int]] = {}
    for j, (s, d, _) in enumerate(graph.edges):
        groups.setdefault((min(s, d), max(s, d)), []).append(j)
    rad = np.zeros(graph.num_edges)
    for (lo, _), members in groups.items():
        for k, j in enumerate(members):
            bend = 0.25 * (k - (len(members) - 1) / 2)
            rad[j] = bend if graph.edges[j][0] == lo else -bend
    return rad


def _bent_midpoint(a, b, rad: float) -> np.ndarray:
    """Midpoint of matplotlib's arc3 curve from a to b with curvature `rad`."""
    a, b = np.asarray(a), np.asarray(b)
    mid, delta = (a + b) / 2, b - a
    return mid + rad * np.array([delta[1], -delta[0]]) / 2


def _cell_outline(cc, c: int, pos, rad: np.ndarray) -> list:
    """Polygon of a 2-cell: its boundary vertices, with each edge's bend (so a digon shows as a lens)."""
    nodes, edges, _, _ = cc.cell(c)
    points = []
    for i, edge in enumerate(edges):
        a, b = pos[int(nodes[i])], pos[int(nodes[(i + 1) % len(nodes)])]
        s = int(cc.edge_src[edge])
        bend = rad[edge] if s == int(nodes[i]) else -rad[edge]
        points += [np.asarray(a), _bent_midpoint(a, b, bend)]
    return points


def draw_complex(graph, cc, ax=None, pos=None, sub=None, title: str = "", label_width: int = 14,
                 show_edge_labels: bool | None = None) -> plt.Axes:
    """Draw a cell complex: 2-cells as translucent filled polygons (one colour each), spanning-tree edges solid,
    the other edges dashed (parallel edges fan out), nodes with their (shortened) text.

    With `sub` (a retrieval.Subcomplex) the retrieved cells are highlighted by dimension (nodes and edges in red,
    retrieved 2-cells filled) and the rest is greyed out.
    """
    from matplotlib.patches import Polygon

    ax = ax or plt.subplots(figsize=(6, 5))[1]
    pos = pos or layout(graph)
    rad = _parallel_offsets(graph)
    palette = sns.color_palette("husl", max(1, cc.num_cells(2)))
    picked_nodes = set(sub.nodes.tolist()) if sub is not None else set(range(graph.num_nodes))
    picked_edges = set(sub.edges.tolist()) if sub is not None else set(range(graph.num_edges))
    picked_cells = set(sub.cells2.tolist()) if sub is not None else set(range(cc.num_cells(2)))
    for c in sorted(picked_cells):
        ax.add_patch(Polygon(_cell_outline(cc, c, pos, rad), closed=True, alpha=0.28, color=palette[c],
                             linewidth=0, zorder=0))
    tree = cc.tree_mask if cc.tree_mask is not None else np.zeros(graph.num_edges, dtype=bool)
    labels = show_edge_labels if show_edge_labels is not None else graph.num_edges <= 16
    for j, (s, d, text) in enumerate(graph.edges):
        if s == d:
            continue
        on = j in picked_edges
        colour = ("#c0392b" if sub is not None else "#333333") if on else "#cccccc"
        ax.annotate("", xy=pos[d], xytext=pos[s], zorder=1,
                    arrowprops=dict(arrowstyle="-|>", color=colour, lw=2.0 if tree[j] else 1.0,
                                    linestyle="-" if tree[j] else "--", shrinkA=9, shrinkB=9,
                                    connectionstyle=f"arc3,rad={rad[j]:.3f}"))
        if labels and on:
            ax.text(*_bent_midpoint(pos[s], pos[d], rad[j]), _short(text, label_width), fontsize=6,
                    color="#555555", ha="center", va="center", zorder=2)
    for v in range(graph.num_nodes):
        on = v in picked_nodes
        face = ("#f5b7b1" if sub is not None else "#d6eaf8") if on else "#f2f2f2"
        ax.text(*pos[v], _short(graph.nodes[v].split(";")[0], label_width), fontsize=7, ha="center",
                va="center", zorder=3, color="black" if on else "#aaaaaa",
                bbox=dict(boxstyle="round,pad=0.25", fc=face, ec="#888888" if on else "#dddddd", lw=0.6))
    xy = np.array([pos[v] for v in range(graph.num_nodes)])
    pad = 0.15 * max(np.ptp(xy[:, 0]), np.ptp(xy[:, 1]), 1e-3)
    ax.set_xlim(xy[:, 0].min() - pad, xy[:, 0].max() + pad)
    ax.set_ylim(xy[:, 1].min() - pad, xy[:, 1].max() + pad)
    ax.set_title(title, fontsize=9)
    ax.set_aspect("equal")
    ax.axis("off")
    return ax


def cell_length_histograms(per_cell: pd.DataFrame, per_graph: pd.DataFrame) -> plt.Figure:
    """Per dataset (rows): 2-cells per graph and 2-cell boundary lengths (columns), one colour per lifting variant."""
    names = list(dict.fromkeys(per_graph.dataset))
    fig, axes = plt.subplots(len(names), 2, figsize=(11, 2.6 * len(names)), squeeze=False)
    for r, name in enumerate(names):
        graphs = per_graph[per_graph.dataset == name]
        cells = per_cell[per_cell.dataset == name]
        first_variant = graphs[graphs.variant == graphs.variant.iloc[0]]  # the count is the same for every basis
        sns.histplot(first_variant, x="cells2", discrete=first_variant.cells2.max() < 40, color="grey",
                     ax=axes[r, 0])
        if len(cells):
            sns.histplot(cells, x="length", hue="variant", element="step", fill=False, discrete=True,
                         stat="percent", common_norm=False, ax=axes[r, 1], legend=r == 0)
        axes[r, 0].set_ylabel(f"{name}\ngraphs")
        axes[r, 1].set_ylabel("% of 2-cells")
        axes[r, 0].set_xlabel("2-cells per graph (the same under every basis)" if r == len(names) - 1 else "")
        axes[r, 1].set_xlabel("2-cell length (boundary edges)" if r == len(names) - 1 else "")
    fig.tight_layout()
    return fig


def coverage_grid(coverage: pd.DataFrame) -> plt.Figure:
    """Answer coverage per question family (panels) against C2, one line per k2 for TopoRAG, baselines dashed."""
    families = [f for f in ("attribute", "path", "loop") if f in set(coverage.family)]
    fig, axes = plt.subplots(1, len(families), figsize=(4.6 * len(families), 3.6), sharey=True, squeeze=False)
    ours = coverage[coverage.method == "TopoRAG"]
    baselines = coverage[coverage.method != "TopoRAG"]
    for ax, family in zip(axes[0], families):
        part = ours[ours.family == family]
        sns.lineplot(part, x="c2", y="covers_answer", hue="k2", marker="o", palette="viridis", ax=ax,
                     legend=family == families[0])
        for k, (name, row) in enumerate(baselines[baselines.family == family].set_index("method").iterrows()):
            ax.axhline(row.covers_answer, ls="--", lw=1, color=sns.color_palette("Set1")[k], label=name)
        ax.set_title(f"{family} questions")
        ax.set_xlabel("C2 (penalty per boundary edge)")
        ax.set_ylabel("answer coverage")
    handles, labels = axes[0, 0].get_legend_handles_labels()
    if axes[0, 0].get_legend():
        axes[0, 0].get_legend().remove()
    fig.legend(handles, labels, loc="center left", bbox_to_anchor=(1.0, 0.5), title="TopoRAG k2 / baselines")
    fig.tight_layout()
    return fig


def loss_curves(histories: dict[tuple[str, str], pd.DataFrame], smooth: int = 10) -> plt.Figure:
    """One panel per dataset: training loss per step (rolling mean) per method; validation loss per epoch as dots."""
    datasets = list(dict.fromkeys(name for name, _ in histories))
    fig, axes = plt.subplots(1, max(1, len(datasets)), figsize=(6 * max(1, len(datasets)), 3.8), squeeze=False)
    for ax, dataset in zip(axes[0], datasets):
        for k, ((name, method), history) in enumerate(h for h in histories.items() if h[0][0] == dataset):
            steps = history[history.step.notna()].reset_index(drop=True)
            if steps.empty:
                continue
            colour = sns.color_palette()[k % 10]
            ax.plot(steps.index + 1, steps.loss.rolling(smooth, min_periods=1).mean(), color=colour, label=method)
            epochs = history[history.val_loss.notna()]
            steps_per_epoch = len(steps) / max(1, len(epochs))
            ax.scatter((epochs.epoch + 1) * steps_per_epoch, epochs.val_loss, color=colour, marker="o", s=30)
        ax.set_title(f"{dataset}: training loss (line), validation loss (dots)")
        ax.set_xlabel("optimizer step")
        ax.set_ylabel("answer-token cross-entropy")
        ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def variant_bars(summary: pd.DataFrame, title: str = "") -> plt.Figure:
    """Accuracy per variant (groups) and score column (bars: overall, then per question family), with the standard
    deviation over seeds as error bars. `summary` is `experiments.mean_and_std` output."""
    columns = [c for c in summary if (c == "score" or c.startswith("acc_")) and not c.endswith("_std")]
    fig, ax = plt.subplots(figsize=(1.6 + 1.1 * len(summary) * max(1, len(columns)) / 2, 3.8))
    width = 0.8 / len(columns)
    x = np.arange(len(summary))
    for k, column in enumerate(columns):
        errors = summary.get(f"{column}_std")
        ax.bar(x + (k - (len(columns) - 1) / 2) * width, summary[column], width,
               yerr=None if errors is None else errors.fillna(0), capsize=3,
               label="all questions" if column == "score" else column.removeprefix("acc_"))
    ax.set_xticks(x, summary.iloc[:, 0], rotation=15, ha="right")
    ax.set_ylabel("accuracy")
    ax.set_ylim(0, 1)
    ax.set_title(title)
    ax.legend(fontsize=8, ncols=len(columns))
    fig.tight_layout()
    return fig


def budget_frontier(budget: pd.DataFrame, marked: dict[str, str]) -> plt.Figure:
    """Loop evidence recall and path answer coverage (95% intervals) against mean prompt tokens, one point per
    retrieval setting of `study.floors_and_evidence.budget_table`; the methods in `marked` (name -> label) are drawn apart."""
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.8), sharex=True)
    for ax, (rate, title) in zip(axes, (("loop_evidence_recall", "loop questions: whole loop retrieved"),
                                        ("path_covers_answer", "path questions: answer object retrieved"))):
        errors = np.abs(budget[[f"{rate}_lo", f"{rate}_hi"]].to_numpy().T - budget[rate].to_numpy())
        ax.errorbar(budget.tokens, budget[rate], yerr=errors, fmt="o", color="0.6", ms=4, lw=0.8,
                    label="TopoRAG, other budgets")
        for (method, label), marker in zip(marked.items(), "*sD^v"):
            row = budget[budget.method == method]
            ax.plot(row.tokens, row[rate], marker, ms=11, label=label)
        ax.set_xlabel("mean prompt tokens of the retrieved text")
        ax.set_ylim(0, 1.02)
        ax.set_title(title, fontsize=10)
    axes[0].set_ylabel("share of questions")
    axes[1].legend(fontsize=8, loc="lower right")
    fig.tight_layout()
    return fig


def sensitivity(panels: dict[str, tuple[pd.DataFrame, str]], ys: list[str]) -> plt.Figure:
    """One panel per title in `panels` ((frame, x column)): each column of `ys` against x, with `<y>_std` as error
    bars where the frame has it."""
    fig, axes = plt.subplots(1, len(panels), figsize=(4.6 * len(panels), 3.6), squeeze=False)
    for ax, (title, (frame, x)) in zip(axes[0], panels.items()):
        for y in (c for c in ys if c in frame):
            errors = frame.get(f"{y}_std")
            ax.errorbar(frame[x], frame[y], yerr=None if errors is None else errors.fillna(0), marker="o",
                        capsize=3, label="all questions" if y == "score" else y.removeprefix("acc_"))
        ax.set_xlabel(x)
        ax.set_xticks(sorted(frame[x].unique()))
        ax.set_ylim(0, 1)
        ax.set_title(title)
        ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


WEBQSP_NODES = round(dataset_spec("webqsp").paper_stats["avg_nodes"])  # marked on the scaling plots


def loglog_plot(table: pd.DataFrame, value: str, fitted: pd.Series, ylabel: str, ax: plt.Axes | None = None,
                min_nodes: int = 100) -> plt.Axes:
    """`value` against nodes on log-log axes, one line per operation, its fitted slope in the legend."""
    ax = ax or plt.subplots(figsize=(7, 4.5))[1]
    for what, part in table.groupby("what", sort=False):
        ax.loglog(part.nodes, part[value], marker="o", label=f"{what} (slope {fitted.get(what, float('nan')):.2f})")
    ax.axvline(WEBQSP_NODES, color="grey", ls=":", lw=1)
    ax.text(WEBQSP_NODES, ax.get_ylim()[1], " WebQSP scale", color="grey", fontsize=8, va="top")
    ax.set_xlabel(f"nodes |V| (random multigraphs; slopes fitted on |V| >= {min_nodes})")
    ax.set_ylabel(ylabel)
    ax.legend(fontsize=8)
    ax.grid(True, which="both", alpha=0.2)
    return ax


def memory_plot(per_size: pd.DataFrame, per_step: pd.DataFrame, fitted: pd.Series, min_nodes: int) -> plt.Figure:
    """Left: peak extra memory of lifting and retrieval against graph size. Right: resident memory of a train step."""
    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 4.2), gridspec_kw={"width_ratios": [1.6, 1]})
    loglog_plot(per_size, "extra_mb", fitted, "peak extra memory (MiB, tracemalloc)", left, min_nodes)
    x = np.arange(len(per_step))
    right.bar(x - 0.2, per_step.rss_before_mb, 0.4, label="before the steps (LLM, data, model)")
    right.bar(x + 0.2, per_step.peak_rss_mb, 0.4, label="peak during the steps")
    for k, row in enumerate(per_step.itertuples()):
        right.text(k + 0.2, row.peak_rss_mb, f"+{row.extra_mb:.0f}", ha="center", va="bottom", fontsize=8)
    right.set_xticks(x, per_step.method)
    right.set_ylim(0, 1.35 * per_step.peak_rss_mb.max())
    right.set_ylabel("resident memory (MiB)")
    right.set_title("train steps, a fresh process per method", fontsize=9)
    right.legend(fontsize=8, loc="upper left")
    fig.tight_layout()
    return fig
