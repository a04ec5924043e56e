from django import forms


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
    def __init__(self, *args, task=None, **kwargs):
        super().__init__(*args, **kwargs)
        if task is None or task.kind != "span":
            del self.fields["kind"]  # only span tasks have reconstructed skill sets

    public = forms.BooleanField(required=False, initial=True, label="Show on the public leaderboard once scored")
