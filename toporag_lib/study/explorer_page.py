"""The question explorer's views as HTML (`study.explorer`): one question's block (its complex and each shown
method's retrieved subcomplex in one figure, every run's answer beside the label, the text each method's LLM read),
shown by notebook 08's widgets, and the static page of the core pairs' disagreements that the notebook writes to
`results/`, self-contained (figures embedded as base64 PNG).

    html = question_html(explorer.view("explagraphs", 1474, shown=[a, b]), highlight=[a.label, b.label])
    write_page(explorer, results_dir() / "08_explorer.html")
"""

from __future__ import annotations

import base64
import io
import re
from collections.abc import Sequence
from html import escape
from pathlib import Path

import matplotlib

from toporag_lib import atomic
from toporag_lib.study.explorer import Explorer, QuestionView
from toporag_lib.study.explorer_sections import PairSection, pair_sections, sample_rest
from toporag_lib.study.method_reads import one_line, question_line

PANEL = (3.6, 3.2)  # inches per panel
DPI = 72  # enough for the node texts; keeps a figure at tens of kB


def _names(labels: Sequence[str]) -> str:
    """The runs' names (a label is "name · seed · hash"), each once."""
    return ", ".join(dict.fromkeys(label.split(" · ")[0] for label in labels))


def figure(view: QuestionView, max_panels: int = 4):
    """The question's complex (all 2-cells shaded) and, beside it, each distinct subcomplex its shown inputs
    retrieved (`plots.draw_complex`: retrieved nodes and edges red, retrieved 2-cells filled); runs whose
    subcomplexes are equal share a panel. At most `max_panels` panels in all."""
    import matplotlib.pyplot as plt

    from toporag_lib.study import plots

    panels: list[tuple[object, object, str]] = [(view.complex, None, f"the complex · {_counts(view.complex)}")]
    seen: dict[tuple, int] = {}
    for item in view.inputs:
        if item.sub is None:
            continue
        key = (tuple(item.sub.nodes.tolist()), tuple(item.sub.edges.tolist()), tuple(item.sub.cells2.tolist()),
               item.complex.num_cells(2))
        if key in seen:
            cc, sub, title = panels[seen[key]]
            panels[seen[key]] = (cc, sub, title.replace(" · ", f", {_names(item.runs)} · ", 1))
            continue
        counts = item.sub.counts()
        seen[key] = len(panels)
        panels.append((item.complex, item.sub, f"{_names(item.runs)} · {counts['0-cells']} nodes, "
                                               f"{counts['1-cells']} edges, {counts['2-cells']} 2-cells"))
    panels = panels[:max_panels]
    graph = view.sample.graph
    pos = plots.layout(graph)
    with matplotlib.rc_context({"font.size": 8}):
        fig, axes = plt.subplots(1, len(panels), figsize=(PANEL[0] * len(panels), PANEL[1]), squeeze=False)
        for ax, (cc, sub, title) in zip(axes[0], panels):
            plots.draw_complex(graph, cc, ax, pos=pos, sub=sub, title="\n".join(_wrap(title, 52)),
                               show_edge_labels=graph.num_edges <= 16)
        fig.subplots_adjust(left=0.01, right=0.99, bottom=0.01, top=0.86, wspace=0.04)  # tight_layout: 0.3 s
    return fig


def _counts(cc) -> str:
    return f"{cc.num_cells(0)} nodes, {cc.num_cells(1)} edges, {cc.num_cells(2)} 2-cells"


def _wrap(text: str, width: int) -> list[str]:
    lines, line = [], ""
    for word in text.split(" "):
        if line and len(line) + 1 + len(word) > width:
            lines.append(line)
            line = word
        else:
            line = f"{line} {word}".strip()
    return [*lines, line]


def png_data_uri(fig, dpi: int = DPI, colors: int = 64) -> str:
    """The figure as a base64 PNG data URI, reduced to a palette of `colors` (a third of the bytes; the figures are
    flat colours); the figure is closed."""
    import matplotlib.pyplot as plt
    from PIL import Image

    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=dpi)
    plt.close(fig)
    image = Image.open(io.BytesIO(buffer.getvalue())).convert("RGB").quantize(colors, dither=Image.Dither.NONE)
    buffer = io.BytesIO()
    image.save(buffer, format="png", optimize=True)
    return "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode()


def anchor(dataset: str, index: int) -> str:
    return "q-" + re.sub(r"[^A-Za-z0-9]+", "-", f"{dataset}-{index}").strip("-")


STYLE = """
body { font-family: system-ui, sans-serif; margin: 1.5em auto; max-width: 1200px; color: #222; }
h1 { font-size: 1.5em; } h2 { font-size: 1.2em; margin-top: 2em; border-bottom: 1px solid #ccc; }
h3 { font-size: 1.05em; }
table { border-collapse: collapse; margin: .5em 0; font-size: .9em; }
td, th { border: 1px solid #ddd; padding: 2px 6px; text-align: left; vertical-align: top; }
td:last-child { white-space: nowrap; }
.right { color: #1e7d32; } .wrong { color: #b71c1c; } .pair td { font-weight: 600; } .stale { color: #888; }
.question { white-space: pre-wrap; background: #f6f6f6; padding: .5em; border-left: 3px solid #888; }
.block { margin: 1.5em 0 3em; } .label { font-size: 1.05em; } img { max-width: 100%; }
pre { white-space: pre-wrap; background: #fbfbf3; border: 1px solid #e6e6cc; padding: .5em; font-size: .82em; }
details { margin: .4em 0; } summary { cursor: pointer; } .note { color: #8a5a00; font-size: .9em; }
"""


def answers_table(view: QuestionView, highlight: Sequence[str] = ()) -> str:
    """Every run's answer: the highlighted runs first, then by name and seed; right green, wrong red."""
    order = sorted(view.answers, key=lambda a: (a.run not in highlight, a.name, a.seed, a.run))
    rows = []
    for a in order:
        verdict = '<span class="right">✓ right</span>' if a.correct else '<span class="wrong">✗ wrong</span>'
        stale = f' <span class="stale">(superseded: {escape(a.superseded)})</span>' if a.superseded else ""
        rows.append(f'<tr class="{"pair" if a.run in highlight else ""}"><td>{escape(a.run)}{stale}</td>'
                    f'<td class="answer">{escape(a.pred)}</td><td>{verdict}</td></tr>')
    return ("<table class=\"answers\"><tr><th>run (name · seed · config)</th><th>answer</th><th>verdict</th></tr>"
            + "".join(rows) + "</table>")


def inputs_html(view: QuestionView, open_first: int = 2) -> str:
    """Per shown input: who read it, the retrieval, the soft prompt, and the user turn its LLM read."""
    parts = []
    for k, item in enumerate(view.inputs):
        counts = item.counts()
        retrieved = (f"{counts['0-cells']} nodes, {counts['1-cells']} edges, {counts['2-cells']} 2-cells"
                     if counts else "not recomputed")
        retrieved += f"; a text of {item.tokens} tokens" if item.tokens is not None else ""
        soft = f"<br>before the text: {escape(item.soft_prompt)}" if item.soft_prompt else ""
        note = f'<div class="note">{escape(item.note)}</div>' if item.note else ""
        body = f"<pre>{escape(item.prompt)}</pre>" if item.prompt else ""
        parts.append(f"<details{' open' if k < open_first else ''}><summary><b>{escape(_names(item.runs))}</b> read "
                     f"({escape(retrieved)})</summary><div>runs: {escape('; '.join(item.runs))}<br>retrieval: "
                     f"{escape(item.retrieval)}{soft}</div>{note}{body}</details>")
    return "".join(parts)


def question_html(view: QuestionView, highlight: Sequence[str] = (), with_figure: bool = True,
                  heading: str = "", dpi: int = DPI) -> str:
    """One question's block: question, label and family, the figure, every run's answer, what each shown method
    read."""
    title = heading or f"{view.dataset} · question {view.index}"
    image = (f'<img alt="the complex of question {view.index} and the retrieved subcomplexes" '
             f'src="{png_data_uri(figure(view), dpi)}">' if with_figure else "")
    return (f'<div class="block" id="{anchor(view.dataset, view.index)}"><h3>{escape(title)}</h3>'
            f'<div class="question">{escape(view.question)}</div>'
            f'<p class="label">label: <b>{escape(view.label)}</b> · family: {escape(view.family)} · '
            f'graph: {view.sample.graph.num_nodes} nodes, {view.sample.graph.num_edges} edges, '
            f'{view.complex.num_cells(2)} 2-cells</p>{image}'
            f'<h4>what every run answered</h4>{answers_table(view, highlight)}'
            f'<h4>what the LLM read (the user turn of its chat template)</h4>{inputs_html(view)}</div>')


def page_html(explorer: Explorer, sections: Sequence[PairSection], rest: dict[str, tuple[list[int], tuple]],
              blocks: dict[tuple[str, int], str]) -> str:
    """The page: per section the two runs, their disagreement counts and links to the drawn questions; then the
    sample of other questions; then every drawn question's block (`blocks`, by (dataset, index))."""
    out = [f"<!doctype html><html><head><meta charset=\"utf-8\"><title>TopoRAG question explorer</title>"
           f"<style>{STYLE}</style></head><body><h1>Question explorer: where runs disagree</h1>"
           f"<p>Generated from the ledger (<code>results/runs/</code>, {len(explorer.runs)} runs) by notebook "
           f"<code>08_explorer</code>. Per pair of runs on the same test "
           f"questions: the questions where one was right and the other wrong, a few of them drawn below (their "
           f"complex, each run's retrieved subcomplex, the text its LLM read, every ledger run's answer). "
           f"JupyterLab's notebook 08 shows any question.</p>"
           f"<p>In the figures: the question's graph lifted to its complex (filled polygons: 2-cells; dashed edges: "
           f"not in the spanning tree), then each method's retrieved subcomplex on it (red nodes and edges, filled "
           f"2-cells; grey: left out). The text is what the method's config builds for the question, recomputed "
           f"through the training pipeline; the answers are the ledger's.</p>"]
    for r in explorer.left_out():
        out.append(f'<p class="note">left out: run {escape(r.label)}: {escape(r.problem)}</p>')
    for s in sections:
        out.append(f"<h2>{escape(s.dataset)}, {escape(s.setting)}: {escape(s.a.name)} vs {escape(s.b.name)} "
                   f"(seed {s.a.seed})</h2>"
                   f"<p>runs {escape(s.a.run_id)} and {escape(s.b.run_id)}: {s.both} test questions answered by "
                   f"both; <b>{len(s.a_right)}</b> where only {escape(s.a.name)} is right, <b>{len(s.b_right)}</b> "
                   f"where only {escape(s.b.name)} is right. Drawn below:</p>")
        out.append(_question_list(explorer, s.dataset, s.shown, (s.a, s.b)))
        out.append(_disagreement_table(explorer, s, set(blocks)))
    out.append("<h2>A sample of the other test questions</h2>")
    for dataset, (indices, runs) in rest.items():
        if indices:
            out.append(f"<h3>{escape(dataset)}</h3>{_question_list(explorer, dataset, indices, runs)}")
    out.append("<h2>The questions</h2>")
    out += blocks.values()
    out.append("</body></html>")
    return "\n".join(out)


def _question_list(explorer: Explorer, dataset: str, indices: Sequence[int], runs: Sequence) -> str:
    data = explorer.dataset(dataset)
    items = []
    for i in indices:
        said = "; ".join(f"{r.name}: {explorer.predictions(r)[i]['pred']!s} "
                         f"({'right' if explorer.correct(dataset, explorer.predictions(r)[i]) else 'wrong'})"
                         for r in runs)
        caption = escape(question_line(data[i].question, 110))
        items.append(f'<li><a href="#{anchor(dataset, i)}">question {i}</a> · {caption} · '
                     f"label <b>{escape(data[i].label)}</b>{' · ' + escape(said) if said else ''}</li>")
    return "<ul>" + "".join(items) + "</ul>"


def _disagreement_table(explorer: Explorer, s: PairSection, drawn: set[tuple[str, int]]) -> str:
    """Every disagreement of a section, folded: question (linked where drawn), label and the two answers."""
    data = explorer.dataset(s.dataset)
    rows = []
    for i in sorted([*s.a_right, *s.b_right]):
        name = f'<a href="#{anchor(s.dataset, i)}">{i}</a>' if (s.dataset, i) in drawn else str(i)
        rows.append(f"<tr><td>{name}</td><td>{escape(question_line(data[i].question, 70))}</td>"
                    f"<td>{escape(data[i].label)}</td>"
                    + "".join(f'<td class="{"right" if explorer.correct(s.dataset, r.predictions[i]) else "wrong"}">'
                              f"{escape(one_line(str(r.predictions[i]['pred']), 30))}</td>" for r in (s.a, s.b))
                    + "</tr>")
    return (f"<details><summary>all {len(rows)} questions where they disagree</summary><table><tr><th>question"
            f"</th><th></th><th>label</th><th>{escape(s.a.name)}</th><th>{escape(s.b.name)}</th></tr>"
            + "".join(rows) + "</table></details>")


def write_page(explorer: Explorer, path: str | Path, per_pair: int = 6, rest_per_dataset: int = 2,
               seed: int = 0) -> Path:
    """Write the static page to `path`: `pair_sections` (up to `per_pair` disagreements drawn per pair) and
    `sample_rest` (`rest_per_dataset` other questions per question set), each question drawn once with the inputs
    of the runs of the first section that shows it (for the sample: of the first pair the question set has)."""
    sections = pair_sections(explorer, per_pair=per_pair, seed=seed)
    rest = sample_rest(explorer, sections, rest_per_dataset, seed)
    blocks: dict[tuple[str, int], str] = {}
    for s in sections:
        for i in s.shown:
            if (s.dataset, i) not in blocks:
                view = explorer.view(s.dataset, i, shown=[s.a, s.b])
                blocks[(s.dataset, i)] = question_html(view, highlight=[s.a.label, s.b.label], heading=(
                    f"{s.dataset} · question {i} · {s.a.name} vs {s.b.name}"))
    for dataset, (indices, runs) in rest.items():
        for i in indices:
            view = explorer.view(dataset, i, shown=list(runs) or None)
            blocks[(dataset, i)] = question_html(view, highlight=[r.label for r in runs])
    path = Path(path)
    atomic.write_text(path, page_html(explorer, sections, rest, blocks))
    return path
