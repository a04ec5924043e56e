"""NLTK set-up shared by every scorer and analysis that tokenizes: the vendored Punkt model.

Importing this module puts ``scoring/resources/nltk_data`` first on ``nltk.data.path``, so
sentence and word tokenization never look elsewhere and nothing is ever downloaded. The
official ExpMRC scorer depends on NLTK 3.9.2's exact tokenization (see docs/metrics.md).
"""
from pathlib import Path

import nltk

VENDORED_NLTK_DATA = str(Path(__file__).resolve().parent / "resources" / "nltk_data")

if VENDORED_NLTK_DATA not in nltk.data.path:
    nltk.data.path.insert(0, VENDORED_NLTK_DATA)
