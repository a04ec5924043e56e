from django.apps import AppConfig

from benchmark.signals import cue_table_stored, skill_sets_built


class SubmissionsConfig(AppConfig):
    name = "submissions"

    def ready(self) -> None:
        # The catalogue tells when a test set's cue table is stored or its skill variants are
        # rebuilt (signals keep benchmark from importing submissions): the entries scored on it
        # need their ICQ tests, or their skill gaps, again. Imported here: Django lets a module
        # with models load only once the apps are ready.
        from . import diagnostics, runs  # noqa: PLC0415

        cue_table_stored.connect(diagnostics.redo_after_cue_table, dispatch_uid="submissions-redo-icq")
        skill_sets_built.connect(runs.rescore_stale_skill_entries, dispatch_uid="submissions-rescore-skills")
