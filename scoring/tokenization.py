"""NLTK's tokenizers, shared by every scorer and analysis that tokenizes, and nothing else of NLTK.

Import the tokenizers from here, never from ``nltk`` directly. Two things happen on import:

- ``scoring/resources/nltk_data`` goes first on ``nltk.data.path``, so sentence and word
  tokenization never look elsewhere and nothing is ever downloaded. The official ExpMRC scorer
  depends on NLTK 3.9.2's exact tokenization (see docs/metrics.md).
- Only ``nltk.tokenize`` and ``nltk.data`` load, not the whole of NLTK. ``nltk/__init__.py``
  imports every NLTK subpackage and, through them, scipy.stats, scikit-learn and pandas: about
  1 CPU-s and 130 MiB in every web worker, Celery worker and ``expbench-score`` process, for
  tokenizers that need none of it. So, unless NLTK is already loaded, the ``nltk`` package is
  registered without running its ``__init__``; its submodules import as usual. The rest of NLTK
  stays one attribute away: the first access to a name the package does not hold yet
  (``nltk.pos_tag``, ``nltk.__version__``) runs NLTK's own ``__init__`` then, once, so code that
  does ``import nltk`` later still sees the whole package.
  tests/scoring/test_startup_imports.py checks that the scorer and ``django.setup()`` load no
  scipy or scikit-learn.
"""
from __future__ import annotations

import importlib.util
import sys
import threading
from pathlib import Path


def _register_nltk_without_its_init() -> None:
    """Put the ``nltk`` package in ``sys.modules`` with its ``__init__`` deferred to first use."""
    if "nltk" in sys.modules:
        return
    spec = importlib.util.find_spec("nltk")
    if spec is None or spec.loader is None or spec.submodule_search_locations is None:
        return  # not installed as a package: the imports below fail the usual way
    package = importlib.util.module_from_spec(spec)
    loader = spec.loader
    lock = threading.RLock()
    state = {"started": False}

    def run_init_then_get(name: str) -> object:
        # NLTK's own modules write ``from nltk import grammar``: a submodule is imported as
        # such, without the __init__.
        if not state["started"] and importlib.util.find_spec(f"nltk.{name}") is not None:
            return importlib.import_module(f"nltk.{name}")
        # Several threads may reach for NLTK at once: one runs the __init__, the others wait.
        # While it runs, its own ``from nltk import x`` lands here on the same thread and must
        # see a plain AttributeError, so that the import system loads the submodule ``nltk.x``.
        with lock:
            if not state["started"]:
                state["started"] = True
                try:
                    loader.exec_module(package)
                finally:
                    package.__dict__.pop("__getattr__", None)
        try:
            return package.__dict__[name]
        except KeyError:
            raise AttributeError(f"module 'nltk' has no attribute {name!r}") from None

    package.__dict__["__getattr__"] = run_init_then_get  # a module-level __getattr__ (PEP 562)
    sys.modules["nltk"] = package


_register_nltk_without_its_init()

# After the package is registered: these load nltk.tokenize and nltk.data, not nltk/__init__.py.
import nltk.data  # noqa: E402
from nltk.tokenize import NLTKWordTokenizer, sent_tokenize, word_tokenize  # noqa: E402
from nltk.tokenize.punkt import PunktTokenizer  # noqa: E402

__all__ = ["NLTKWordTokenizer", "PunktTokenizer", "VENDORED_NLTK_DATA", "sent_tokenize", "word_tokenize"]

VENDORED_NLTK_DATA = str(Path(__file__).resolve().parent / "resources" / "nltk_data")

if VENDORED_NLTK_DATA not in nltk.data.path:
    nltk.data.path.insert(0, VENDORED_NLTK_DATA)
