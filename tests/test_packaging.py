"""The installable package (pyproject.toml): what the wheel holds, what its base install needs,
and that an installed ``expbench-score`` gives the official figures from any directory."""
import email
import json
import os
import re
import subprocess
import sys
import sysconfig
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
    # Names of their own only (no "scoring": another project's), no Django app, no tests.
    assert top_level == {"expbench_scoring", "expbench_client"}
    for data in ("expbench_scoring/resources/nltk_data/tokenizers/punkt_tab/english/sent_starters.txt",
                 "expbench_scoring/resources/skills/wordnet30_adjective_antonyms.tsv",
                 "expbench_scoring/resources/icq/en_negation.txt",
                 "expbench_scoring/resources/question_types.json",
                 "expbench_scoring/resources/nltk_data/LICENSE",
                 "expbench_scoring/resources/skills/LICENSE.md"):
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
    assert "expbench-score = expbench_scoring.cli:main" in entry_points and "expbench = expbench_client.cli:main" in entry_points
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
    where = subprocess.run([sys.executable, "-c", "import expbench_scoring; print(expbench_scoring.__file__)"],
                           cwd=elsewhere, env=env, capture_output=True, text=True, check=True)
    assert where.stdout.startswith(str(target))
    module = subprocess.run([sys.executable, "-m", "expbench_scoring", "expmrc", str(gold), str(predictions)],
                            cwd=elsewhere, env=env, capture_output=True, text=True, timeout=120)
    assert module.returncode == 0 and json.loads(module.stdout) == summary, module.stderr
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


def test_the_wheel_lists_every_package_of_the_scoring_folder():
    """pyproject.toml names the packages one by one (the folder installs under another name),
    so a new subpackage must join the list or the wheel would silently leave it out."""
    on_disk = {".".join(("expbench_scoring",) + path.parent.relative_to(ROOT / "scoring").parts)
               for path in (ROOT / "scoring").rglob("__init__.py")}
    on_disk |= {".".join(path.parent.relative_to(ROOT).parts) for path in (ROOT / "expbench_client").rglob("__init__.py")}
    assert set(PYPROJECT["tool"]["setuptools"]["packages"]) == on_disk


def test_scoring_imports_itself_relatively_so_it_runs_under_either_name():
    offenders = [f"{path.relative_to(ROOT)}:{number}" for path in (ROOT / "scoring").rglob("*.py")
                 for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
                 if line.lstrip().startswith(("from scoring.", "from scoring import", "import scoring"))]
    assert not offenders


def test_the_package_description_links_only_absolute_urls_of_the_projects_home():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    targets = re.findall(r"\]\(([^)\s]+)\)", readme)
    home = PYPROJECT["project"]["urls"]["Source"]
    assert targets and all(t.startswith(("https://", "http://", "#")) for t in targets), \
        [t for t in targets if not t.startswith(("https://", "http://", "#"))]
    for target in targets:  # links into the repository name files that exist
        if target.startswith(home + "/blob/main/"):
            assert (ROOT / target.removeprefix(home + "/blob/main/").split("#")[0]).exists(), target


def test_installing_and_removing_a_distribution_named_scoring_leaves_expbench_whole(wheel, tmp_path):
    """The clash this naming avoids: a PyPI project that installs a top-level "scoring" package.
    Both go into one environment; removing that one must not remove any file of ours."""
    other = tmp_path / "other"
    (other / "scoring").mkdir(parents=True)
    (other / "scoring" / "__init__.py").write_text("OTHER = True\n")
    (other / "pyproject.toml").write_text('[build-system]\nrequires = ["setuptools>=77"]\n'
                                          'build-backend = "setuptools.build_meta"\n'
                                          '[project]\nname = "scoring"\nversion = "0.1"\n'
                                          '[tool.setuptools]\npackages = ["scoring"]\n')
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--quiet",
                    "-w", str(tmp_path / "wheels"), str(other)], check=True, capture_output=True, timeout=300)
    [other_wheel] = (tmp_path / "wheels").glob("scoring-*.whl")
    environment = tmp_path / "env"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(environment)], check=True, timeout=120)
    python = str(environment / "bin" / "python")
    # nltk and numpy from this environment, after the new one's own packages.
    [site] = (environment / "lib").glob("python3*/site-packages")
    (site / "dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    pip = [sys.executable, "-m", "pip", "--python", python]
    for archive in (wheel, other_wheel):
        subprocess.run(pip + ["install", "--no-deps", "--quiet", str(archive)], check=True, capture_output=True,
                       timeout=300)
    subprocess.run(pip + ["uninstall", "--yes", "--quiet", "scoring"], check=True, capture_output=True, timeout=300)
    [record] = site.glob("expbench-*.dist-info/RECORD")
    ours = [line.split(",")[0] for line in record.read_text().splitlines() if line]
    assert ours and all((site / name).exists() for name in ours if not name.startswith("../"))
    check = subprocess.run([python, "-c", "import expbench_scoring.cli, expbench_scoring.metrics.expmrc, "
                            "expbench_client.cli; print(expbench_scoring.__file__)"], cwd=tmp_path,
                           capture_output=True, text=True, timeout=120)
    assert check.returncode == 0, check.stderr
    assert check.stdout.startswith(str(environment))
    usage = subprocess.run([str(environment / "bin" / "expbench-score"), "--help"], cwd=tmp_path,
                           capture_output=True, text=True, timeout=120)
    assert usage.returncode == 0 and usage.stdout.startswith("usage: expbench-score"), usage.stderr


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
