"""The recipe search: every run scored on validation only, recorded in its own ledger."""

from __future__ import annotations

import dataclasses
import json

from tiny_models import CHATML, make_tiny_model

from toporag_lib import atomic, hardware
from toporag_lib.generation.soft_prompt import ModelConfig
from toporag_lib.study import recipe_search
from toporag_lib.study.experiments import config_digest
from toporag_lib.training.ledger import RECORD, run_id
from toporag_lib.training.run_files import read_predictions
from toporag_lib.training.train_config import TrainConfig


def test_every_recipe_selects_on_the_validation_score_with_early_stopping_and_differs_in_its_schedule():
    configs = [job.config() for job in recipe_search.jobs()]
    assert all(c.select_by == "val_score" and c.patience == 2 and c.epochs in {recipe_search.MAX_EPOCHS, recipe_search.PAPER_MAX_EPOCHS}
               for c in configs)
    for dataset in {c.dataset for c in configs}:  # on each dataset, with and without 2-cells, recipes differ
        for k2 in {c.retrieval.k2 for c in configs if c.dataset == dataset}:
            mine = [c for c in configs if c.dataset == dataset and c.retrieval.k2 == k2]
            settings = {(c.schedule, c.warmup_ratio, c.lr, c.lora_lr, c.epochs, c.model.question_first, c.model.readout)
                        for c in mine}
            assert len(settings) == len(mine)
    assert all(c.limits.test is None and c.limits.val == recipe_search.SEARCH_LIMITS["val"] for c in configs)


def test_the_testbed_search_runs_on_version_3_with_and_without_2cells_at_its_retrieval():
    from toporag_lib.data.registry import TESTBED_V3_RETRIEVAL

    testbed = [job for job in recipe_search.jobs() if job.dataset == "synthetic_scenes"]
    assert testbed and all(job.config().dataset_options == {"version": 3} for job in testbed)
    assert all(job.config().retrieval.k1 == TESTBED_V3_RETRIEVAL["k1"] for job in testbed)
    with_cells = {(job.recipe, job.question_first): job.config() for job in testbed
                  if not job.ablation and job.readout == "mean"}
    without = {(job.recipe, job.question_first): job.config() for job in testbed if job.ablation}
    assert (recipe_search.TESTBED_FIRST_RECIPE, True) in without
    assert with_cells.keys() == without.keys()
    for key, config in without.items():  # the same run but for its 2-cells
        assert config.retrieval.k2 == 0 and with_cells[key].retrieval.k2 > 0
        assert config.to_dict() | {"retrieval": {}} == with_cells[key].to_dict() | {"retrieval": {}}


def test_question_first_changes_only_the_layout_the_cut_and_the_dtype_and_keeps_the_other_jobs_digests():
    first = {job.ablation: job for job in recipe_search.jobs()
             if job.question_first and job.version == 3 and job.readout == "mean"}
    for ablation, job in first.items():
        plain = recipe_search.Job(job.recipe, dataset=job.dataset, ablation=ablation, version=job.version)
        assert plain in recipe_search.jobs() and "question first" in job.name and "up to 1024 tokens" in job.name
        changed, base = job.config().to_dict(), plain.config().to_dict()
        assert changed["model"].pop("question_first") is True and base["model"].pop("question_first") is False
        assert (changed.pop("max_txt_len"), base.pop("max_txt_len")) == (1024, 512)
        assert changed.pop("llm_dtype") == "float32" and base.pop("llm_dtype") in ("float32", "bfloat16")
        assert changed == base
    assert len(first) == 2
    later = recipe_search.jobs()[12]  # ExplaGraphs' best recipe, question first: only the layout and the dtype differ
    changed, base = later.config().to_dict(), recipe_search.Job(later.recipe).config().to_dict()
    assert (changed["model"].pop("question_first"), changed.pop("llm_dtype")) == (True, "float32")
    assert (base["model"].pop("question_first"), base.pop("llm_dtype")) == (False, "bfloat16") and changed == base


def test_a_search_run_is_scored_on_validation_and_never_writes_test_predictions(tmp_path, tiny_encoder_path):
    llm = make_tiny_model(tmp_path / "llm", CHATML)
    config = TrainConfig.from_dict(dict(
        dataset="synthetic_scenes", dataset_options={"num_images": 8, "questions_per_image": 2, "seed": 1},
        limits={"train": 6, "val": 3, "test": 2}, encoder_path=str(tiny_encoder_path), llm_path=str(llm),
        llm_dtype="float32", epochs=2, batch_size=2, eval_batch_size=2, max_new_tokens=4, max_txt_len=48,
        select_by="val_score", model=ModelConfig(encoder="cellular", hidden_dim=16, projector_hidden=32,
                                                 num_layers=1)))
    folder = recipe_search.run_validation(config, "tiny", tmp_path / "runs", tmp_path / "ledger", progress=False)
    assert (folder / RECORD).exists() and not list(folder.glob("predictions_test*"))
    assert not list((tmp_path / "runs").rglob("predictions_test*"))
    assert len(read_predictions(folder / "predictions_val.jsonl")) == 3
    table = recipe_search.search_table(tmp_path / "ledger")
    assert table.n_val.tolist() == [3] and 0 < table.one_answer_share[0] <= 1
    labels = [p["label"] for p in read_predictions(folder / "predictions_val.jsonl")]  # the floor, on the same three
    assert table.majority[0] == max(labels.count(label) for label in labels) / 3
    assert recipe_search.val_score(config, tmp_path / "ledger") == table.val_score[0]
    assert recipe_search.val_score(dataclasses.replace(config, seed=7), tmp_path / "ledger") is None
    run = next((tmp_path / "runs").rglob("metrics_val.json")).parent
    assert [v["epoch"] for v in json.loads((run / "metrics_val.json").read_text())["validation"]] == [1, 2]


def test_one_answer_share_counts_the_most_common_answer():
    assert recipe_search.one_answer_share([{"pred": "Yes"}, {"pred": "yes "}, {"pred": "no"}]) == 2 / 3


def test_a_jobs_digest_does_not_depend_on_the_machine(monkeypatch):
    here = [config_digest(job.config()) for job in recipe_search.jobs()]
    for native in (True, False):  # "auto" would resolve to bfloat16 on one CPU and float32 on the other
        monkeypatch.setattr(hardware, "cpu_has_native_bf16", lambda native=native: native)
        assert [config_digest(job.config()) for job in recipe_search.jobs()] == here


def test_the_list_shows_where_an_unfinished_job_stands(tmp_path, monkeypatch):
    monkeypatch.setattr(recipe_search, "runs_dir", lambda: tmp_path)
    job = recipe_search.jobs()[10]
    assert recipe_search.progress_line(job) == ""  # not started
    run = tmp_path / job.dataset / config_digest(job.config())
    run.mkdir(parents=True)
    history = [{"epoch": 0, "step": 1, "loss": 1.0, "seconds": 2.0, "val_loss": None, "val_score": None},
               {"epoch": 0, "step": None, "loss": None, "seconds": None, "val_loss": 0.9, "val_score": 0.5404}]
    atomic.torch_save({"state": {"epoch": 1, "step": 50, "history": history}}, run / "checkpoint.pt")
    assert recipe_search.progress_line(job) == "at epoch 2, step 50; validation by epoch 1: 0.540"
    history.append({"epoch": 1, "step": None, "loss": None, "seconds": None, "val_loss": 0.8, "val_score": 0.58,
                    "val_by_family": {"attribute": {"accuracy": 0.864, "one_answer": 0.14},
                                      "loop": {"accuracy": 0.527, "one_answer": 0.86}}})
    atomic.torch_save({"state": {"epoch": 2, "step": 0, "history": history}}, run / "checkpoint.pt")
    assert recipe_search.progress_line(job) == (
        "at epoch 3, step 0; validation by epoch 1: 0.540, 2: 0.580; epoch 2 by family: attribute 0.864 "
        "(one answer 0.14); loop 0.527 (one answer 0.86)")  # where the last epoch kept its answers per family


def test_the_chosen_recipe_is_the_best_validation_score_once_every_candidate_is_recorded(monkeypatch):
    testbed = {i: job for i, job in enumerate(recipe_search.jobs()) if job.dataset == "synthetic_scenes"}
    scores = {10: 0.61, 13: 0.58}  # job 11 (without 2-cells) and the dropped jobs are no candidates
    ids = {i: run_id(job.config().to_dict()) for i, job in enumerate(recipe_search.jobs())}
    monkeypatch.setattr(recipe_search, "val_scores", lambda ledger=None: {
        ids[i]: score for i, score in scores.items() if score is not None})
    assert recipe_search.chosen("synthetic_scenes") == testbed[10]
    scores[12] = None  # another dataset's unfinished job does not hold this one up
    assert recipe_search.chosen("explagraphs") is None  # job 12 unfinished
    scores.update({0: 0.64, 1: 0.725, 2: 0.675, 3: 0.65, 5: 0.725, 12: 0.70})
    assert recipe_search.chosen("explagraphs") == recipe_search.jobs()[1]  # a tie goes to the first listed


def test_the_question_pooled_job_is_job_10_but_for_its_readout():
    pooled, plain = recipe_search.jobs()[13], recipe_search.jobs()[10]
    changed, base = pooled.config().to_dict(), plain.config().to_dict()
    assert (changed["model"].pop("readout"), base["model"].pop("readout")) == ("question", "mean")
    assert changed == base and "question-conditioned pool" in pooled.name
