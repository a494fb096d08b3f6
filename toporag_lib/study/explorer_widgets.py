"""The question explorer in JupyterLab (notebook 08): ipywidgets that choose a question set, a family, two runs and a
question (all test questions, or where the two runs disagree) and show `explorer_page.question_html` of it, the same
block the static page holds. Only wiring: the data come from `study.explorer`, the HTML from `study.explorer_page`.

    explorer_app(Explorer(results_dir() / "runs"))   # the last expression of a cell
"""

from __future__ import annotations

from toporag_lib.study.explorer import Explorer, ExplorerError
from toporag_lib.study.explorer_sections import CORE_PAIRS
from toporag_lib.study.explorer_page import STYLE, question_html

ALL, DISAGREE = "all test questions", "where A and B disagree"
EVERY_RUN = "every run that answered it"
DPI = 100  # sharper than the static page's figures, which are kept small


def _default_pair(explorer: Explorer, dataset: str) -> tuple[str | None, str | None]:
    """The run ids of the first core pair the question set has (`explorer_sections.CORE_PAIRS`), else its first two
    runs."""
    for a, b in CORE_PAIRS:
        if (pair := explorer.pair(dataset, a, b)) is not None:
            return pair[0].run_id, pair[1].run_id
    runs = explorer.runs_of(dataset)
    return (runs[0].run_id if runs else None), (runs[1].run_id if len(runs) > 1 else None)


def explorer_app(explorer: Explorer, dataset: str | None = None):
    """The widgets, wired: changing the question set, family, runs or mode refreshes the question list; choosing a
    question (or typing its index) shows it; an index out of range or a run without predictions shows the
    explorer's refusal instead."""
    import ipywidgets as w

    datasets = explorer.datasets()
    wide = w.Layout(width="95%")
    pick_dataset = w.Dropdown(options=datasets, value=dataset or datasets[0], description="dataset", layout=wide)
    pick_family = w.Dropdown(description="family")
    pick_mode = w.ToggleButtons(options=[ALL, DISAGREE], value=DISAGREE, style={"button_width": "190px"})
    pick_a, pick_b = w.Dropdown(description="run A", layout=wide), w.Dropdown(description="run B", layout=wide)
    pick_drawn = w.ToggleButtons(options=["runs A and B", EVERY_RUN], value="runs A and B",
                                 description="methods drawn", style={"button_width": "190px"})
    pick_question = w.Dropdown(description="question", layout=wide)
    index = w.IntText(description="or index")
    go, back, forward = w.Button(description="show index"), w.Button(description="◀ previous"), \
        w.Button(description="next ▶")
    status = w.HTML()
    shown = w.HTML()
    busy = {"refreshing": False}

    def show(i: int) -> None:
        try:
            runs = {r.run_id: r for r in explorer.runs}
            a, b = runs.get(pick_a.value), runs.get(pick_b.value)
            both = [r for r in (a, b) if r is not None]
            view = explorer.view(pick_dataset.value, i,
                                 shown=None if pick_drawn.value == EVERY_RUN else both)
            shown.value = f"<style>{STYLE}</style>" + question_html(view, highlight=[r.label for r in both], dpi=DPI)
            status.value = ""
        except ExplorerError as error:
            status.value = f'<p style="color:#b71c1c"><b>refused:</b> {error}</p>'

    def refresh_questions(*_) -> None:
        runs = {r.run_id: r for r in explorer.runs}
        a, b = runs.get(pick_a.value), runs.get(pick_b.value)
        family = None if pick_family.value == "all" else pick_family.value
        try:
            if pick_mode.value == DISAGREE:
                if a is None or b is None or a == b:
                    raise ExplorerError("choose two different runs A and B")
                options = explorer.question_options(pick_dataset.value, family, a, b)
            else:
                options = explorer.question_options(pick_dataset.value, family)
        except ExplorerError as error:
            options = []
            status.value = f'<p style="color:#b71c1c"><b>refused:</b> {error}</p>'
        busy["refreshing"] = True
        pick_question.options = options
        busy["refreshing"] = False
        status.value = status.value if not options else f"{len(options)} questions"
        if options:
            pick_question.value = options[0][1]
            show(options[0][1])
        else:
            shown.value = ""

    def refresh_dataset(*_) -> None:
        key = pick_dataset.value
        runs = [(f"{r.label}{' (superseded)' if r.superseded else ''}", r.run_id) for r in explorer.runs_of(key)]
        a, b = _default_pair(explorer, key)
        busy["refreshing"] = True
        pick_family.options = ["all", *explorer.families(key)]
        pick_family.value = "all"
        pick_a.options, pick_b.options = runs, runs
        pick_a.value, pick_b.value = a, b
        busy["refreshing"] = False
        refresh_questions()

    def on_question(change) -> None:
        if not busy["refreshing"] and change["new"] is not None:
            show(change["new"])

    def step(offset: int) -> None:
        values = [v for _, v in pick_question.options]
        if values and pick_question.value in values:
            pick_question.value = values[(values.index(pick_question.value) + offset) % len(values)]

    pick_dataset.observe(refresh_dataset, "value")
    for widget in (pick_family, pick_mode, pick_a, pick_b):
        widget.observe(lambda change: None if busy["refreshing"] else refresh_questions(), "value")
    pick_drawn.observe(lambda change: show(pick_question.value) if pick_question.value is not None else None,
                       "value")
    pick_question.observe(on_question, "value")
    go.on_click(lambda _: show(index.value))
    back.on_click(lambda _: step(-1))
    forward.on_click(lambda _: step(1))
    refresh_dataset()
    return w.VBox([pick_dataset, w.HBox([pick_family, pick_mode]), pick_a, pick_b, pick_drawn, pick_question,
                   w.HBox([back, forward, index, go]), status, shown])
