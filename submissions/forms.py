from typing import Any, cast

from django import forms

from benchmark.models import Task


class PredictionUploadForm(forms.Form):
    kind = forms.ChoiceField(
        choices=[("predictions", "Predictions for the hidden test set"),
                 ("skills", "Skill predictions: original + reconstructed sets (s1–s14)")],
        initial="predictions", required=False,
        help_text="Skill predictions are one JSON object {\"original\": {...}, \"s1\": {...}, ...}.")
    file = forms.FileField(
        allow_empty_file=True,
        help_text='One JSON object {"<question key>": {"answer": "...", "evidence": "..."}}.',
    )
    method_name = forms.CharField(max_length=120, help_text="System name shown on the leaderboard.")
    description = forms.CharField(widget=forms.Textarea(attrs={"rows": 3}), required=False, max_length=5000)
    url = forms.URLField(required=False, label="Paper or code URL", assume_scheme="https")
    KIND_CHOICES_BY_TASK = {
        "span": [("predictions", "Predictions for the hidden test set"),
                 ("skills", "Skill predictions: original + reconstructed sets (s1–s14)")],
        "interpretation": [("predictions", "Sentence-score file {sample_id: [floats]}"),
                           ("code", "Interpreter code (.py, or .zip with one entry module), run in the sandbox")],
    }

    def __init__(self, *args: Any, task: Task | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        choices = self.KIND_CHOICES_BY_TASK.get(task.kind) if task is not None else None
        if choices:
            cast(forms.ChoiceField, self.fields["kind"]).choices = choices
            self.fields["kind"].help_text = ""
        else:
            del self.fields["kind"]  # one kind of upload only

    public = forms.BooleanField(required=False, initial=True, label="Show on the public leaderboard once scored")
