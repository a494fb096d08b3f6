"""Metrics exactly as G-Retriever computes them (its `src/utils/evaluate.py`), one verdict per answer and a mean.

- ExplaGraphs: the first match of `support|Support|Counter|counter` in the stripped prediction, lower-cased, must
  equal the label; no match is wrong (so "SUPPORT" never counts).
- SceneGraphs (and the GQA fixtures): `label in prediction`, raw and case-sensitive.
- Synthetic scenes (ours): exact match of the normalised answer (below), so that answering "yes no" scores nothing;
  `label in prediction` is reported beside it.
- WebQSP: the prediction's "|" become newlines and it is split into lines; the label is split on "|"; texts are
  normalised (lower-case, punctuation removed, the words a/an/the replaced by a space, white space collapsed) and a
  gold answer matches when it is a substring of the prediction's lines joined by spaces. Hit: any gold answer
  matches; accuracy: the share of gold answers that match; precision: matches / number of prediction lines;
  recall: matches / number of gold answers; F1 of those two. Hit@1 (the KGQA literature's, e.g. GNN-RAG's, not
  G-Retriever's): the first non-empty prediction line, normalised, equals a normalised gold answer. The field uses
  "Hit" for both; they are reported side by side.

All scores are fractions in [0, 1] (G-Retriever prints WebQSP's as percentages). Which metric belongs to which
dataset is `toporag_lib.data.registry`'s.
"""

from __future__ import annotations

import re
import string
from collections import defaultdict
from collections.abc import Callable, Sequence

EXPLAGRAPHS_CLASSES = re.compile(r"support|Support|Counter|counter")
ARTICLES = re.compile(r"\b(a|an|the)\b")
PUNCTUATION = set(string.punctuation)

Metric = Callable[[Sequence[str], Sequence[str]], float]
Verdict = Callable[[str, str], bool]


def _check(predictions: Sequence[str], labels: Sequence[str]) -> None:
    if len(predictions) != len(labels):
        raise ValueError(f"{len(predictions)} predictions but {len(labels)} labels")
    if not labels:
        raise ValueError("no predictions to score")


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values)


# -- ExplaGraphs and SceneGraphs ----------------------------------------------------------------------------------


def explagraphs_class(prediction: str) -> str | None:
    """The class word G-Retriever reads from a prediction: its first match, lower-cased (None without one)."""
    found = EXPLAGRAPHS_CLASSES.search(prediction.strip())
    return found.group().lower() if found else None


def explagraphs_correct(prediction: str, label: str) -> bool:
    """The first class word in the prediction, lower-cased, equals the label."""
    return explagraphs_class(prediction) == label


def explagraphs_accuracy(predictions: Sequence[str], labels: Sequence[str]) -> float:
    _check(predictions, labels)
    return _mean([explagraphs_correct(p, y) for p, y in zip(predictions, labels)])


def scenegraphs_correct(prediction: str, label: str) -> bool:
    """The prediction contains the label (raw, case-sensitive substring)."""
    return label in prediction


def scenegraphs_accuracy(predictions: Sequence[str], labels: Sequence[str]) -> float:
    """Share of predictions that contain their label (`scenegraphs_correct`)."""
    _check(predictions, labels)
    return _mean([scenegraphs_correct(p, y) for p, y in zip(predictions, labels)])


def exact_match_correct(prediction: str, label: str) -> bool:
    """The normalised prediction equals the normalised label (`normalize`), so "yes no" is wrong for "yes"."""
    return normalize(prediction) == normalize(label)


def exact_match_accuracy(predictions: Sequence[str], labels: Sequence[str]) -> float:
    """Share of predictions that are exactly their label once both are normalised (the synthetic scenes' metric)."""
    _check(predictions, labels)
    return _mean([exact_match_correct(p, y) for p, y in zip(predictions, labels)])


# -- WebQSP -------------------------------------------------------------------------------------------------------


def normalize(text: str) -> str:
    """Lower-case, drop punctuation, replace the articles a/an/the by a space, collapse white space."""
    text = "".join(char for char in text.lower() if char not in PUNCTUATION)
    return " ".join(ARTICLES.sub(" ", text).split())


def webqsp_scores(prediction: str, label: str) -> dict[str, float]:
    """One sample's hit, accuracy, precision, recall and F1."""
    lines = prediction.replace("|", "\n").split("\n")
    golds = label.split("|")
    joined = normalize(" ".join(lines))
    matched = sum(normalize(gold) in joined for gold in golds)
    precision, recall = matched / len(lines), matched / len(golds)
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {"hit": float(matched > 0), "accuracy": recall, "precision": precision, "recall": recall, "f1": f1}


def webqsp_metrics(predictions: Sequence[str], labels: Sequence[str]) -> dict[str, float]:
    """Mean hit, accuracy, precision, recall and F1 over the samples."""
    _check(predictions, labels)
    scores = [webqsp_scores(p, y) for p, y in zip(predictions, labels)]
    return {key: _mean([s[key] for s in scores]) for key in scores[0]}


def webqsp_hit(predictions: Sequence[str], labels: Sequence[str]) -> float:
    return webqsp_metrics(predictions, labels)["hit"]


def webqsp_hit_at_1_correct(prediction: str, label: str) -> bool:
    """Hit@1: the first predicted answer (first non-empty line, "|" separating answers too) is a gold answer."""
    lines = [normalize(line) for line in prediction.replace("|", "\n").split("\n")]
    first = next((line for line in lines if line), None)
    return first is not None and first in {normalize(gold) for gold in label.split("|")}


def webqsp_hit_at_1(predictions: Sequence[str], labels: Sequence[str]) -> float:
    _check(predictions, labels)
    return _mean([float(webqsp_hit_at_1_correct(p, y)) for p, y in zip(predictions, labels)])


def webqsp_correct(prediction: str, label: str) -> bool:
    """A hit: some gold answer appears in the prediction."""
    return webqsp_scores(prediction, label)["hit"] > 0


# -- Within families ----------------------------------------------------------------------------------------------


def per_family_accuracy(predictions: Sequence[str], labels: Sequence[str], families: Sequence[str],
                        metric: Metric) -> dict[str, float]:
    """`metric` within each question family, families in order of first appearance."""
    _check(predictions, labels)
    if len(families) != len(labels):
        raise ValueError(f"{len(families)} families but {len(labels)} labels")
    groups: dict[str, list[int]] = defaultdict(list)
    for i, family in enumerate(families):
        groups[family].append(i)
    return {family: metric([predictions[i] for i in idx], [labels[i] for i in idx]) for family, idx in groups.items()}


def twin_accuracy(correct: Sequence[bool], pairs: Sequence[str]) -> float:
    """The share of counterfactual twin pairs (questions sharing a non-empty `pairs` id; pairs with one member in
    `correct` are left out) whose two questions are both answered right. Twins have opposite answers, so any
    constant answer, or any rule that cannot tell the twins apart, scores 0; nan without a whole pair."""
    if len(pairs) != len(correct):
        raise ValueError(f"{len(pairs)} pair ids but {len(correct)} answers")
    members: dict[str, list[bool]] = defaultdict(list)
    for pair, right in zip(pairs, correct):
        if pair:
            members[pair].append(bool(right))
    whole = [both for both in members.values() if len(both) == 2]
    if any(len(both) > 2 for both in members.values()):
        raise ValueError("a twin pair id is shared by more than two questions")
    return sum(all(both) for both in whole) / len(whole) if whole else float("nan")


def per_family_twin_accuracy(correct: Sequence[bool], pairs: Sequence[str], families: Sequence[str]) -> dict[str, float]:
    """`twin_accuracy` within each family that has twins."""
    out = {}
    for family in dict.fromkeys(families):
        idx = [i for i, f in enumerate(families) if f == family]
        if any(pairs[i] for i in idx):
            out[family] = twin_accuracy([correct[i] for i in idx], [pairs[i] for i in idx])
    return out
