"""The long-run queue: job lists, and the lock that keeps two processes off one run."""

from __future__ import annotations

import os
import subprocess
import sys

from toporag_lib.study import llm_testbed
from toporag_lib.study.experiments import TABLE1_METHODS


def test_every_job_keeps_one_at_a_time_embeddings_so_the_series_stays_one():
    for suite in llm_testbed.SUITES.values():
        assert all(job.config().embedding_batching == "single" for job in suite())


def test_table1_suite_covers_every_method_on_both_full_splits_untrained_first():
    jobs = llm_testbed.table1_jobs()
    assert {(j.method, j.dataset) for j in jobs} == {(m, d) for m in TABLE1_METHODS
                                                     for d in ("explagraphs", "synthetic_scenes")}
    trained = [j.config().train for j in jobs]
    assert trained == sorted(trained)  # every inference-only run comes before the first trained one


def test_a_run_held_by_a_live_process_is_skipped_and_a_dead_holder_is_taken_over(tmp_path):
    job = llm_testbed.table1_jobs()[0]
    first = llm_testbed.claim(job, tmp_path)
    assert first is not None and first.read_text() == str(os.getpid())
    assert llm_testbed.claim(job, tmp_path) == first  # the holder itself may go on
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        first.write_text(str(other.pid))
        assert llm_testbed.claim(job, tmp_path) is None  # a live process holds it
    finally:
        other.kill()
        other.wait()
    assert llm_testbed.claim(job, tmp_path) == first and first.read_text() == str(os.getpid())  # gone: taken over


def _record(name: str, seed: int, right: list[bool]) -> dict:
    from toporag_lib.training.config import TrainConfig
    config = TrainConfig(dataset="synthetic_scenes", seed=seed).to_dict()
    families = ["loop", "loop", "path", "attribute"]
    return {"name": name, "config": config,
            "predictions": [{"index": i, "label": "yes", "pred": "yes" if r else "no", "family": families[i]}
                            for i, r in enumerate(right)]}


def test_pooled_pair_averages_each_question_over_the_common_seeds():
    records = [_record("TopoRAG", 42, [True, True, False, True]), _record("TopoRAG", 43, [True, False, False, True]),
               _record("G-Retriever", 42, [False, True, False, True]),
               _record("G-Retriever", 43, [False, False, True, True]),
               _record("TopoRAG", 44, [False, False, False, False])]  # G-Retriever lacks seed 44: left out
    table = llm_testbed.pooled_pair(records).set_index("family")
    assert table.loc["all", "seeds"] == "42, 43" and table.loc["all", "n"] == 4
    assert table.loc["loop", "score_a"] == 0.75 and table.loc["loop", "score_b"] == 0.25
    assert table.loc["loop", "diff"] == 0.5 and table.loc["path", "diff"] == -0.5
    assert table.loc["all", "diff"] == (1 + 0 - 0.5 + 0) / 4
    # TopoRAG's loop answers: yes, yes (seed 42) and yes, no (43); G-Retriever's: no, yes and no, no
    assert table.loc["loop", "one_answer_a"] == 0.75 and table.loc["loop", "one_answer_b"] == 0.75
    assert table.loc["path", "one_answer_a"] == 1.0
    assert llm_testbed.pooled_pair(records[:2]).empty  # no common seed
