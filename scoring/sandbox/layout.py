"""What the jail holds and where (docs/sandbox.md, "The sandbox").

Inside the jail, read-only below ``INSIDE``: ``code/`` (the submission, its entry module named
``ENTRY_FILE`` for a single ``.py``), ``model/`` (the hosted model) and ``runtime/``: the child
program as ``CHILD_FILE`` plus a private copy of part of the ``scoring`` package
(``RUNTIME_MODULES`` and ``RUNTIME_DATA``, paths below ``scoring/``). ``runtime/`` comes first
on the child's ``sys.path`` (the submission's ``code/`` comes last), so the names it holds at its
top level are ``RESERVED_MODULES``: a submission may not use them for any top-level module.
"""
from pathlib import PurePosixPath

INSIDE = "/sandbox"  # code, runtime and model are bound below this, read-only
ENTRY_FILE = "interpreter.py"
ENTRY_MODULE = "interpreter"

# The child program (scoring/sandbox/child.py in the repository) under its name in runtime/.
CHILD_FILE = "sandbox_child.py"
# The child of a model run (scoring/sandbox/model_child.py), next to CHILD_FILE, whose helpers
# it imports; the bundle's entry module is MODEL_ENTRY_FILE at the bundle's root.
MODEL_CHILD_FILE = "sandbox_model_child.py"
MODEL_ENTRY_FILE = "predict.py"
MODEL_ENTRY_MODULE = "predict"
# The copy of ``scoring`` the child can import (paths below ``scoring/``): the model wrapper,
# the baselines and the NLTK set-up they tokenize with. The runner refuses to start when one
# of them is missing, so a file that moves must move here too.
RUNTIME_PACKAGE = "scoring"
RUNTIME_MODULES = ("tokenization.py", "models/__init__.py", "models/hosted_model.py",
                   "models/interpreters.py")
RUNTIME_DATA = ("resources/nltk_data",)

# Every top-level name of runtime/: the scoring copy and the child program.
RESERVED_MODULES = (RUNTIME_PACKAGE, PurePosixPath(CHILD_FILE).stem)
# The same for a model run's runtime/: the two child programs.
MODEL_RESERVED_MODULES = (PurePosixPath(CHILD_FILE).stem, PurePosixPath(MODEL_CHILD_FILE).stem)
