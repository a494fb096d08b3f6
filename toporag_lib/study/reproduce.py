"""Run the numbered notebooks headless with papermill under a profile; the main job behind `make reproduce`.

Each notebook runs in `notebooks/` with the profile's parameters; the executed copy goes to
`results/notebooks/<name>.ipynb` (with its outputs and figures). A notebook whose source, parameters and library
code have not changed since its last successful run is skipped unless `--force`. A failing notebook is named
with its cell; the others still run and keep their results. Parameters of the wrong shape for their notebook
(`notebook_parameters.check_parameters`) stop the whole run before the first notebook, with nothing written.

    python -m toporag_lib.study.reproduce --profile cpu-quick [--only 01 02] [--force]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from toporag_lib import atomic
from toporag_lib.paths import PACKAGE_DIR, PROJECT_ROOT, results_dir
from toporag_lib.study import report
from toporag_lib.study.notebook_parameters import NOTEBOOK_DIR, check_parameters
from toporag_lib.study.profiles import PROFILES, notebook_parameters
from toporag_lib.training.ledger import COMMAND_ENV

FINGERPRINTS = ".fingerprints.json"


@dataclass
class Outcome:
    notebook: str
    status: str  # "ran", "skipped" or "failed"
    seconds: float = 0.0
    error: str = ""


def numbered_notebooks(folder: Path = NOTEBOOK_DIR) -> list[Path]:
    return sorted(p for p in folder.glob("[0-9][0-9]_*.ipynb"))


def library_digest() -> str:
    """Hash of the library's code and bundled data: a change re-runs every notebook."""
    digest = hashlib.sha1()
    for path in sorted(PACKAGE_DIR.rglob("*")):
        if path.is_file() and "__pycache__" not in path.parts:
            digest.update(str(path.relative_to(PACKAGE_DIR)).encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()


# Notebooks that read the results ledger (`results/runs/`): a newly recorded run re-runs them.
LEDGER_READERS = ("04_", "05_", "07_", "08_")


def ledger_digest() -> str:
    """Hash of every run record in the ledger."""
    digest = hashlib.sha1()
    for path in sorted((results_dir() / "runs").glob("*/record.json")):
        digest.update(path.parent.name.encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()


def fingerprint(notebook: Path, parameters: dict[str, Any], library: str, ledger: str = "") -> str:
    """What a notebook's outputs depend on: its source, its parameters, the library and, for `LEDGER_READERS`,
    the ledger."""
    reads_ledger = notebook.name.startswith(LEDGER_READERS)
    payload = (notebook.read_bytes() + json.dumps(parameters, sort_keys=True).encode() + library.encode()
               + (ledger.encode() if reads_ledger else b""))
    return hashlib.sha1(payload).hexdigest()


def describe_failure(error: Exception) -> str:
    """Papermill's error names the cell that failed; keep its first lines."""
    cell = getattr(error, "exec_count", None)
    name = getattr(error, "ename", type(error).__name__)
    value = getattr(error, "evalue", str(error))
    where = f"cell [{cell}]" if cell is not None else "before any cell ran"
    return f"{where}: {name}: {value}".strip()


def run_notebook(notebook: Path, parameters: dict[str, Any], out_dir: Path) -> None:
    import papermill

    out_dir.mkdir(parents=True, exist_ok=True)
    executed = out_dir / notebook.name
    papermill.execute_notebook(str(notebook), str(executed), parameters=parameters, cwd=str(notebook.parent),
                               kernel_name="python3", progress_bar=False, log_output=False)


def reproduce(profile: str = "cpu-quick", only: list[str] | None = None, force: bool = False,
              notebooks: list[Path] | None = None) -> list[Outcome]:
    """Run the notebooks in order; returns what happened to each."""
    if profile not in PROFILES:
        raise ValueError(f"unknown profile {profile!r}; known: {sorted(PROFILES)}")
    planned = [(notebook, notebook_parameters(profile, notebook.stem)) for notebook in notebooks or numbered_notebooks()
               if not only or any(notebook.name.startswith(prefix) for prefix in only)]
    for notebook, parameters in planned:  # every notebook's, before the first one runs or anything is written
        check_parameters(notebook, parameters)
    out_dir = results_dir() / "notebooks"
    record_path = out_dir / FINGERPRINTS
    record = atomic.read_json(record_path) if record_path.exists() else {}
    library = library_digest()
    os.environ[COMMAND_ENV] = f"make reproduce PROFILE={profile}"  # what the notebooks' run records name
    outcomes = []
    for notebook, parameters in planned:
        key = fingerprint(notebook, parameters, library, ledger_digest())
        if not force and record.get(notebook.name) == key and (out_dir / notebook.name).exists():
            outcomes.append(Outcome(notebook.name, "skipped"))
            print(f"= {notebook.name}: unchanged since its last run, skipped (--force to re-run)", flush=True)
            continue
        print(f"> {notebook.name} [{profile}] {parameters}", flush=True)
        start = time.perf_counter()
        try:
            run_notebook(notebook, parameters, out_dir)
        except Exception as error:  # noqa: BLE001 - report it, keep going with the other notebooks
            outcomes.append(Outcome(notebook.name, "failed", time.perf_counter() - start, describe_failure(error)))
            print(f"! {notebook.name} failed at {outcomes[-1].error}", flush=True)
            record.pop(notebook.name, None)
        else:
            outcomes.append(Outcome(notebook.name, "ran", time.perf_counter() - start))
            print(f"  {notebook.name} done in {outcomes[-1].seconds:.0f} s", flush=True)
            record[notebook.name] = fingerprint(notebook, parameters, library, ledger_digest())  # its own runs too
        atomic.write_text(record_path, json.dumps(record, indent=1, sort_keys=True))
    return outcomes


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--profile", default="cpu-quick", choices=sorted(PROFILES))
    parser.add_argument("--only", nargs="*", help="notebook number prefixes to run, e.g. 01 03")
    parser.add_argument("--force", action="store_true", help="re-run notebooks even when unchanged")
    args = parser.parse_args(argv)
    outcomes = reproduce(args.profile, args.only, args.force)
    failed = [o for o in outcomes if o.status == "failed"]
    if results_dir() == PROJECT_ROOT / "results":  # the README's headline follows the project's own ledger
        print(f"headline table rewritten in {report.write_readme_headline(PROJECT_ROOT / 'README.md', results_dir())}")
    print(f"\n{len(outcomes) - len(failed)} notebook(s) ok, {len(failed)} failed; results in {results_dir()}")
    for o in failed:
        print(f"  FAILED {o.notebook}: {o.error}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
