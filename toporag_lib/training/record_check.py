"""What a ledger record must be before a table reads it (`ledger.read_record` calls these).

- Its schema: the keys the tables read, each of the right type; `metrics.score` (and every per-family, secondary,
  twin and closed-answer score) a finite number in [0, 1], `metrics.n` a positive integer, `config.dataset` a
  dataset the registry knows. A record that is not is a `RecordError` naming the file and the field.
- Its scores against its predictions: each is recomputed from the predictions file beside the record, under the
  dataset's metric (`evaluation.split_metrics`, as the trainer computed it); a record that disagrees is a
  `ScoreMismatchError` naming the file, the recorded and the recomputed score.
- A record scored before its dataset's metric changed (`registry.EarlierMetric`) agrees with the earlier metric
  instead; it is read as such (`scored_under`: the earlier metric's name), never as a score under today's metric,
  and the tables mark it (`study.superseded`, `ledger_tables.ledger_table`'s `metric`).

Nothing is cached: every read recomputes (the whole committed ledger takes well under a second).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from toporag_lib.atomic import DamagedFileError
from toporag_lib.data.metrics import per_family_accuracy
from toporag_lib.data.registry import DATASETS, EarlierMetric, dataset_spec
from toporag_lib.training.evaluation import split_metrics

SPLITS = ("train", "val", "test")
TOLERANCE = 1e-9  # the recompute is the same arithmetic on the same strings; JSON keeps a float's 17 digits
CHECKED = ("score", "per_family", "secondary", "twin", "closed")  # the metrics recomputed from the predictions


class RecordError(DamagedFileError):
    """A ledger record (or its predictions) that the tables cannot read: names the file and the field at fault."""

    def __init__(self, path: str | Path, field: str, problem: str):
        self.path, self.field, self.problem = Path(path), field, problem
        super().__init__(f"{path}: `{field}` {problem}")


class ScoreMismatchError(RecordError):
    """A record whose score disagrees with its own predictions: names the file, the recorded and the recomputed
    score."""

    def __init__(self, path: str | Path, field: str, recorded: Any, recomputed: Any, predictions: Path, metric: str):
        self.recorded, self.recomputed = recorded, recomputed
        super().__init__(path, field, f"is {recorded!r}, but its predictions ({predictions.name}) score "
                                      f"{recomputed!r} under the dataset's metric ({metric}): the record does not "
                                      "agree with its predictions")


# -- schema ---------------------------------------------------------------------------------------------------------


def _kind(value: Any) -> str:
    return {dict: "an object", list: "a list", str: "a string", bool: "a boolean", type(None): "null"}.get(
        type(value), type(value).__name__)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _object(path: Path, field: str, value: Any) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise RecordError(path, field, f"is {_kind(value)} ({value!r:.60}), not an object")
    return value


def _required(path: Path, holder: dict[str, Any], prefix: str, key: str) -> Any:
    if key not in holder:
        raise RecordError(path, f"{prefix}{key}", f"is missing (keys: {', '.join(sorted(holder)) or 'none'})")
    return holder[key]


def _string(path: Path, field: str, value: Any, optional: bool = False) -> None:
    if not (isinstance(value, str) and value) and not (optional and value is None):
        raise RecordError(path, field, f"is {_kind(value)} ({value!r:.60}), not a non-empty string")


def _fraction(path: Path, field: str, value: Any, nan: bool = False) -> None:
    """A score: a finite number in [0, 1] (nan too where `nan`: a twin accuracy without a whole pair)."""
    if not _is_number(value):
        raise RecordError(path, field, f"is {_kind(value)} ({value!r:.60}), not a number")
    if nan and math.isnan(value):
        return
    if not math.isfinite(value) or not 0 <= value <= 1:
        raise RecordError(path, field, f"is {value!r}, not a finite number in [0, 1]")


def _fractions(path: Path, field: str, value: Any, nan: bool = False) -> None:
    for key, score in _object(path, field, value).items():
        _fraction(path, f"{field}.{key}", score, nan)


def _positive_int(path: Path, field: str, value: Any) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise RecordError(path, field, f"is {_kind(value)} ({value!r:.60}), not a positive integer")


def validate(record: Any, path: str | Path, folder: str | None = None) -> dict[str, Any]:
    """`record` (parsed from `path`) if it has every key the tables read, each of the right type, and its run id is
    its folder's name (`folder`; by default `path`'s folder); else a `RecordError` naming the file and the field."""
    path = Path(path)
    folder = path.parent.name if folder is None else folder
    record = _object(path, "(the record)", record)
    run_id = _required(path, record, "", "run_id")
    _string(path, "run_id", run_id)
    if run_id != folder:
        raise RecordError(path, "run_id", f"is {run_id!r}, but the record is in the folder {folder!r}")
    _string(path, "name", _required(path, record, "", "name"))
    for key in ("command", "commit"):
        _string(path, key, _required(path, record, "", key), optional=True)
    for key in ("hardware", "finished"):
        _string(path, key, _required(path, record, "", key))

    config = _object(path, "config", _required(path, record, "", "config"))
    dataset = _required(path, config, "config.", "dataset")
    if dataset not in DATASETS:
        raise RecordError(path, "config.dataset", f"is {dataset!r}, not a dataset the registry knows "
                                                  f"({', '.join(sorted(DATASETS))})")
    seed = _required(path, config, "config.", "seed")
    if not isinstance(seed, int) or isinstance(seed, bool):
        raise RecordError(path, "config.seed", f"is {_kind(seed)} ({seed!r:.60}), not an integer")
    _object(path, "config.dataset_options", _required(path, config, "config.", "dataset_options"))
    for split, limit in _object(path, "config.limits", _required(path, config, "config.", "limits")).items():
        if limit is not None:
            _positive_int(path, f"config.limits.{split}", limit)

    metrics = _object(path, "metrics", _required(path, record, "", "metrics"))
    _positive_int(path, "metrics.n", _required(path, metrics, "metrics.", "n"))
    _fraction(path, "metrics.score", _required(path, metrics, "metrics.", "score"))
    if metrics.get("dataset", dataset) != dataset:
        raise RecordError(path, "metrics.dataset", f"is {metrics['dataset']!r}, but config.dataset is {dataset!r}")
    if metrics.get("split", "test") not in SPLITS:
        raise RecordError(path, "metrics.split", f"is {metrics['split']!r}, not one of {', '.join(SPLITS)}")
    for key in ("per_family", "secondary"):
        if key in metrics:
            _fractions(path, f"metrics.{key}", metrics[key])
    if "twin" in metrics:
        _fractions(path, "metrics.twin", metrics["twin"], nan=True)
    if "closed" in metrics:
        closed = _object(path, "metrics.closed", metrics["closed"])
        _fraction(path, "metrics.closed.score", _required(path, closed, "metrics.closed.", "score"))
        if "per_family" in closed:
            _fractions(path, "metrics.closed.per_family", closed["per_family"])
        if "twin" in closed:
            _fractions(path, "metrics.closed.twin", closed["twin"], nan=True)
    return record


def validate_predictions(predictions: Any, path: str | Path) -> list[dict[str, Any]]:
    """Each prediction an object with a string `pred` and `label` (and, where present, a string or null `family`)."""
    for line, prediction in enumerate(predictions, 1):
        prediction = _object(Path(path), f"line {line}", prediction)
        for key in ("pred", "label"):
            if not isinstance(prediction.get(key), str):
                raise RecordError(path, f"line {line}.{key}", f"is {_kind(prediction.get(key))}, not a string")
        if not isinstance(prediction.get("family") or "", str):
            raise RecordError(path, f"line {line}.family", f"is {_kind(prediction['family'])}, not a string")
    return predictions


# -- scores against predictions -------------------------------------------------------------------------------------


def _differences(recorded: Any, recomputed: Any, field: str) -> list[tuple[str, Any, Any]]:
    """(field, recorded, recomputed) wherever two metric values (numbers, or objects of them) disagree."""
    if isinstance(recorded, dict) and isinstance(recomputed, dict):
        out = []
        for key in sorted(set(recorded) | set(recomputed), key=str):
            out += _differences(recorded.get(key), recomputed.get(key), f"{field}.{key}")
        return out
    if _is_number(recorded) and _is_number(recomputed):
        same = (math.isnan(recorded) and math.isnan(recomputed)) or math.isclose(recorded, recomputed, rel_tol=0,
                                                                                 abs_tol=TOLERANCE)
        return [] if same else [(field, recorded, recomputed)]
    return [] if recorded == recomputed else [(field, recorded, recomputed)]


def earlier_metrics(old: EarlierMetric, predictions: list[dict[str, Any]]) -> dict[str, Any]:
    """What a record scored under `old` held: its score and, where questions have families, per-family scores."""
    preds, labels = [p["pred"] for p in predictions], [p["label"] for p in predictions]
    out: dict[str, Any] = {"score": old.metric(preds, labels)}
    families = [p["family"] for p in predictions]
    if any(families):
        out["per_family"] = per_family_accuracy(preds, labels, families, old.metric)
    return out


def mismatches(metrics: dict[str, Any], recomputed: dict[str, Any]) -> list[tuple[str, Any, Any]]:
    """Where the recorded metrics disagree with the recomputed ones: every metric in `CHECKED` that either holds
    (a record written before a metric existed lacks it; one that holds a metric its predictions cannot give
    disagrees)."""
    return [d for key in CHECKED if key in metrics
            for d in _differences(metrics[key], recomputed.get(key), f"metrics.{key}")]


def check_scores(record: dict[str, Any], path: str | Path, predictions: list[dict[str, Any]],
                 predictions_file: str | Path, earlier: bool = True) -> str:
    """"" when the record's scores are its predictions' under the dataset's metric; the earlier metric's name when
    they are its predictions' under an earlier metric of the dataset (`registry.EarlierMetric`) and the record
    predates the change (it lacks the metrics key written since; never without `earlier`: a run being recorded now);
    else a `ScoreMismatchError` naming the first disagreement with today's metric."""
    path, predictions_file = Path(path), Path(predictions_file)
    metrics, dataset = record["metrics"], record["config"]["dataset"]
    if metrics["n"] != len(predictions):
        raise RecordError(path, "metrics.n", f"is {metrics['n']}, but {predictions_file.name} holds "
                                             f"{len(predictions)} predictions")
    split = metrics.get("split", "test")
    predictions = [{**p, "family": p.get("family") or ""} for p in predictions]  # without a family: in none
    spec = dataset_spec(dataset)
    wrong = mismatches(metrics, split_metrics(dataset, split, predictions))
    if not wrong:
        return ""
    for old in spec.earlier_metrics if earlier else ():
        if old.written_since not in metrics and not mismatches(metrics, earlier_metrics(old, predictions)):
            return old.name
    field, recorded, recomputed = wrong[0]
    raise ScoreMismatchError(path, field, recorded, recomputed, predictions_file, spec.metric_name or dataset)
