"""The installable package (pyproject.toml): what the wheel holds, what its base install needs,
and that an installed ``expbench-score`` gives the official figures from any directory."""
import email
import json
import os
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest
from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parent.parent
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
SHARED_EXPMRC = ROOT.parent / "shared" / "data" / "expmrc"
HEAVY = {"django", "djangorestframework", "celery", "torch", "transformers", "gunicorn", "psycopg"}


def lock_pins():
    """{normalised name: pinned version} of requirements.txt and requirements-models.txt (the
    server's lock, the QUACKIE model stack's)."""
    pins = {}
    lines = [line for name in ("requirements.txt", "requirements-models.txt")
             for line in (ROOT / name).read_text().splitlines()]
    for line in lines:
        line = line.split("#", 1)[0].strip()
        if line and not line.startswith("-r "):
            requirement = Requirement(line)
            pins[requirement.name.lower().replace("_", "-")] = str(requirement.specifier).removeprefix("==")
    return pins


@pytest.fixture(scope="module")
def wheel(tmp_path_factory):
    """The wheel `pip wheel .` builds from this checkout (no build isolation: setuptools is in
    requirements-dev.txt, so the test needs no network)."""
    out = tmp_path_factory.mktemp("wheel")
    build = tmp_path_factory.mktemp("build")
    # A copy of the sources keeps setuptools' build/ and *.egg-info out of the checkout.
    for name in ("pyproject.toml", "README.md", "LICENSE", "scoring", "expbench_client"):
        source = ROOT / name
        if source.is_dir():
            subprocess.run(["cp", "-r", str(source), str(build / name)], check=True)
        else:
            (build / name).write_bytes(source.read_bytes())
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--quiet",
                    "-w", str(out), str(build)], check=True, capture_output=True, timeout=300)
    [path] = out.glob("expbench-*.whl")
    return path


def test_the_wheel_holds_the_scorers_the_client_their_data_and_licences(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    top_level = {name.split("/")[0] for name in names if not name.split("/")[0].endswith(".dist-info")}
    assert top_level == {"scoring", "expbench_client"}  # no Django app, no tests
    for data in ("scoring/resources/nltk_data/tokenizers/punkt_tab/english/sent_starters.txt",
                 "scoring/resources/skills/wordnet30_adjective_antonyms.tsv",
                 "scoring/resources/icq/en_negation.txt",
                 "scoring/resources/question_types.json",
                 "scoring/resources/nltk_data/LICENSE",
                 "scoring/resources/skills/LICENSE.md"):
        assert data in names
    assert any(name.endswith(".dist-info/licenses/LICENSE") for name in names)
    assert not any("__pycache__" in name for name in names)


def test_the_base_install_needs_no_django_and_no_torch(wheel):
    archive = zipfile.ZipFile(wheel)
    [metadata_name] = [n for n in archive.namelist() if n.endswith(".dist-info/METADATA")]
    metadata = email.message_from_bytes(archive.read(metadata_name))
    base = [Requirement(r) for r in metadata.get_all("Requires-Dist") if "extra ==" not in r]
    assert {r.name.lower() for r in base} == {"nltk", "numpy"}
    assert metadata["License-Expression"] == "MIT"
    [entry_points_name] = [n for n in archive.namelist() if n.endswith(".dist-info/entry_points.txt")]
    entry_points = archive.read(entry_points_name).decode()
    assert "expbench-score = scoring.cli:main" in entry_points and "expbench = expbench_client.cli:main" in entry_points
    extras = {r.marker and str(r.marker) for r in map(Requirement, metadata.get_all("Requires-Dist"))
              if r.name.lower() in HEAVY}
    assert extras and all("extra ==" in marker for marker in extras)


def test_every_declared_dependency_is_in_the_lock_and_its_pin_satisfies_the_range():
    """requirements.txt stays the lock the server and CI install; the ranges in pyproject.toml
    must admit exactly those pins, or a `pip install ".[server]"` would run untested versions."""
    pins = lock_pins()
    declared = list(PYPROJECT["project"]["dependencies"])
    for requirements in PYPROJECT["project"]["optional-dependencies"].values():
        declared += [r for r in requirements if not r.startswith("expbench[")]
    assert len(declared) > 20
    for line in declared:
        requirement = Requirement(line)
        name = requirement.name.lower().replace("_", "-")
        assert name in pins, f"{name} is declared in pyproject.toml but not pinned in requirements.txt"
        assert requirement.specifier.contains(pins[name], prereleases=True), f"{name}=={pins[name]} vs {line}"


def test_an_installed_expbench_score_gives_the_official_figures_from_any_directory(wheel, tmp_path):
    target = tmp_path / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "--quiet", "--target", str(target),
                    str(wheel)], check=True, capture_output=True, timeout=300)
    script = target / "bin" / "expbench-score"
    assert script.exists()
    if (SHARED_EXPMRC / "sample_submission" / "squad.json").exists():
        gold, predictions = SHARED_EXPMRC / "expmrc-squad-dev.json", SHARED_EXPMRC / "sample_submission" / "squad.json"
        expected = {"ALL_F1": "71.690", "ANS_F1": "92.875", "EVI_F1": "76.760", "TOTAL": 501}
    else:
        gold, predictions = ROOT / "tests/fixtures/expmrc/span_gold.json", ROOT / "tests/fixtures/expmrc/span_pred.json"
        expected = {"TOTAL": 4}
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    # Only the installed copy is importable: the checkout is neither the working directory nor
    # on the path, so the Punkt model and word lists must come from the wheel.
    env = {**os.environ, "PYTHONPATH": str(target), "NLTK_DATA": str(tmp_path / "no-nltk-data")}
    result = subprocess.run([sys.executable, str(script), "expmrc", str(gold), str(predictions)], cwd=elsewhere,
                            env=env, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    summary = json.loads(result.stdout)
    assert {k: summary[k] for k in expected} == expected
    where = subprocess.run([sys.executable, "-c", "import scoring; print(scoring.__file__)"], cwd=elsewhere,
                           env=env, capture_output=True, text=True, check=True)
    assert where.stdout.startswith(str(target))
    usage = subprocess.run([sys.executable, str(script), "--help"], cwd=elsewhere, env=env, capture_output=True,
                           text=True)
    assert usage.stdout.startswith("usage: expbench-score")

    # The client's console script: its commands, and a one-line error when no server answers.
    client = target / "bin" / "expbench"
    usage = subprocess.run([sys.executable, str(client), "--help"], cwd=elsewhere, env=env, capture_output=True,
                           text=True)
    assert usage.returncode == 0 and usage.stdout.startswith("usage: expbench")
    for command in ("login", "tasks", "inputs", "submit", "list", "status", "cancel", "publish", "unpublish",
                    "diagnostics", "compare", "leaderboard", "quota"):
        assert command in usage.stdout
    down = subprocess.run([sys.executable, str(client), "--url", "http://127.0.0.1:9", "--retries", "0", "tasks"],
                          cwd=elsewhere, env={**env, "EXPBENCH_CONFIG": str(tmp_path / "none.json")},
                          capture_output=True, text=True, timeout=60)
    assert down.returncode == 3 and down.stdout == ""
    assert down.stderr.startswith("error: cannot reach the ExpBench server at http://127.0.0.1:9")
    assert down.stderr.count("\n") == 1


def test_the_client_reports_the_package_version():
    import expbench_client

    assert expbench_client.__version__ == PYPROJECT["project"]["version"]


def test_the_citation_file_names_each_paper_with_the_code_that_implements_it():
    import re

    import yaml

    citation = yaml.safe_load((ROOT / "CITATION.cff").read_text())
    assert citation["cff-version"] == "1.2.0" and citation["license"] == PYPROJECT["project"]["license"]
    assert citation["version"] == PYPROJECT["project"]["version"]
    titles = [reference["title"] for reference in citation["references"]]
    assert any(title.startswith("ExpMRC") for title in titles) and any(title.startswith("QUACKIE") for title in titles)
    for reference in citation["references"]:
        paths = re.findall(r"scoring/[\w/]+(?:\.py|/)", reference["notes"])
        assert paths, reference["title"]
        for path in paths:
            assert (ROOT / path).exists(), f"{reference['title']}: {path} does not exist"


def test_the_default_start_installs_no_model_stack_and_the_tests_install_everything():
    """scripts/run.sh installs requirements.txt: the boards and file submissions, no torch. The
    QUACKIE model stack is requirements-models.txt (on top of it); the tests install both."""
    def names(file: str) -> set[str]:
        found = set()
        for line in (ROOT / file).read_text().splitlines():
            line = line.split("#", 1)[0].strip()
            if line and not line.startswith("-r "):
                found.add(Requirement(line).name.lower().replace("_", "-"))
        return found

    models = {r.split(">")[0].split("=")[0].lower() for r in PYPROJECT["project"]["optional-dependencies"]["models"]}
    assert not names("requirements.txt") & (models | {"torch", "transformers", "onnxruntime"})
    assert models <= names("requirements-models.txt")
    assert "-r requirements.txt" in (ROOT / "requirements-models.txt").read_text().splitlines()
    assert "-r requirements-models.txt" in (ROOT / "requirements-dev.txt").read_text().splitlines()
