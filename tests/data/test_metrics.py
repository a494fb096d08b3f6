"""Metrics against a literal copy of G-Retriever's `src/utils/evaluate.py` (reading a DataFrame instead of a file,
returning fractions instead of printing percentages)."""

from __future__ import annotations

import json
import re
import string

import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

from toporag_lib.data.metrics import (
    exact_match_accuracy,
    exact_match_correct,
    explagraphs_accuracy,
    normalize,
    per_family_accuracy,
    scenegraphs_accuracy,
    webqsp_hit_at_1,
    webqsp_metrics,
)
from toporag_lib.data.registry import correct_for, metric_for
from toporag_lib.training.run_files import read_predictions, write_predictions

# -- G-Retriever, as written in its repository --------------------------------------------------------------------


def ref_get_accuracy_gqa(df):
    correct = 0
    for pred, label in zip(df["pred"], df["label"]):
        if label in pred:
            correct += 1
    return correct / len(df)


def ref_get_accuracy_expla_graphs(df):
    correct = 0
    for pred, label in zip(df["pred"], df["label"]):
        matches = re.findall(r"support|Support|Counter|counter", pred.strip())
        if len(matches) > 0 and matches[0].lower() == label:
            correct += 1

    return correct / len(df)


def ref_normalize(s: str) -> str:
    """Lower text and remove punctuation, articles and extra whitespace."""
    s = s.lower()
    exclude = set(string.punctuation)
    s = "".join(char for char in s if char not in exclude)
    s = re.sub(r"\b(a|an|the)\b", " ", s)
    # remove <pad> token:
    s = re.sub(r"\b(<pad>)\b", " ", s)
    s = " ".join(s.split())
    return s


def ref_match(s1: str, s2: str) -> bool:
    s1 = ref_normalize(s1)
    s2 = ref_normalize(s2)
    return s2 in s1


def ref_eval_f1(prediction, answer):
    if len(prediction) == 0:
        return 0, 0, 0
    matched = 0
    prediction_str = " ".join(prediction)
    for a in answer:
        if ref_match(prediction_str, a):
            matched += 1
    precision = matched / len(prediction)
    recall = matched / len(answer)
    if precision + recall == 0:
        return 0, precision, recall
    else:
        return 2 * precision * recall / (precision + recall), precision, recall


def ref_eval_acc(prediction, answer):
    matched = 0.0
    for a in answer:
        if ref_match(prediction, a):
            matched += 1
    return matched / len(answer)


def ref_eval_hit(prediction, answer):
    for a in answer:
        if ref_match(prediction, a):
            return 1
    return 0


def ref_get_accuracy_webqsp(df):
    acc_list = []
    hit_list = []
    f1_list = []
    precission_list = []
    recall_list = []

    for prediction, answer in zip(df.pred.tolist(), df.label.tolist()):

        prediction = prediction.replace("|", "\n")
        answer = answer.split("|")

        prediction = prediction.split("\n")
        f1_score, precision_score, recall_score = ref_eval_f1(prediction, answer)
        f1_list.append(f1_score)
        precission_list.append(precision_score)
        recall_list.append(recall_score)
        prediction_str = " ".join(prediction)
        acc = ref_eval_acc(prediction_str, answer)
        hit = ref_eval_hit(prediction_str, answer)
        acc_list.append(acc)
        hit_list.append(hit)

    acc = sum(acc_list) / len(acc_list)
    hit = sum(hit_list) / len(hit_list)
    f1 = sum(f1_list) / len(f1_list)
    pre = sum(precission_list) / len(precission_list)
    recall = sum(recall_list) / len(recall_list)
    return {"hit": hit, "accuracy": acc, "precision": pre, "recall": recall, "f1": f1}


def frame(predictions, labels) -> pd.DataFrame:
    return pd.DataFrame({"pred": predictions, "label": labels})


# -- ExplaGraphs --------------------------------------------------------------------------------------------------

EXPLA_CASES = [
    ("support", "support", True),
    ("Support", "support", True),
    ("SUPPORT", "support", False),  # upper case matches nothing
    ("  counter.", "counter", True),
    ("Counter", "counter", True),
    ("I think they support, not counter", "support", True),  # the first class word wins
    ("I think they support, not counter", "counter", False),
    ("counter-support", "counter", True),
    ("They agree.", "support", False),  # no class word
    ("", "counter", False),  # empty prediction
    ("unsupported", "support", True),  # substring, as G-Retriever
    ("Supports", "support", True),
]


@pytest.mark.parametrize("prediction,label,correct", EXPLA_CASES)
def test_explagraphs_cases(prediction, label, correct):
    assert explagraphs_accuracy([prediction], [label]) == float(correct)
    assert ref_get_accuracy_expla_graphs(frame([prediction], [label])) == float(correct)


def test_explagraphs_batch_matches_reference():
    predictions, labels, _ = zip(*EXPLA_CASES)
    assert explagraphs_accuracy(predictions, labels) == ref_get_accuracy_expla_graphs(frame(predictions, labels))


# -- SceneGraphs --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("prediction,label,correct", [
    ("The cup is red.", "red", True),
    ("Red", "red", False),  # case-sensitive
    ("redwood", "red", True),  # raw substring
    ("", "red", False),
    ("yes", "yes", True),
])
def test_scenegraphs_cases(prediction, label, correct):
    assert scenegraphs_accuracy([prediction], [label]) == float(correct)
    assert ref_get_accuracy_gqa(frame([prediction], [label])) == float(correct)


# -- WebQSP -------------------------------------------------------------------------------------------------------

WEBQSP_CASES = [
    ("Barack Obama", "barack obama"),
    ("The United States", "united states of america|united states"),  # several gold answers, articles
    ("U.S.A.", "usa"),  # punctuation removed
    ("jamaican english|jamaican creole", "jamaican english|jamaican creole english language"),  # "|" in prediction
    ("line one\nline two\nline three", "line two"),
    ("", "france"),  # empty prediction
    ("France", ""),  # an empty gold answer matches anything, as in G-Retriever
    ("an apple a day", "apple day"),
    ("Theatre", "atre"),  # only whole-word articles go
    ("the the the", "the"),
    ("Paris, France!", "paris|lyon|nice"),
]


@pytest.mark.parametrize("prediction,label", WEBQSP_CASES)
def test_webqsp_cases_match_reference(prediction, label):
    assert webqsp_metrics([prediction], [label]) == pytest.approx(ref_get_accuracy_webqsp(frame([prediction],
                                                                                                    [label])))


def test_webqsp_values_by_hand():
    scores = webqsp_metrics(["Paris|Lyon"], ["paris|marseille|nice"])
    assert scores == pytest.approx({"hit": 1.0, "accuracy": 1 / 3, "precision": 1 / 2, "recall": 1 / 3,
                                    "f1": 2 * (1 / 2) * (1 / 3) / (1 / 2 + 1 / 3)})
    assert webqsp_metrics([""], ["france"]) == {"hit": 0.0, "accuracy": 0.0, "precision": 0.0, "recall": 0.0,
                                                "f1": 0.0}
    assert normalize("  The Eiffel-Tower, a landmark!  ") == "eiffeltower landmark"


def test_webqsp_hit_at_1_reads_the_first_answer_only():
    predictions = ["Lyon|Paris", "paris|lyon", "\n The Paris.\nLyon", "Paris is the capital", ""]
    labels = ["paris|marseille"] * 5
    assert [webqsp_hit_at_1([p], [y]) for p, y in zip(predictions, labels)] == [0.0, 1.0, 1.0, 0.0, 0.0]
    assert webqsp_metrics(predictions[:1], labels[:1])["hit"] == 1.0  # G-Retriever's Hit counts it; Hit@1 does not
    assert metric_for("webqsp") is not webqsp_hit_at_1


def test_webqsp_batch_matches_reference():
    predictions, labels = zip(*WEBQSP_CASES)
    assert webqsp_metrics(predictions, labels) == pytest.approx(ref_get_accuracy_webqsp(frame(predictions, labels)))


WORDS = st.sampled_from(["the", "a", "an", "The", "Paris", "paris", "U.S.", "usa", "support", "Counter", "SUPPORT",
                         "red", "Red", "x", "", " ", "|", "\n", ",", "!", "-", "theatre", "an-apple"])
TEXTS = st.lists(WORDS, max_size=8).map(" ".join)


@given(st.lists(st.tuples(TEXTS, TEXTS), min_size=1, max_size=6))
def test_all_metrics_match_reference_on_random_texts(pairs):
    predictions, labels = [list(x) for x in zip(*pairs)]
    df = frame(predictions, labels)
    assert webqsp_metrics(predictions, labels) == pytest.approx(ref_get_accuracy_webqsp(df))
    assert scenegraphs_accuracy(predictions, labels) == ref_get_accuracy_gqa(df)
    class_labels = ["support" if len(y) % 2 else "counter" for y in labels]
    assert explagraphs_accuracy(predictions, class_labels) == ref_get_accuracy_expla_graphs(
        frame(predictions, class_labels))
    assert all(normalize(t) == ref_normalize(t) for t in predictions + labels)


# -- by dataset, families, files ----------------------------------------------------------------------------------


def test_metric_for_each_dataset():
    assert metric_for("explagraphs") is explagraphs_accuracy
    for name in ("scenegraphs", "gqa_fixtures"):
        assert metric_for(name) is scenegraphs_accuracy
    assert metric_for("synthetic_scenes") is exact_match_accuracy
    assert metric_for("webqsp")(["The Paris", "x"], ["paris", "y"]) == 0.5
    for lookup in (metric_for, correct_for):
        with pytest.raises(ValueError, match="unknown dataset 'cora'"):
            lookup("cora")


def test_exact_match_refuses_answers_that_hedge():
    predictions, labels = ["yes no", "Yes.", "The  Cup", "a red cup", "no"], ["yes", "yes", "cup", "cup", "no"]
    assert [exact_match_correct(p, y) for p, y in zip(predictions, labels)] == [False, True, True, False, True]
    assert scenegraphs_accuracy(predictions[:1], labels[:1]) == 1.0  # label in prediction would count "yes no"
    assert exact_match_accuracy(predictions, labels) == 0.6


@given(st.lists(st.tuples(TEXTS, TEXTS), min_size=1, max_size=6))
def test_per_sample_correctness_averages_to_the_metric(pairs):
    predictions, labels = [list(x) for x in zip(*pairs)]
    class_labels = ["support" if len(y) % 2 else "counter" for y in labels]
    for name, golds in (("explagraphs", class_labels), ("synthetic_scenes", labels), ("webqsp", labels)):
        correct = correct_for(name)
        mean = sum(correct(p, y) for p, y in zip(predictions, golds)) / len(golds)
        assert mean == pytest.approx(metric_for(name)(predictions, golds)), name


def test_per_family_accuracy():
    predictions = ["red", "blue", "yes", "no", "red"]
    labels = ["red", "red", "yes", "yes", "red"]
    families = ["0-cell", "1-cell", "2-cell", "2-cell", "0-cell"]
    assert per_family_accuracy(predictions, labels, families, scenegraphs_accuracy) == {
        "0-cell": 1.0, "1-cell": 0.0, "2-cell": 0.5}
    assert list(per_family_accuracy(predictions, labels, families, scenegraphs_accuracy)) == ["0-cell", "1-cell",
                                                                                              "2-cell"]
    with pytest.raises(ValueError, match="families"):
        per_family_accuracy(predictions, labels, families[:2], scenegraphs_accuracy)


def test_mismatched_or_empty_inputs_are_errors():
    with pytest.raises(ValueError, match="2 predictions but 1 labels"):
        explagraphs_accuracy(["a", "b"], ["a"])
    with pytest.raises(ValueError, match="no predictions"):
        webqsp_metrics([], [])


def test_prediction_files_round_trip(tmp_path):
    records = [{"id": "q1", "pred": "Support\nthe end", "label": "support"},
               {"id": "q2", "pred": "Müller | 1984", "label": "1984", "family": "2-cell"}]
    path = write_predictions(tmp_path / "out" / "preds.jsonl", records)
    assert read_predictions(path) == records
    lines = path.read_text().splitlines()
    assert len(lines) == 2 and json.loads(lines[1])["pred"] == "Müller | 1984"
    assert [p.name for p in path.parent.iterdir()] == ["preds.jsonl"]  # no temporary file left
