from django import forms


class PredictionUploadForm(forms.Form):
    file = forms.FileField(
        allow_empty_file=True,
        help_text='One JSON object {"<question key>": {"answer": "...", "evidence": "..."}}.',
    )
    method_name = forms.CharField(max_length=120, help_text="System name shown on the leaderboard.")
    description = forms.CharField(widget=forms.Textarea(attrs={"rows": 3}), required=False, max_length=5000)
    url = forms.URLField(required=False, label="Paper or code URL", assume_scheme="https")
    public = forms.BooleanField(required=False, initial=True, label="Show on the public leaderboard once scored")
