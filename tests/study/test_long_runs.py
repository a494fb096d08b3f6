"""The long-run queue: job lists, and the lock that keeps two processes off one run."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

from toporag_lib import atomic
from toporag_lib.paths import PROJECT_ROOT
from toporag_lib.study import job_queue, long_runs, parked_runs, recipe_search
from toporag_lib.study.experiments import NOT_APPLICABLE, TABLE1_METHODS
from toporag_lib.study.superseded import superseded
from toporag_lib.training.ledger import RECORD, read_ledger, run_id


def test_every_job_keeps_one_at_a_time_embeddings_so_the_series_stays_one():
    for suite in (long_runs.jobs, long_runs.table1_jobs):  # the core suite is a series of its own
        assert all(job.config().embedding_batching == "single" for job in suite())


def test_the_core_suite_waits_for_each_datasets_recipe_then_runs_it_for_every_row_in_float32(monkeypatch):
    picks = {"explagraphs": recipe_search.jobs()[12]}  # the testbed's search unfinished: no testbed jobs yet
    monkeypatch.setattr(recipe_search, "chosen", lambda dataset, ledger=None: picks.get(dataset))
    jobs = long_runs.core_jobs()
    assert {j.dataset for j in jobs} == {"explagraphs"}
    seeded = [(j.name, j.seed) for j in jobs if j.name in long_runs.CORE_SEEDED]
    assert seeded == [(name, seed) for seed in long_runs.SEEDS for name in long_runs.CORE_SEEDED]
    assert [j.name for j in jobs[len(seeded):]] == list(long_runs.CORE_ONCE)
    configs = {(j.name, j.seed): j.config() for j in jobs}
    recipe = picks["explagraphs"].config().to_dict()
    assert configs[("TopoRAG + LoRA", 42)].to_dict() == recipe | {"llm_dtype": "float32"}  # the chosen run itself
    for config in configs.values():
        assert (config.llm_dtype, config.model.question_first, config.lr, config.epochs) == (
            "float32", True, recipe["lr"], recipe["epochs"])
        assert config.limits.test is None and config.limits.train == recipe_search.SEARCH_LIMITS["train"]
    for seed in long_runs.SEEDS:  # without 2-cells: the same run but for its retrieval's k2
        full, ablated = (configs[(name, seed)].to_dict() for name in ("TopoRAG + LoRA", "TopoRAG + LoRA w/o CRL (no 2-cells)"))
        assert ablated["retrieval"]["k2"] == 0 and full["retrieval"]["k2"] > 0
        assert ablated | {"retrieval": {}} == full | {"retrieval": {}}


def test_table1_suite_covers_every_method_on_both_full_splits_untrained_first():
    jobs = long_runs.table1_jobs()
    assert {(j.method, j.dataset) for j in jobs} == {(m, d) for m in TABLE1_METHODS
                                                     for d in ("explagraphs", "synthetic_scenes")} - set(NOT_APPLICABLE)
    assert ("GNN-RAG", "synthetic_scenes") in {(j.method, j.dataset) for j in jobs} and NOT_APPLICABLE
    trained = [j.config().train for j in jobs]
    assert trained == sorted(trained)  # every inference-only run comes before the first trained one


def test_the_testbed_suite_ablates_toporag_frozen_and_with_lora_with_one_change_each():
    runs = {job.name: job.config() for job in long_runs.jobs() if job.dataset == "synthetic_scenes"}
    for base, lora in (("TopoRAG", False), ("TopoRAG + LoRA", True)):
        full = runs[base]
        no_cells, gcn = runs[f"{base} w/o CRL (no 2-cells)"], runs[f"{base} w/o MTR (GCN)"]
        shortest = runs[f"{base} w/o TSR (shortest path)"]
        assert full.model.lora is lora and all(c.model.lora is lora for c in (no_cells, gcn, shortest))
        assert (no_cells.retrieval.k2, full.retrieval.k2 > 0) == (0, True)
        assert (gcn.model.encoder, full.model.encoder) == ("gcn", "cellular")
        assert (shortest.retrieval.method, full.retrieval.method) == ("shortest_path", "toporag")


def test_a_run_held_by_a_live_process_is_skipped_and_a_dead_holder_is_taken_over(tmp_path):
    job = long_runs.table1_jobs()[0]
    first = job_queue.claim(job, tmp_path)
    assert first is not None and json.loads(first.path.read_text())["pid"] == os.getpid()
    again = job_queue.claim(job, tmp_path)  # the holder itself may go on
    assert again is not None and again.path == first.path
    again.release()
    first.release()
    assert not first.path.exists()
    holder = ("import sys, time; from toporag_lib import locks; held = locks.acquire(sys.argv[1]); "
              "print('held', flush=True); time.sleep(60)")
    other = subprocess.Popen([sys.executable, "-c", holder, str(first.path)], stdout=subprocess.PIPE, text=True)
    try:
        assert other.stdout.readline().strip() == "held"
        assert job_queue.claim(job, tmp_path) is None  # a live process holds it
    finally:
        other.kill()  # killed while holding it: its lock file stays, its lock does not
        other.wait()
    assert json.loads(first.path.read_text())["pid"] == other.pid
    taken = job_queue.claim(job, tmp_path)
    assert taken is not None and json.loads(taken.path.read_text())["pid"] == os.getpid()
    taken.release()


def test_a_shard_takes_every_nth_job_and_jobs_run_as_listed_or_are_refused():
    assert job_queue.selected(7, "1/3") == [1, 4] and job_queue.selected(7, "0/1") == list(range(7))
    assert job_queue.selected(7, "1/3", "6,2") == [6, 2]  # --jobs wins over the shard, in its order
    with pytest.raises(SystemExit, match="no job 7"):
        job_queue.selected(7, "0/1", "2,7")
    with pytest.raises(SystemExit, match="expected i/n"):
        job_queue.selected(7, "3/3")


def test_a_job_is_done_when_the_ledger_holds_its_record_and_main_then_skips_it(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("TOPORAG_RESULTS", str(tmp_path))
    monkeypatch.setattr(parked_runs, "PARKED_DIR", tmp_path / "parked")
    job = long_runs.jobs()[0]
    assert not long_runs.is_done(job)
    record = tmp_path / "runs" / run_id(job.config().to_dict()) / RECORD
    record.parent.mkdir(parents=True)
    record.write_text("{}")
    assert long_runs.is_done(job) and not long_runs.is_done(long_runs.jobs()[1])

    def no_training(*args, **kwargs):
        raise AssertionError("a job in the ledger was run again")

    monkeypatch.setattr(long_runs, "run_cached", no_training)
    long_runs.main(["--jobs", "0"])
    assert "is in the results ledger: skipped" in capsys.readouterr().out


def test_the_committed_ledger_holds_the_first_fourteen_testbed_jobs_under_their_current_config_hash():
    # A change to a config default that moved the hash would silently queue hours of finished runs again.
    # The one intended re-key: a baseline whose old ExplaGraphs runs read TopoRAG's cycle table (`study.superseded`).
    ledger = PROJECT_ROOT / "results" / "runs"
    old = {(r["name"], r["config"]["dataset"]) for r in read_ledger(ledger)
           if superseded(r) and not r["scored_under"]}  # records scored under an earlier metric are not re-keyed
    todo = [job for job in long_runs.jobs()[:14] if not long_runs.is_done(job, ledger)]
    assert all((job.name, job.dataset) in old for job in todo), todo


def test_park_carries_an_unfinished_run_and_the_next_queue_puts_it_back_then_releases_it_when_recorded(
        tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(parked_runs, "PARKED_DIR", tmp_path / "parked")
    job = long_runs.jobs()[14]
    run = long_runs.runs_dir() / job.dataset / f"run-{long_runs.config_digest(job.config())}"
    run.mkdir(parents=True)
    (run / "config.json").write_text("{}")
    atomic.torch_save({"state": {"epoch": 0, "step": 100}}, run / "checkpoint.pt")
    long_runs.main(["--park"])
    assert "at epoch 0, step 100" in capsys.readouterr().out
    shutil.rmtree(long_runs.runs_dir())  # a fresh checkout: no run cache, the parked copy committed
    monkeypatch.setattr(long_runs, "run_cached", lambda *args: None)  # the training itself is tested elsewhere
    long_runs.main(["--jobs", "14"])
    assert "from its parked checkpoint (epoch 0, step 100)" in capsys.readouterr().out
    assert parked_runs.progress(run) == (0, 100) and not list((tmp_path / "parked").iterdir())  # done: released


def test_a_core_job_the_recipe_search_trained_is_scored_on_test_with_the_weights_a_fresh_run_ends_with(
        tmp_path, tiny_encoder_path, monkeypatch):
    from types import SimpleNamespace

    from tiny_models import CHATML, make_tiny_model

    from toporag_lib.generation.soft_prompt import ModelConfig
    from toporag_lib.study.experiments import run_cached
    from toporag_lib.training.run_files import read_metrics, read_predictions
    from toporag_lib.training.train_config import TrainConfig

    llm = make_tiny_model(tmp_path / "llm", CHATML)
    config = TrainConfig.from_dict(dict(
        dataset="synthetic_scenes", dataset_options={"num_images": 8, "questions_per_image": 2, "seed": 1},
        limits={"train": 6, "val": 3, "test": 2}, encoder_path=str(tiny_encoder_path), llm_path=str(llm),
        llm_dtype="float32", epochs=2, batch_size=2, eval_batch_size=2, max_new_tokens=4, max_txt_len=48,
        lr=1e-2, select_by="val_score", model=ModelConfig(encoder="cellular", hidden_dim=16, projector_hidden=32,
                                                          num_layers=1)))
    monkeypatch.setattr(recipe_search, "runs_dir", lambda: tmp_path / "search")
    monkeypatch.setattr(long_runs, "runs_dir", lambda: tmp_path / "core")
    job = SimpleNamespace(name="TopoRAG + LoRA", dataset="synthetic_scenes", config=lambda: config)
    assert long_runs.adopt_search_run(job) is None  # nothing trained yet
    recipe_search.run_validation(config, "search", tmp_path / "search", tmp_path / "search_ledger", progress=False)
    adopted = long_runs.adopt_search_run(job)
    assert adopted is not None and (adopted / "best.pt").exists()
    run_cached(config, job.name, tmp_path / "core", progress=False, ledger=tmp_path / "ledger")
    fresh = tmp_path / "fresh"
    run_cached(config, job.name, fresh, progress=False, ledger=tmp_path / "ledger2")
    scored = [read_metrics(next(root.rglob("metrics_test.json")).parent, "test") for root in (adopted, fresh)]
    assert scored[0] == scored[1] | {k: scored[0][k] for k in ("seconds_per_step", "minutes_per_epoch")
                                     if k in scored[0]}
    searched = read_metrics(next((tmp_path / "search").rglob("metrics_val.json")).parent, "val")
    assert scored[0]["seconds_per_step"] == searched["seconds_per_step"]  # not trained again: the search's timings
    predictions = [read_predictions(next(root.rglob("predictions_test.jsonl"))) for root in (adopted, fresh)]
    assert predictions[0] == predictions[1]
    assert long_runs.adopt_search_run(job) is None  # the job's run exists now: nothing is copied over it
