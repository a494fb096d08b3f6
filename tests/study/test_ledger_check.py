"""The ledger checks itself (`training.record_check`, through `ledger.read_record`): a record of the wrong shape, or
whose scores its own predictions do not give, is a named error; records scored before the testbed's metric changed
are read as such and marked; the committed ledger passes."""

from __future__ import annotations

import hashlib
import json
import math
import shutil
import time
from pathlib import Path

import pytest
from ledger_records import finished_run, predictions

from toporag_lib.paths import PROJECT_ROOT
from toporag_lib.study import ledger_tables, recipe_search, report
from toporag_lib.study.superseded import EARLIER_METRIC, superseded
from toporag_lib.training.ledger import RECORD, RecordError, ScoreMismatchError, read_ledger, record_run
from toporag_lib.training.train_config import TrainConfig

RUNS = PROJECT_ROOT / "results" / "runs"
TOPORAG_EXPLAGRAPHS = "explagraphs-7f32528715"  # TopoRAG on ExplaGraphs' 554 test questions: 0.681
TOPORAG_TESTBED = "synthetic_scenes-9a609311ef"  # TopoRAG on the testbed's 600, with families and `contains`
# The testbed's first records (commit 7a32772, 60 questions), scored by `label in prediction` before 309c81e
EARLIER_METRIC_RECORDS = {"synthetic_scenes-02fb012056", "synthetic_scenes-2f9c937d40", "synthetic_scenes-3c3eca198a",
                          "synthetic_scenes-782ef1ecbb", "synthetic_scenes-a729a5cfdf", "synthetic_scenes-e1738cc2f3"}


def copy_of(tmp_path: Path, *run_ids: str) -> Path:
    """A ledger in `tmp_path` holding copies of committed records (the committed files are never touched)."""
    ledger = tmp_path / "runs"
    for run_id in run_ids:
        shutil.copytree(RUNS / run_id, ledger / run_id)
    return ledger


def edit(ledger: Path, run_id: str, change) -> Path:
    path = ledger / run_id / RECORD
    record = json.loads(path.read_text())
    change(record)
    path.write_text(json.dumps(record, indent=1))
    return path


def test_a_copied_record_is_read_with_its_predictions_and_its_score_checked(tmp_path):
    (record,) = read_ledger(copy_of(tmp_path, TOPORAG_EXPLAGRAPHS))
    assert record["metrics"]["score"] == pytest.approx(0.6805, abs=1e-4) and len(record["predictions"]) == 554
    assert record["scored_under"] == "" and superseded(record) == ""


def test_an_edited_score_is_refused_naming_the_file_the_recorded_and_the_recomputed_score(tmp_path):
    ledger = copy_of(tmp_path, TOPORAG_EXPLAGRAPHS)
    path = edit(ledger, TOPORAG_EXPLAGRAPHS, lambda r: r["metrics"].update(score=0.999))
    with pytest.raises(ScoreMismatchError) as caught:
        read_ledger(ledger)
    error = caught.value
    assert error.path == path and error.field == "metrics.score" and error.recorded == 0.999
    assert error.recomputed == pytest.approx(377 / 554)  # what its predictions score
    assert str(path) in str(error) and "0.999" in str(error) and "predictions_test.jsonl" in str(error)
    with pytest.raises(ScoreMismatchError, match="0.999"):
        report.headline(tmp_path)  # the README's headline refuses it too
    with pytest.raises(ScoreMismatchError):
        report.results_readme(tmp_path, "cpu-quick")


def test_an_edited_family_or_secondary_score_is_refused_too(tmp_path):
    ledger = copy_of(tmp_path, TOPORAG_TESTBED)
    edit(ledger, TOPORAG_TESTBED, lambda r: r["metrics"]["per_family"].update(loop=0.9))
    with pytest.raises(ScoreMismatchError, match="metrics.per_family.loop"):
        read_ledger(ledger)
    edit(ledger, TOPORAG_TESTBED, lambda r: r["metrics"]["per_family"].update(loop=0.52))
    read_ledger(ledger)  # its real value
    edit(ledger, TOPORAG_TESTBED, lambda r: r["metrics"]["secondary"].update(contains=0.9))
    with pytest.raises(ScoreMismatchError, match="metrics.secondary.contains"):
        read_ledger(ledger)


def test_edited_predictions_are_refused_as_well(tmp_path):
    ledger = copy_of(tmp_path, TOPORAG_EXPLAGRAPHS)
    path = ledger / TOPORAG_EXPLAGRAPHS / "predictions_test.jsonl"
    lines = path.read_text().splitlines()
    first = json.loads(lines[0])
    lines[0] = json.dumps({**first, "pred": "counter" if first["pred"].startswith("support") else "support"})
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(ScoreMismatchError, match=TOPORAG_EXPLAGRAPHS):
        read_ledger(ledger)
    path.write_text("\n".join(lines[1:]) + "\n")  # one prediction fewer than n
    with pytest.raises(RecordError, match="`metrics.n` is 554, but predictions_test.jsonl holds 553"):
        read_ledger(ledger)
    path.unlink()
    with pytest.raises(RecordError, match="predictions_test.jsonl\\) are missing"):
        read_ledger(ledger)


def rename_metrics(record):
    record["scores"] = record.pop("metrics")


@pytest.mark.parametrize("change, field", [
    (rename_metrics, "metrics"),
    (lambda r: r.update(metrics=[r["metrics"]]), "metrics"),
    (lambda r: r["metrics"].update(score="0.681"), "metrics.score"),
    (lambda r: r["metrics"].update(score=float("nan")), "metrics.score"),
    (lambda r: r["metrics"].update(score=1.5), "metrics.score"),
    (lambda r: r["metrics"].update(score=True), "metrics.score"),
    (lambda r: r["metrics"].pop("score"), "metrics.score"),
    (lambda r: r["metrics"].update(n=554.0), "metrics.n"),
    (lambda r: r["metrics"].update(n=0), "metrics.n"),
    (lambda r: r["metrics"].update(per_family=[0.5]), "metrics.per_family"),
    (lambda r: r["metrics"].update(split="dev"), "metrics.split"),
    (lambda r: r["metrics"].update(dataset="synthetic_scenes"), "metrics.dataset"),
    (lambda r: r.pop("config"), "config"),
    (lambda r: r["config"].update(dataset="explagraph"), "config.dataset"),
    (lambda r: r["config"].update(seed="42"), "config.seed"),
    (lambda r: r["config"].update(limits=None), "config.limits"),
    (lambda r: r.update(name=""), "name"),
    (lambda r: r.update(run_id="explagraphs-0000000000"), "run_id"),
])
def test_a_record_of_the_wrong_shape_is_a_named_error(tmp_path, change, field):
    ledger = copy_of(tmp_path, TOPORAG_EXPLAGRAPHS)
    path = edit(ledger, TOPORAG_EXPLAGRAPHS, change)
    with pytest.raises(RecordError) as caught:
        read_ledger(ledger)
    assert caught.value.path == path and caught.value.field == field
    assert str(caught.value).startswith(f"{path}: `{field}` ")
    assert not isinstance(caught.value, ScoreMismatchError)


def test_a_record_that_is_a_list_is_a_named_error(tmp_path):
    ledger = copy_of(tmp_path, TOPORAG_EXPLAGRAPHS)
    path = ledger / TOPORAG_EXPLAGRAPHS / RECORD
    path.write_text(json.dumps([json.loads(path.read_text())]))
    with pytest.raises(RecordError, match=f"{path}: `\\(the record\\)` is a list"):
        read_ledger(ledger)


def test_the_recipe_search_table_reads_through_the_same_checks(tmp_path):
    search = PROJECT_ROOT / "results" / "recipe_search"
    run_id = sorted(p.parent.name for p in search.glob(f"*/{RECORD}"))[0]
    shutil.copytree(search / run_id, tmp_path / run_id)
    assert recipe_search.search_table(tmp_path).n_val.tolist() == [200]  # scored on its validation predictions
    edit(tmp_path, run_id, lambda r: r["metrics"].update(score="0.7"))
    with pytest.raises(RecordError, match="metrics.score"):
        recipe_search.search_table(tmp_path)


def test_the_testbeds_records_scored_before_exact_match_are_marked_and_never_averaged_with_later_ones(tmp_path):
    old = sorted(EARLIER_METRIC_RECORDS)[0]
    ledger = copy_of(tmp_path, *EARLIER_METRIC_RECORDS, TOPORAG_TESTBED)
    records = {r["run_id"]: r for r in read_ledger(ledger)}
    assert {k for k, r in records.items() if r["scored_under"]} == EARLIER_METRIC_RECORDS
    assert all(r["scored_under"] == "label in prediction" and superseded(r).startswith(EARLIER_METRIC)
               for k, r in records.items() if k in EARLIER_METRIC_RECORDS)
    table = ledger_tables.ledger_table(list(records.values()))
    assert set(table[table.n == 60].metric) == {"label in prediction (until 309c81e)"}
    assert set(table[table.n == 600].metric) == {"exact match"} and set(table[table.n == 600].superseded) == {""}
    assert "label in prediction (until 309c81e)" in report.table1(tmp_path)  # the all-runs table says so
    # Only a record without the metrics written since the change may be read under the earlier metric
    edit(ledger, old, lambda r: r["metrics"].update(secondary={"contains": r["metrics"]["score"]}))
    with pytest.raises(ScoreMismatchError, match=old):
        read_ledger(ledger)
    # and only when its scores are its predictions' under that metric
    edit(ledger, old, lambda r: (r["metrics"].pop("secondary"), r["metrics"].update(score=0.5)))
    with pytest.raises(ScoreMismatchError, match=f"{old}.*0.5"):
        read_ledger(ledger)


def test_record_run_refuses_a_run_whose_metrics_disagree_with_its_predictions_and_writes_nothing(tmp_path):
    config = TrainConfig(dataset="explagraphs", seed=42).to_dict()
    run = finished_run(tmp_path / "run", config, predictions("explagraphs", 0.5), score=0.75)
    with pytest.raises(ScoreMismatchError, match=f"{run}: `metrics.score` is 0.75"):
        record_run(run, tmp_path / "runs", "TopoRAG")
    assert not (tmp_path / "runs").exists()
    run = finished_run(tmp_path / "run", config, predictions("explagraphs", 0.5))
    (record,) = read_ledger(record_run(run, tmp_path / "runs", "TopoRAG").parent)
    assert record["metrics"]["score"] == 0.5


def digest(folder: Path) -> str:
    files = sorted(p for p in folder.rglob("*") if p.is_file())
    return hashlib.sha1(b"".join(p.name.encode() + p.read_bytes() for p in files)).hexdigest()


def test_the_committed_ledger_passes_every_check_quickly_and_is_left_as_it_is():
    """Every committed record (read only): its schema, and each score recomputed from its predictions. The six
    testbed records of commit 7a32772 agree with `label in prediction`, the testbed's metric before 309c81e, and are
    read (and marked) as such; every other one agrees with today's metric."""
    ledgers = [RUNS, PROJECT_ROOT / "results" / "recipe_search"]
    before = [digest(folder) for folder in ledgers]
    start = time.perf_counter()
    records = [r for folder in ledgers for r in read_ledger(folder)]
    seconds = time.perf_counter() - start
    assert len(records) == sum(len(list(folder.glob(f"*/{RECORD}"))) for folder in ledgers) >= 80
    assert {r["run_id"] for r in records if r["scored_under"]} == EARLIER_METRIC_RECORDS
    assert all(r["config"]["dataset"] == "synthetic_scenes" and r["metrics"]["n"] == 60
               and r["commit"].startswith("7a32772") for r in records if r["scored_under"])
    assert all(math.isfinite(r["metrics"]["score"]) for r in records)
    assert seconds < 20, f"reading the ledger took {seconds:.1f} s"
    assert [digest(folder) for folder in ledgers] == before
