from django.apps import AppConfig

from benchmark.signals import cue_table_stored


class SubmissionsConfig(AppConfig):
    name = "submissions"

    def ready(self) -> None:
        # The catalogue tells when a test set's cue table is stored (a signal keeps benchmark
        # from importing submissions); the entries scored on it need their ICQ tests again.
        # Imported here: Django lets a module with models load only once the apps are ready.
        from . import diagnostics  # noqa: PLC0415

        cue_table_stored.connect(diagnostics.redo_after_cue_table, dispatch_uid="submissions-redo-icq")
