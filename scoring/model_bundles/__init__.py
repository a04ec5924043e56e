"""Model submissions (docs/model_submissions.md): a zip whose root holds ``predict.py`` defining
``predict(examples)``, run on a task's examples in the sandbox or, for debugging, in this process.
No Django here. The modules, each importing only those listed before it (and ``scoring.sandbox``,
which runs the bundle):

* ``examples``: a test set's public inputs as the flat records ``predict`` receives, per format,
  and the task's strict parser applied to what it returns;
* ``in_process``: ``run_in_process``, the sandbox's run without the jail (the CLI's);
* ``pipeline``: ``run_model``, from public inputs to parsed predictions in one call;
* ``build``: reproducible bundle zips, the reference bundle among them;
* ``reference/predict.py``: the reference bundle, a lexical-overlap baseline.
"""
