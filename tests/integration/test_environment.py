"""The environment is described three times (requirements.txt, environment.yml, pyproject.toml): keep them in step."""

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def pinned(lines):
    return {line.strip() for line in lines if re.match(r"^[A-Za-z0-9_.-]+==\S+$", line.strip())}


def name(requirement: str) -> str:
    return re.split(r"[=<>!~ \[]", requirement, maxsplit=1)[0].lower().replace("_", "-")


def requirements():
    return pinned((ROOT / "requirements.txt").read_text().splitlines())


def conda_pip_requirements():
    lines = (ROOT / "environment.yml").read_text().splitlines()
    start = lines.index("  - pip:")
    return pinned(line.strip().removeprefix("- ") for line in lines[start + 1:])


def test_environment_yml_matches_requirements():
    assert conda_pip_requirements() == requirements()
    assert "  - python=3.11" in (ROOT / "environment.yml").read_text().splitlines()


def test_pyproject_dependencies_are_all_pinned_in_requirements():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    declared = set(project["dependencies"])
    for extra in project["optional-dependencies"].values():
        declared |= set(extra)
    assert {name(r) for r in declared} == {name(r) for r in requirements()}


def test_torch_is_pinned_to_the_cpu_wheel_everywhere():
    assert "torch==2.13.0" in requirements()
    assert (ROOT / "constraints.txt").read_text().split() == ["torch==2.13.0"]
    assert "-c constraints.txt" in (ROOT / "Makefile").read_text()


def test_ci_runs_the_readme_test_command():
    assert "make test" in (ROOT / ".ci" / "run").read_text()
    readme = (ROOT / "README.md").read_text()
    assert "make test" in readme and "make reproduce" in readme


def test_pcst_solver_is_the_numpy2_safe_build():
    assert any(r.startswith("pcst-fast2==") for r in requirements())
    assert not any(name(r) == "pcst-fast" for r in requirements())
