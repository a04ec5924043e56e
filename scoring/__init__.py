"""ExpBench scorers and analyses: pure Python, no Django (see docs/architecture.md).

- ``scoring.metrics``: the official metrics (ExpMRC, QUACKIE, classification, CheckList);
- ``scoring.analysis``: diagnostics (permutation tests, question types, linguistic bias, ICQ,
  skill-based reconstructed sets);
- ``scoring.models``: hosted transformers models, interpretability baselines, the demo
  classifier's training (torch is imported by these modules only);
- ``scoring.sandbox``: running submitted interpreter code under bubblewrap;
- ``stats``, ``strict_json`` and ``tokenization``: shared by all of them.

``python -m scoring`` is the command-line front end (``scoring.cli``).
"""
from pathlib import Path

# Word lists, lexicons and the vendored NLTK Punkt model (see the README beside them).
RESOURCES_DIR = Path(__file__).resolve().parent / "resources"
