"""The question explorer's data (`study.explorer`), its HTML (`study.explorer_page`) and widgets, on a small ledger
written here (`tests/explorer_ledger.py`: runs on limited splits of the small testbed and of ExplaGraphs, answers
chosen by a rule): each view holds the trainer's own subcomplex and text for the question and every run's answer."""

from __future__ import annotations

import base64
import json
import re
from html.parser import HTMLParser

import pytest
import torch

from explorer_ledger import SCENES, WRONG, rule, write_ledger, write_record
from toporag_lib.data import load_dataset
from toporag_lib.study.explorer import Explorer, ExplorerError, dataset_key
from toporag_lib.study.explorer_sections import pair_sections
from toporag_lib.study.explorer_page import anchor, question_html, write_page
from toporag_lib.topology.batching import ComplexData
from toporag_lib.training.record_check import RecordError
from toporag_lib.training.trainer import run_questions

CYCLE_TABLE = "cell_id,cycle"
SCENES_KEY = dataset_key("synthetic_scenes", SCENES)


@pytest.fixture(scope="module")
def ledger(tmp_path_factory, tiny_encoder_path):
    """(ledger folder, the trainer's test examples per (dataset, name)), built once with a module-wide cache."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("TOPORAG_CACHE", str(tmp_path_factory.mktemp("explorer_cache")))
        folder = tmp_path_factory.mktemp("explorer") / "runs"
        examples = write_ledger(folder, tiny_encoder_path)
        yield folder, examples


@pytest.fixture(scope="module")
def explorer(ledger):
    return Explorer(ledger[0])


def run_of(explorer: Explorer, dataset: str, name: str):
    return next(r for r in explorer.runs_of(dataset) if r.name == name)


def test_a_limited_runs_predictions_are_mapped_to_dataset_indices(explorer, ledger):
    run = run_of(explorer, SCENES_KEY, "TopoRAG")
    dataset = load_dataset("synthetic_scenes", **SCENES)
    splits, kept = run_questions(run.train_config, dataset)
    assert sorted(run.predictions) == splits["test"]
    for example in ledger[1][("synthetic_scenes", "TopoRAG")]:
        i = kept[example.index]
        assert run.predictions[i]["question"] == dataset[i].question == example.question
    assert explorer.test_questions(SCENES_KEY) == splits["test"]
    assert explorer.datasets() == sorted(["explagraphs", SCENES_KEY])


@pytest.mark.parametrize("dataset, key", [("synthetic_scenes", SCENES_KEY), ("explagraphs", "explagraphs")])
def test_each_view_holds_the_trainers_subcomplex_and_text_and_every_answer(explorer, ledger, dataset, key):
    names = [n for d, n in ledger[1] if d == dataset and n != "SubgraphRAG"]
    runs = [run_of(explorer, key, name) for name in names]
    kept = run_questions(runs[0].train_config, explorer.dataset(key))[1]
    for position, example in enumerate(ledger[1][(dataset, names[0])]):
        i = kept[example.index]
        view = explorer.view(key, i, shown=runs)
        assert view.question + runs[0].train_config.question_suffix == example.question
        assert view.label == example.label
        assert {a.name: (a.pred, a.correct) for a in view.answers} == {
            name: (example.label if rule(name, position) else WRONG, rule(name, position))
            for d, name in ledger[1] if d == dataset}
        assert [item.runs for item in view.inputs] == [(r.label,) for r in runs]  # configured apart: one input each
        for run, item in zip(runs, view.inputs):
            made = ledger[1][(dataset, run.name)][position]
            assert item.text == made.text and item.question == made.question
            assert item.prompt == f"{made.text}\n{made.question}"
            assert item.sub.nodes.tolist() == made.complex.node_ids.tolist()
            assert item.sub.edges.tolist() == made.complex.edge_ids.tolist()
            assert item.sub.cells2.tolist() == made.complex.cell_ids.tolist()
            same = ComplexData.from_complex(item.complex, item.sub.nodes, item.sub.edges, item.sub.cells2)
            assert torch.equal(same.x0, made.complex.x0) and torch.equal(same.x1, made.complex.x1)  # same embeddings
            assert (CYCLE_TABLE in item.text) == (len(item.sub.cells2) > 0)
            assert "soft token" in item.soft_prompt


def test_a_fitted_retrievals_text_is_recomputed_only_when_asked(explorer, ledger):
    run = run_of(explorer, SCENES_KEY, "SubgraphRAG")
    made = ledger[1][("synthetic_scenes", "SubgraphRAG")][0]
    i = run_questions(run.train_config, explorer.dataset(SCENES_KEY))[1][made.index]
    item, = explorer.view(SCENES_KEY, i, shown=[run]).inputs
    assert item.sub is None and item.prompt == "" and "fit_retrievers=True" in item.note
    item, = Explorer(ledger[0], fit_retrievers=True).view(SCENES_KEY, i, shown=[run]).inputs
    assert item.text == made.text and item.text.startswith("Below are the facts")
    assert item.sub.edges.tolist() == made.complex.edge_ids.tolist() and item.soft_prompt == ""


def test_with_count_tokens_the_prompt_is_the_text_cut_where_its_llm_cut_it(ledger, tmp_path):
    from tiny_models import CHATML, make_tiny_model
    from transformers import AutoTokenizer

    llm = make_tiny_model(tmp_path / "tiny_llm", CHATML)
    source = next(p for p in ledger[0].glob("explagraphs-*/record.json")
                  if json.loads(p.read_text())["name"] == "TopoRAG")
    record = json.loads(source.read_text())
    predictions = [json.loads(line) for line in (source.parent / "predictions_test.jsonl").read_text().splitlines()]
    folder = tmp_path / "runs"
    write_record(folder, "TopoRAG", {**record["config"], "llm_path": str(llm), "max_txt_len": 8}, predictions)
    explorer = Explorer(folder, count_tokens=True)
    i = explorer.test_questions("explagraphs")[0]
    item, = explorer.view("explagraphs", i).inputs
    ids = AutoTokenizer.from_pretrained(llm)(item.text, add_special_tokens=False).input_ids
    assert item.tokens == len(ids) > 8 and "read the first 8 of this text's" in item.note
    cut = AutoTokenizer.from_pretrained(llm).decode(ids[:8])
    assert item.prompt == f"{cut}\n{item.question}" and len(cut) < len(item.text)
    plain, = Explorer(folder).view("explagraphs", i).inputs
    assert plain.tokens is None and plain.prompt == f"{plain.text}\n{plain.question}"
    assert "over 8 characters" in plain.note


def test_only_topoRAG_reads_2_cells_and_some_question_shows_them(explorer, ledger):
    runs = [run_of(explorer, SCENES_KEY, n) for n in ("TopoRAG", "G-Retriever", "TopoRAG w/o CRL (no 2-cells)")]
    cells = {r.name: 0 for r in runs}
    for i in explorer.test_questions(SCENES_KEY):
        for run, item in zip(runs, explorer.view(SCENES_KEY, i, shown=runs).inputs):
            cells[run.name] += len(item.sub.cells2)
    assert cells["TopoRAG"] > 0 and cells["G-Retriever"] == cells["TopoRAG w/o CRL (no 2-cells)"] == 0


def test_disagreements_are_the_questions_one_run_got_right_and_the_other_wrong(explorer):
    a, b = run_of(explorer, SCENES_KEY, "TopoRAG"), run_of(explorer, SCENES_KEY, "G-Retriever")
    order = sorted(a.predictions, key=lambda i: a.predictions[i]["index"])  # the runs' positions
    expected = sorted(i for k, i in enumerate(order) if rule("TopoRAG", k) != rule("G-Retriever", k))
    assert explorer.disagreements(SCENES_KEY, a, b) == expected and expected
    options = explorer.question_options(SCENES_KEY, None, a, b)
    assert [i for _, i in options] == expected
    assert all(("right: TopoRAG" in caption) == rule("TopoRAG", order.index(i)) for caption, i in options)
    family = explorer.families(SCENES_KEY)[0]
    assert set(explorer.disagreements(SCENES_KEY, a, b, family)) <= set(expected)
    assert explorer.pair(SCENES_KEY, "TopoRAG", "G-Retriever") == (a, b)
    assert explorer.pair(SCENES_KEY, "TopoRAG", "KAPING") is None


def test_an_index_out_of_range_or_not_answered_is_refused(explorer):
    size = len(explorer.dataset(SCENES_KEY))
    for bad in (-1, size, 10**6):
        with pytest.raises(ExplorerError, match=f"out of range: {re.escape(SCENES_KEY)} has questions 0 to "
                                                f"{size - 1}"):
            explorer.view(SCENES_KEY, bad)
    train = explorer.dataset(SCENES_KEY).split["train"][0]
    with pytest.raises(ExplorerError, match=f"question {train} of .* is in the train split"):
        explorer.view(SCENES_KEY, train)
    with pytest.raises(ExplorerError, match="no run in the ledger answered 'webqsp'"):
        explorer.view("webqsp", 0)


def test_a_run_without_predictions_or_with_foreign_ones_is_refused_by_name(ledger, tmp_path, tiny_encoder_path):
    folder = tmp_path / "runs"
    folder.mkdir()
    for path in ledger[0].glob("*/record.json"):  # the explagraphs runs, plus two broken ones
        record = json.loads(path.read_text())
        if record["config"]["dataset"] == "explagraphs":
            (folder / path.parent.name).mkdir()
            for name in ("record.json", "predictions_test.jsonl"):
                (folder / path.parent.name / name).write_bytes((path.parent / name).read_bytes())
            config = record["config"]
    source = [json.loads(line) for line in next(folder.glob("*/predictions_test.jsonl")).read_text().splitlines()]
    foreign = [{**p, "question": "another question"} for p in source]
    write_record(folder, "GNN-RAG", {**config, "seed": 8}, foreign)
    explorer = Explorer(folder)
    stray = explorer.find(f"explagraphs-{_digest(config, 8)}")
    assert "match no question set" in stray.problem
    assert set(explorer.left_out()) == {stray} and stray not in explorer.runs_of("explagraphs")
    i = explorer.test_questions("explagraphs")[0]
    with pytest.raises(ExplorerError, match=f"run {re.escape(stray.label)} .* cannot be shown"):
        explorer.view("explagraphs", i, runs=[stray])
    with pytest.raises(ExplorerError, match="cannot be shown"):
        explorer.disagreements("explagraphs", stray, explorer.runs_of("explagraphs")[0])
    missing = write_record(folder, "TopoRAG + LoRA", {**config, "seed": 7}, source)
    (missing / "predictions_test.jsonl").unlink()  # the ledger refuses the whole folder, naming the file
    with pytest.raises(RecordError, match=f"{re.escape(str(missing))}.*predictions"):
        Explorer(folder)


def _digest(config: dict, seed: int) -> str:
    from toporag_lib.training.ledger import config_digest

    return config_digest({**config, "seed": seed})


class Text(HTMLParser):
    """The page's text per question block (`div.block` by id), and its images."""

    def __init__(self):
        super().__init__()
        self.blocks: dict[str, list[str]] = {}
        self.images: list[str] = []
        self.current: str | None = None
        self.depth = 0

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "div":
            if "block" in (attrs.get("class") or "").split():
                self.current, self.depth = attrs["id"], 0
                self.blocks[self.current] = []
            self.depth += 1
        if tag == "img":
            self.images.append(attrs["src"])

    def handle_endtag(self, tag):
        if tag == "div" and self.current:
            self.depth -= 1
            if self.depth == 0:
                self.current = None

    def handle_data(self, data):
        if self.current:
            self.blocks[self.current].append(data)


def test_the_static_page_shows_each_drawn_questions_label_and_every_runs_answer(explorer, tmp_path):
    page = write_page(explorer, tmp_path / "08_explorer.html", per_pair=2, rest_per_dataset=1)
    html = page.read_text()
    parsed = Text()
    parsed.feed(html)
    sections = pair_sections(explorer, per_pair=2)
    assert [(s.dataset, s.a.name, s.b.name) for s in sections] == [
        ("explagraphs", "TopoRAG", "G-Retriever"), (SCENES_KEY, "TopoRAG", "TopoRAG w/o CRL (no 2-cells)"),
        (SCENES_KEY, "TopoRAG", "G-Retriever")]
    drawn = {(s.dataset, i) for s in sections for i in s.shown}
    assert len(parsed.blocks) >= len(drawn) and all(len(s.shown) == 2 for s in sections)
    for (dataset, i) in drawn:
        text = " ".join(" ".join(parsed.blocks[anchor(dataset, i)]).split())
        view = explorer.view(dataset, i, shown=[])
        assert " ".join(view.question.split()) in text
        assert f"label: {view.label}" in text
        for answer in view.answers:
            assert f"{answer.run} {answer.pred} {'✓ right' if answer.correct else '✗ wrong'}" in text
    assert len(parsed.images) == len(parsed.blocks)
    for src in parsed.images:
        assert base64.b64decode(src.removeprefix("data:image/png;base64,"))[:8] == b"\x89PNG\r\n\x1a\n"
    assert page.stat().st_size < 400_000
    for s in sections:
        assert f"<b>{len(s.a_right)}</b> where only {s.a.name} is right" in html


def test_question_html_names_a_question_and_escapes_its_text(explorer):
    i = explorer.test_questions("explagraphs")[0]
    view = explorer.view("explagraphs", i)
    html = question_html(view, with_figure=False)
    assert "<img" not in html and f"question {i}" in html and "Argument 1:" in html
    assert "&#x27;support&#x27;" in html  # the task's quotes, escaped


def test_the_widgets_list_the_disagreements_and_show_a_refusal(explorer):
    from toporag_lib.study import explorer_widgets

    app = explorer_widgets.explorer_app(explorer, SCENES_KEY)
    dataset, _, run_a, run_b, _, question, buttons, status, shown = app.children
    _, forward, index, go = buttons.children
    a, b = explorer.find(run_a.value), explorer.find(run_b.value)
    assert (a.name, b.name) == ("TopoRAG", "TopoRAG w/o CRL (no 2-cells)")  # the first core pair it has
    assert [i for _, i in question.options] == explorer.disagreements(SCENES_KEY, a, b)
    assert f"label: <b>" in shown.value and "data:image/png;base64," in shown.value
    index.value = 10**6
    go.click()
    assert "refused" in status.value and "out of range" in status.value
    run_b.value = explorer.pair(SCENES_KEY, "TopoRAG", "G-Retriever")[1].run_id
    assert [i for _, i in question.options] == explorer.disagreements(SCENES_KEY, a, explorer.find(run_b.value))
    first = question.value
    forward.click()
    assert question.value != first and f"question {question.value}" in shown.value
    dataset.value = "explagraphs"
    assert explorer.find(run_a.value).dataset == "explagraphs" and question.options
