"""The course environment is described twice (requirements.txt for pip, environment.yml for conda):
the two must list the same pinned packages, and .ci/run must run the README's test command."""

import re
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent


def _requirements() -> dict:
    pins = {}
    for line in (ROOT / "requirements.txt").read_text().splitlines():
        line = line.split("#")[0].strip()
        if line:
            name, version = line.split("==")
            pins[name.lower()] = version
    return pins


def _conda_pip_section() -> dict:
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    pip_lists = [d["pip"] for d in env["dependencies"] if isinstance(d, dict) and "pip" in d]
    assert len(pip_lists) == 1, "environment.yml needs exactly one pip section"
    pins = {}
    for spec in pip_lists[0]:
        name, version = spec.split("==")
        pins[name.strip().lower()] = version.strip()
    return pins


def test_every_package_is_pinned_exactly():
    for line in (ROOT / "requirements.txt").read_text().splitlines():
        line = line.split("#")[0].strip()
        assert not line or re.fullmatch(r"[A-Za-z0-9_.\-]+==[A-Za-z0-9_.+\-]+", line), line


def test_requirements_and_environment_yml_agree():
    assert _requirements() == _conda_pip_section()


def test_environment_yml_uses_python_311_and_pip():
    deps = yaml.safe_load((ROOT / "environment.yml").read_text())["dependencies"]
    assert "python=3.11" in deps and "pip" in deps


def test_course_pins_torch_2_13():
    assert _requirements()["torch"] == "2.13.0"


def test_ci_runs_the_readme_test_command():
    readme = (ROOT / "README.md").read_text()
    assert "make test" in readme and "make book" in readme
    commands = [line.strip() for line in (ROOT / ".ci/run").read_text().splitlines()]
    assert "make test" in commands
