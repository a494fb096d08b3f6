"""Run files and the results ledger: every run behind a reported number leaves a record under
`results/runs/<run-id>/`, committed with the code.

A record is `record.json` (run id, name, command, commit, hardware, when, config, metrics) beside a copy of the
run's `predictions_test.jsonl`. The run id is `<dataset>-<hash of the config>`: the same config (seed included)
is one record, so re-running a finished run does not add a second one. Tables in `results/` and the README are
generated from these records (`toporag_lib.study.report`), never typed by hand, and read through one reader,
`read_record` (`read_ledger`): it refuses a record whose schema is wrong or whose scores its own predictions do not
give (`record_check`: `RecordError`, `ScoreMismatchError`, each naming the file).
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from toporag_lib import atomic, hardware
from toporag_lib.paths import PROJECT_ROOT
from toporag_lib.training.record_check import (  # the errors are the readers': `from ledger import RecordError`
    RecordError, ScoreMismatchError, check_scores, validate, validate_predictions)
from toporag_lib.training.run_files import predictions_path, read_config, read_metrics, read_predictions

RECORD = "record.json"
COMMAND_ENV = "TOPORAG_COMMAND"  # set by the notebook runner: the command that produced a notebook's runs


# The learned retrievals' parameters (`retrieval.baselines.fitted`), at their defaults: no earlier run read them.
FITTED_RETRIEVAL_KEYS = (("top_k", 10), ("dde_rounds", 2), ("candidates", 3), ("gnn_layers", 2), ("fit_epochs", 10),
                          ("fit_lr", 1e-3), ("fit_seed", 0))

# Config keys added after runs were recorded, each with the value that does what the code did before the key
# existed. A config holding that value hashes as if the key were absent, so finished runs keep their record ids and
# interrupted ones resume; any other value makes a new run.
# Records without such a key ran with that value.
LATER_KEYS: dict[tuple[str, ...], Any] = {("model", "virtual_init"): None, ("embedding_batching",): "single",
                                          **{("retrieval", name): value for name, value in FITTED_RETRIEVAL_KEYS},
                                          ("retrieval", "fit_targets"): "evidence", ("model", "question_first"): False,
                                          ("model", "readout"): "mean"}


# Keys that only some retrieval methods read, left out of every other method's identity: a key added later whose
# new default differs from its old value re-keys only the runs that read it.
READ_BY_METHODS: dict[tuple[str, ...], tuple[str, ...]] = {("retrieval", "fit_targets"): ("subgraphrag", "gnnrag")}

# Where the work ran, not what it computed (the sharded path makes the local path's examples, tested): left out of a
# run's identity, so the same run preprocessed on Dask or locally is one run.
EXECUTION_KEYS = ("preprocess",)


def _later_key_holders(config: dict[str, Any]):
    """(the dict that holds it, its name, its old value) for each of `LATER_KEYS` whose parent is in `config`."""
    for *parents, key in LATER_KEYS:
        holder = config
        for name in parents:
            holder = holder.get(name) if isinstance(holder, dict) else None
        if isinstance(holder, dict):
            yield holder, key, LATER_KEYS[(*parents, key)]


def with_later_keys(config: dict[str, Any]) -> dict[str, Any]:
    """A copy of a config dict saved before some `LATER_KEYS` existed, with each missing one at its old value."""
    config = json.loads(json.dumps(config))
    for holder, key, old in _later_key_holders(config):
        holder.setdefault(key, old)
    return config


def config_digest(config: dict[str, Any]) -> str:
    """A short hash of a config dict (key order does not matter; `LATER_KEYS` at their old value, `READ_BY_METHODS`
    keys of the methods that do not read them and `EXECUTION_KEYS` are left out)."""
    config = {k: v for k, v in json.loads(json.dumps(config)).items() if k not in EXECUTION_KEYS}
    for holder, key, old in _later_key_holders(config):
        if key in holder and holder[key] == old:
            del holder[key]
    for (*parents, key), methods in READ_BY_METHODS.items():
        holder = config
        for name in parents:
            holder = holder.get(name) if isinstance(holder, dict) else None
        if isinstance(holder, dict) and key in holder and holder.get("method") not in methods:
            del holder[key]
    return hashlib.sha1(json.dumps(config, sort_keys=True).encode()).hexdigest()[:10]


def commit() -> str | None:
    """The checkout's commit, with "+changes" when tracked files outside `results/` (which runs write) differ from
    it; None outside a git checkout."""
    try:
        head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=PROJECT_ROOT, capture_output=True, text=True,
                              check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no", "--", ".", ":!results"],
                               cwd=PROJECT_ROOT, capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None
    return head + ("+changes" if dirty else "")


STARTED_FROM = commit()
"""The commit (and "+changes") this process's code came from: a record names it, not the checkout's state when the
run finished (hours later, other commits may have landed)."""


def run_id(config: dict[str, Any]) -> str:
    return f"{config['dataset']}-{config_digest(config)}"


def record_run(run_dir: str | Path, ledger: str | Path, name: str, command: str | None = None,
               split: str = "test") -> Path:
    """Record the finished run in `run_dir` (its config, metrics and predictions) in the ledger folder `ledger`.

    A record of the same config with the same metrics is left as it is (first name and date kept). The record is
    checked as `read_record` will check it (its schema, its scores against the run's predictions) before anything
    is written, so the ledger never holds a record its reader refuses.
    """
    run_dir = Path(run_dir)
    config, metrics = read_config(run_dir), read_metrics(run_dir, split)
    if metrics is None:
        raise FileNotFoundError(f"{run_dir}: the run has not scored its {split} split (no metrics_{split}.json)")
    folder = Path(ledger) / run_id(config)
    existing = folder / RECORD
    if existing.exists() and read_record(existing, check=False)["metrics"] == metrics:
        return folder
    record = {"run_id": folder.name, "name": name, "command": command or os.environ.get(COMMAND_ENV)
              or " ".join([Path(sys.executable).name, *sys.argv]), "commit": STARTED_FROM,
              "hardware": hardware.describe(config.get("device", "cpu")),
              "finished": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"), "config": config,
              "metrics": metrics}
    predictions = predictions_path(run_dir, split)  # errors name the run folder: its config and metrics files
    validate(record, run_dir, folder=folder.name)
    check_scores(record, run_dir, validate_predictions(read_predictions(predictions), predictions), predictions,
                 earlier=False)
    atomic.write_bytes(predictions_path(folder, split), predictions.read_bytes())
    atomic.write_text(existing, json.dumps(record, indent=1) + "\n")
    return folder


def read_record(path: str | Path, check: bool = True) -> dict[str, Any]:
    """The record in `path` (a `record.json`), validated (`record_check.validate`), with its split's predictions
    under "predictions" and its scores recomputed from them (`record_check.check_scores`), under "scored_under" ""
    when they are the dataset's metric's, or the earlier metric's name when the record was scored before its
    dataset's metric changed (`registry.EarlierMetric`). A record that fails either check is a `RecordError`
    (`ScoreMismatchError` where a score disagrees) naming the file. Without `check` (a record about to be
    rewritten) only its schema is checked, and the record is returned as it is in the file."""
    path = Path(path)
    record = validate(atomic.parse_json(path.read_text(), str(path)), path)
    if not check:
        return record
    predictions = predictions_path(path.parent, record["metrics"].get("split", "test"))
    if not predictions.exists():
        raise RecordError(path, "metrics.score", f"cannot be checked: its predictions ({predictions.name}) are missing")
    rows = validate_predictions(read_predictions(predictions), predictions)
    return {**record, "predictions": rows, "scored_under": check_scores(record, path, rows, predictions)}


def read_ledger(ledger: str | Path) -> list[dict[str, Any]]:
    """Every record in the ledger folder, in run-id order, each checked and with its predictions (`read_record`)."""
    return [read_record(path) for path in sorted(Path(ledger).glob(f"*/{RECORD}"))]
