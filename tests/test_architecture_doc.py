"""docs/architecture.md stays true to the code: its package table names every module and
subpackage of the product, and it counts the background jobs there are."""
import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DOC = (REPO / "docs" / "architecture.md").read_text(encoding="utf-8")
PACKAGES = ["scoring", "core", "accounts", "benchmark", "submissions", "leaderboards", "config", "expbench_client"]
# Django's and Python's own file names: the table sums them up as "pages, API" of each app.
CONVENTIONAL = {"__init__", "__main__", "apps", "admin", "urls", "views", "api", "serializers", "forms"}
NOT_CODE = {"migrations", "management", "resources", "__pycache__"}
NUMBERS = {"four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9, "ten": 10}


def table_rows() -> list[tuple[str, str]]:
    section = DOC[DOC.index("## Packages, one line each"):]
    section = section[:section.index("\n## ", 1)]
    rows = [line.split("|")[1:3] for line in section.splitlines() if line.startswith("| `")]
    return [(first, first + what) for first, what in rows]


def units(package: str) -> list[str]:
    """The modules and subpackages directly inside ``package``, without the conventional ones."""
    root = REPO / package
    found = [path.stem for path in root.glob("*.py") if path.stem not in CONVENTIONAL]
    found += [path.name for path in root.iterdir()
              if path.is_dir() and path.name not in NOT_CODE and (path / "__init__.py").exists()]
    return sorted(found)


def test_package_table_names_every_module():
    rows = table_rows()
    missing = []
    for package in PACKAGES:
        texts = [text for first, text in rows if f"`{package}/" in first]
        assert texts, f"docs/architecture.md has no row for {package}/"
        for unit in units(package):
            forms = (f"{unit}.py", f"`{unit}`", f"{unit}/", f"{package}/{unit}")
            if not any(form in text for text in texts for form in forms):
                missing.append(f"{package}/{unit}")
    assert not missing, f"docs/architecture.md's package table does not name: {', '.join(missing)}"


def test_background_job_count_matches_the_code():
    declared = [match for package in PACKAGES for path in (REPO / package).rglob("*.py")
                for match in re.findall(r"^\w+ = Job\(", path.read_text(encoding="utf-8"), flags=re.M)]
    said = re.search(r"^(\w+) kinds of work run in Celery workers", DOC, flags=re.M)
    assert said, "docs/architecture.md no longer says how many kinds of background work there are"
    assert NUMBERS[said.group(1).lower()] == len(declared)
