"""Start-up imports: the scorer and the Django apps load NLTK's tokenizers, not the whole of NLTK.

``import nltk`` runs nltk/__init__.py, which pulls scipy.stats, scikit-learn and pandas (about
1 CPU-s and 130 MiB a process). scoring.tokenization registers the package without that
__init__ (its docstring says how); these checks run in fresh interpreters, so a module-level
``import nltk`` or ``from nltk import x`` added anywhere on the start-up path fails here.
"""
import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
OFFICIAL_FIXTURE = REPO / "tests" / "fixtures" / "expmrc_official"
HEAVY = ("scipy", "sklearn", "pandas", "nltk.collocations", "torch")
REPORT_HEAVY = f"import json, sys; print(json.dumps(sorted(m for m in {HEAVY!r} if m in sys.modules)))"


def run_python(code: str, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(REPO), "DJANGO_SETTINGS_MODULE": "config.settings"}
    done = subprocess.run([sys.executable, "-c", code, *args], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    return done


def last_line(done: subprocess.CompletedProcess):
    return json.loads(done.stdout.splitlines()[-1])


def test_django_setup_and_the_url_conf_load_no_scipy_sklearn_or_pandas():
    done = run_python(f"import django; django.setup(); import config.urls, config.celery; {REPORT_HEAVY}")
    assert last_line(done) == []


def test_the_scorer_command_scores_without_scipy_sklearn_or_pandas():
    # What the ``expbench-score`` console script runs, on official figures kept in the repository.
    code = f"import sys; from scoring.cli import main; main(sys.argv[1:]); {REPORT_HEAVY}"
    done = run_python(code, "expmrc", str(OFFICIAL_FIXTURE / "squad-gold.json"),
                      str(OFFICIAL_FIXTURE / "squad-predictions.json"))
    score, heavy = (json.loads(line) for line in done.stdout.splitlines()[-2:])
    figures = json.loads((OFFICIAL_FIXTURE / "figures.json").read_text(encoding="utf-8"))["squad"]
    assert score["ALL_F1"] == figures["ALL_F1"] and score["EVI_F1"] == figures["EVI_F1"]
    assert heavy == []


def test_the_rest_of_nltk_loads_on_first_use_and_tokenizes_alike():
    code = (
        "import json, sys\n"
        "from scoring.tokenization import sent_tokenize, word_tokenize\n"
        "text = 'Mr. Smith paid $3.50 (about 1869-1909). \"Is it?\" she asked.'\n"
        "light = [word_tokenize(text), sent_tokenize(text), 'scipy' in sys.modules]\n"
        "import nltk\n"
        "from nltk import pos_tag  # a name only nltk/__init__.py defines\n"
        "whole = [nltk.word_tokenize(text), nltk.sent_tokenize(text), 'scipy' in sys.modules]\n"
        "print(json.dumps([light, whole, nltk.__version__, callable(pos_tag)]))\n"
    )
    light, whole, version, has_pos_tag = last_line(run_python(code))
    assert light[2] is False and whole[2] is True  # NLTK's own __init__ ran, on first use only
    assert light[:2] == whole[:2] and "Mr." in light[0]  # the vendored Punkt model in both
    assert version == "3.9.2" and has_pos_tag


def test_nltk_loaded_first_is_left_as_it_is():
    code = ("import json, nltk, sys\n"
            "whole = sys.modules['nltk']\n"
            "from scoring.tokenization import VENDORED_NLTK_DATA, word_tokenize\n"
            "print(json.dumps([sys.modules['nltk'] is whole, nltk.data.path[0] == VENDORED_NLTK_DATA,\n"
            "                  word_tokenize is nltk.word_tokenize]))\n")
    assert last_line(run_python(code)) == [True, True, True]
