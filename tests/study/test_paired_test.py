"""Paired comparison of two runs: counts by hand, McNemar's exact p-value, errors on runs that do not pair."""

from __future__ import annotations

import json
from math import comb, isnan

import pytest

from toporag_lib.data import metrics
from toporag_lib.study.paired_test import (
    compare_runs,
    main,
    mcnemar_exact,
    paired_comparison,
)
from toporag_lib.training.run_files import write_predictions


def records(preds: list[str], labels: list[str], start: int = 0) -> list[dict]:
    return [{"index": start + i, "label": y, "pred": p, "family": ""} for i, (p, y) in enumerate(zip(preds, labels))]


LABELS = ["support", "counter", "support", "counter", "support"]
RUN_A = records(["support", "counter", "Counter", "no idea", "support"], LABELS)  # right on 0, 1, 4
RUN_B = records(["counter", "counter", "support", "counter", "SUPPORT"], LABELS)  # right on 1, 2, 3


def test_counts_and_scores_by_hand():
    out = paired_comparison(RUN_A, RUN_B, "explagraphs", ("topo", "gr"))
    assert (out["both"], out["only_a"], out["only_b"], out["neither"]) == (1, 2, 2, 0)
    assert (out["a"], out["b"], out["n"]) == ("topo", "gr", 5)
    assert out["score_a"] == metrics.explagraphs_accuracy([r["pred"] for r in RUN_A], LABELS) == 0.6
    assert out["score_b"] == 0.6
    assert out["mcnemar_p"] == pytest.approx(1.0)


def test_order_of_records_does_not_matter():
    assert paired_comparison(RUN_A, RUN_B[::-1], "explagraphs") == paired_comparison(RUN_A, RUN_B, "explagraphs")


@pytest.mark.parametrize("only_a, only_b", [(10, 0), (0, 10), (68, 51), (3, 7), (1, 1)])
def test_mcnemar_is_the_two_sided_binomial_tail(only_a, only_b):
    n, k = only_a + only_b, min(only_a, only_b)
    tail = sum(comb(n, i) for i in range(k + 1)) / 2 ** n
    assert mcnemar_exact(only_a, only_b) == pytest.approx(min(1.0, 2 * tail))


def test_mcnemar_edge_cases():
    assert mcnemar_exact(0, 0) == 1.0
    assert mcnemar_exact(10, 0) == pytest.approx(2 / 2 ** 10)
    with pytest.raises(ValueError, match="non-negative"):
        mcnemar_exact(-1, 3)


def test_runs_that_do_not_pair_are_errors():
    with pytest.raises(ValueError, match="different questions.*e.g. \\[0, 5\\]"):
        paired_comparison(RUN_A, records(["support"] * 5, LABELS, start=1), "explagraphs", ("x", "y"))
    relabelled = [dict(r, label="counter") if r["index"] == 2 else r for r in RUN_B]
    with pytest.raises(ValueError, match="question 2 has label 'support' in 'a' but 'counter' in 'b'"):
        paired_comparison(RUN_A, relabelled, "explagraphs")
    with pytest.raises(ValueError, match="repeats a question index"):
        paired_comparison(RUN_A + RUN_A[:1], RUN_B, "explagraphs")
    with pytest.raises(ValueError, match="no predictions"):
        paired_comparison([], [], "explagraphs")


def write_run(folder, dataset: str, recs: list[dict]) -> None:
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({"dataset": dataset}))
    write_predictions(folder / "predictions_test.jsonl", recs)


def test_command_line_compares_run_folders(tmp_path, capsys):
    write_run(tmp_path / "topo", "explagraphs", RUN_A)
    write_run(tmp_path / "gr", "explagraphs", RUN_B)
    main([str(tmp_path / "topo"), str(tmp_path / "gr")])
    out = json.loads(capsys.readouterr().out)
    assert (out["a"], out["b"], out["only_a"], out["only_b"]) == ("topo", "gr", 2, 2)


def test_run_folders_must_be_finished_and_on_one_dataset(tmp_path):
    write_run(tmp_path / "topo", "explagraphs", RUN_A)
    write_run(tmp_path / "scenes", "synthetic_scenes", RUN_B)
    with pytest.raises(ValueError, match="on 'explagraphs' but .* on 'synthetic_scenes'"):
        compare_runs(tmp_path / "topo", tmp_path / "scenes")
    with pytest.raises(FileNotFoundError, match="predictions_val.jsonl is missing"):
        compare_runs(tmp_path / "topo", tmp_path / "scenes", split="val")


def test_mean_difference_by_hand_and_its_power():
    from scipy import stats

    from toporag_lib.study.paired_test import mean_difference
    d = [1.0, 0.0, 0.0, -1.0, 1.0, 1.0, 0.0, 0.0]
    out = mean_difference(d)
    sem = 0.5 ** 0.5 / 8 ** 0.5  # sample std by hand: sqrt((3 * .75^2 + 4 * .25^2 + 1.25^2) / 7) = sqrt(.5)
    assert out["diff"] == pytest.approx(0.25) and out["n"] == 8
    assert out["ci_hi"] - out["diff"] == pytest.approx(stats.t.ppf(0.975, 7) * sem, rel=1e-6)
    assert out["p"] == pytest.approx(stats.ttest_1samp(d, 0).pvalue)
    assert out["detectable"] == pytest.approx((2.364624 + 0.896029) * sem, rel=1e-5)
    assert mean_difference([0.0, 0.0])["p"] == 1.0 and mean_difference([1.0, 1.0])["p"] == 0.0
    assert isnan(mean_difference([0.0] * 200)["detectable"])  # no spread: no interval, no power to state
    assert isnan(mean_difference([0.0] * 200)["ci_lo"])
    with pytest.raises(ValueError, match="no paired differences"):
        mean_difference([])
