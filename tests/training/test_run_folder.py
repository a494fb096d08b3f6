"""One writer per run folder, and only run folders written: a folder another process holds is refused naming the
holder, before any work and without a byte written; a lock whose process died is taken over; a folder of other
files is refused and left as it was."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from test_trainer import config
from tiny_models import CHATML, make_tiny_model

from toporag_lib import locks
from toporag_lib.training import trainer as trainer_module
from toporag_lib.training.ledger import RECORD
from toporag_lib.training.run_folder import (
    LOCK,
    NotARunFolderError,
    RunFolderInUseError,
    check_run_folder,
    claim_run_folder,
)
from toporag_lib.training.trainer import Trainer, run

# A child process that takes a lock (`toporag_lib.locks`, as `claim_run_folder` does) and says so; then it holds it
# until its standard input closes ("hold"), or ends at once without letting go of it ("die").
HOLDER = """
import os, sys
from toporag_lib import locks
lock = locks.acquire(sys.argv[1])
print("held", flush=True)
if sys.argv[2] == "die":
    os._exit(0)  # no release: the lock file stays, naming a dead process
sys.stdin.read()
"""


def hold(lock: Path, then: str = "hold") -> subprocess.Popen:
    child = subprocess.Popen([sys.executable, "-c", HOLDER, str(lock), then], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, text=True)
    assert child.stdout.readline().strip() == "held"
    return child


def snapshot(folder: Path) -> dict[str, tuple[bytes, int]]:
    """Every file under `folder` with its bytes and modification time."""
    return {str(p.relative_to(folder)): (p.read_bytes(), p.stat().st_mtime_ns)
            for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def tiny_llm(tmp_path_factory):
    return make_tiny_model(tmp_path_factory.mktemp("tiny_llm"), CHATML)


@pytest.fixture
def no_preprocessing(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("the dataset was prepared")

    monkeypatch.setattr(trainer_module, "make_examples", refuse)
    monkeypatch.setattr(trainer_module, "check_inputs_exist", refuse)


def test_a_run_folder_another_process_holds_is_refused_naming_it_before_any_work(tiny_llm, tiny_encoder_path,
                                                                                 tmp_path, no_preprocessing):
    new, existing = tmp_path / "new", tmp_path / "existing"
    existing.mkdir()
    (existing / "config.json").write_text(json.dumps(config(tiny_llm, tiny_encoder_path).to_dict()))
    for out in (new, existing):
        child = hold(out / LOCK)
        try:
            before = snapshot(out)
            for cfg in (config(tiny_llm, tiny_encoder_path), config(tiny_llm, tiny_encoder_path, lr=5e-3)):
                with pytest.raises(RunFolderInUseError) as refused:
                    Trainer(cfg, out, progress=False)
                message = str(refused.value)
                assert str(out) in message and f"pid {child.pid} on host {socket.gethostname()}" in message
                assert refused.value.folder == out and refused.value.holder["pid"] == child.pid
                assert snapshot(out) == before  # nothing written, nothing deleted
        finally:
            child.stdin.close()
            child.wait()
        assert not (out / LOCK).exists()  # its holder let go: the lock file went with it
    for lock in (new / LOCK, existing / LOCK):
        assert locks.holder(lock) is None


def test_the_command_line_refuses_a_held_folder_and_records_nothing(tiny_llm, tiny_encoder_path, tmp_path):
    """Two runs at once on one --out: the second stops at once, naming the first (here this test's process)."""
    out, ledger, config_file = tmp_path / "run", tmp_path / "ledger", tmp_path / "tiny.json"
    cfg = config(tiny_llm, tiny_encoder_path, epochs=1)
    config_file.write_text(json.dumps(cfg.to_dict()))
    out.mkdir()
    (out / "config.json").write_text(json.dumps(cfg.to_dict()))
    with claim_run_folder(out):
        before = snapshot(out)
        second = subprocess.run([sys.executable, "-m", "toporag_lib.training", "--config", str(config_file),
                                 "--out", str(out), "--ledger", str(ledger)], capture_output=True, text=True)
        assert second.returncode != 0
        assert "RunFolderInUseError" in second.stderr and f"pid {os.getpid()} on host" in second.stderr
        assert str(out) in second.stderr
        assert snapshot(out) == before and not ledger.exists()
    assert not list(ledger.glob(f"*/{RECORD}"))


def test_a_lock_left_by_a_dead_process_is_taken_over(tiny_llm, tiny_encoder_path, tmp_path):
    out = tmp_path / "run"
    child = hold(out / LOCK, then="die")
    child.wait()
    assert json.loads((out / LOCK).read_text())["pid"] == child.pid  # its note is still there: its lock is not
    assert locks.holder(out / LOCK) is None
    with claim_run_folder(out) as lock:
        assert json.loads(lock.path.read_text())["pid"] == os.getpid()
        metrics = run(config(tiny_llm, tiny_encoder_path, epochs=1), out, progress=False)  # this process: re-entered
        assert locks.holds(out / LOCK)
    assert metrics["n"] == 2 and (out / "metrics_test.json").exists() and not (out / LOCK).exists()


def test_the_trainer_holds_its_folder_until_it_is_closed(tiny_llm, tiny_encoder_path, tmp_path):
    out = tmp_path / "run"
    with Trainer(config(tiny_llm, tiny_encoder_path, epochs=1), out, progress=False) as trainer:
        assert json.loads((out / LOCK).read_text())["pid"] == os.getpid()
        trainer.train(stop_after_steps=1)
        other = subprocess.run([sys.executable, "-c", HOLDER, str(out / LOCK), "die"], capture_output=True, text=True)
        assert other.returncode != 0 and "LockHeldError" in other.stderr and f"pid {os.getpid()}" in other.stderr
    assert not (out / LOCK).exists()
    child = hold(out / LOCK)  # free for another process now
    child.stdin.close()
    child.wait()


def test_a_trainer_that_fails_to_start_lets_go_of_its_folder(tiny_llm, tiny_encoder_path, tmp_path):
    out = tmp_path / "run"
    with pytest.raises(FileNotFoundError, match="no model folder"):
        Trainer(config(tiny_llm, tiny_encoder_path, llm_path=str(tmp_path / "missing")), out, progress=False)
    assert not locks.holds(out / LOCK) and not (out / LOCK).exists()


def model_folder(folder: Path) -> Path:
    """A Hugging Face model folder (its own config.json) with an old temporary file a download left."""
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({"architectures": ["LlamaForCausalLM"], "model_type": "llama"}))
    (folder / "model.safetensors").write_bytes(b"\x00" * 64)
    old = folder / ".model.safetensors.part.tmp"
    old.write_bytes(b"half a download")
    os.utime(old, (time.time() - 7200, time.time() - 7200))
    return folder


def test_a_folder_that_is_not_a_run_is_refused_and_left_as_it_was(tiny_llm, tiny_encoder_path, tmp_path,
                                                                  no_preprocessing):
    from toporag_lib.training.__main__ import main

    models = model_folder(tmp_path / "models")
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "todo.txt").write_text("not a run")
    config_file = tmp_path / "tiny.json"
    config_file.write_text(json.dumps(config(tiny_llm, tiny_encoder_path).to_dict()))
    for folder, reason in ((models, "its config.json is not a training run's config"),
                           (notes, "it has no config.json")):
        before = snapshot(folder)
        with pytest.raises(NotARunFolderError, match=reason) as refused:
            Trainer(config(tiny_llm, tiny_encoder_path), folder, progress=False)
        assert str(folder) in str(refused.value)
        with pytest.raises(NotARunFolderError, match=reason):
            main(["--config", str(config_file), "--out", str(folder), "--ledger", str(tmp_path / "ledger")])
        assert snapshot(folder) == before and sorted(p.name for p in folder.iterdir()) == sorted(before)
    assert not (tmp_path / "ledger").exists()
    a_file = tmp_path / "a_file"
    a_file.write_text("x")
    with pytest.raises(NotARunFolderError, match="is a file"):
        Trainer(config(tiny_llm, tiny_encoder_path), a_file, progress=False)
    assert a_file.read_text() == "x"


def test_a_missing_or_empty_folder_or_a_run_folder_is_accepted(tiny_llm, tiny_encoder_path, tmp_path):
    check_run_folder(tmp_path / "missing")
    check_run_folder(tmp_path)  # empty
    (tmp_path / LOCK).write_text('{"pid": 1}')  # a dead run's lock, before it wrote anything: still empty
    check_run_folder(tmp_path)
    (tmp_path / "config.json").write_text(json.dumps(config(tiny_llm, tiny_encoder_path).to_dict()))
    (tmp_path / "checkpoint.pt").write_bytes(b"")
    check_run_folder(tmp_path)
    assert not (tmp_path / "missing").exists()


def test_a_starting_run_that_has_not_written_its_config_yet_is_in_use_not_foreign(tmp_path):
    out = tmp_path / "run"
    child = hold(out / LOCK)
    try:
        (out / ".config.json.abc.tmp").write_text("{")  # its config being written
        with pytest.raises(RunFolderInUseError, match=f"pid {child.pid}"):
            claim_run_folder(out)
    finally:
        child.stdin.close()
        child.wait()


def test_a_lock_is_reentrant_in_its_process_and_each_hold_is_released_once(tmp_path):
    path = tmp_path / "x.lock"
    first, second = locks.acquire(path), locks.acquire(path)
    first.release()
    first.release()  # a second release of one hold does nothing
    assert locks.holds(path) and path.exists()
    second.release()
    assert not locks.holds(path) and not path.exists()
    third = locks.acquire(path)
    del third  # dropped: released
    assert not locks.holds(path) and not path.exists()
    assert locks.holder(path) is None and not path.exists()  # asking creates nothing


def test_a_forked_child_does_not_release_its_parents_lock(tmp_path):
    path = tmp_path / "x.lock"
    with locks.acquire(path):
        pid = os.fork()
        if pid == 0:  # the child: drops its copy of the hold, which must not unlock the parent's
            try:
                locks.acquire(path).release()
            except locks.LockHeldError:
                pass
            finally:
                os._exit(0)
        os.waitpid(pid, 0)
        assert path.exists() and locks.holds(path)
        other = subprocess.run([sys.executable, "-c", HOLDER, str(path), "die"], capture_output=True, text=True)
        assert other.returncode != 0 and "LockHeldError" in other.stderr
