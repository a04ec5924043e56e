from typing import Any, cast

from django import forms
from django.contrib.auth.models import AnonymousUser, User
from django.db import transaction
from django.utils.translation import gettext, gettext_lazy

from accounts.models import profile_of
from benchmark.models import Task

from .models import DevSetUse, NameChange, Status, Submission


class PredictionUploadForm(forms.Form):
    kind = forms.ChoiceField(
        choices=[("predictions", gettext_lazy("Predictions for the hidden test set")),
                 ("skills", gettext_lazy("Skill predictions: original + reconstructed sets (s1–s14)"))],
        initial="predictions", required=False, label=gettext_lazy("Kind"),
        help_text=gettext_lazy("Skill predictions are one JSON object {\"original\": {...}, \"s1\": {...}, ...}."))
    file = forms.FileField(
        allow_empty_file=True, label=gettext_lazy("File"),
        help_text='One JSON object {"<question key>": {"answer": "...", "evidence": "..."}}.',
    )
    method_name = forms.CharField(max_length=120, label=gettext_lazy("Method name"),
                                  help_text=gettext_lazy("System name shown on the leaderboard."))
    description = forms.CharField(widget=forms.Textarea(attrs={"rows": 3}), required=False, max_length=5000,
                                  label=gettext_lazy("Description"))
    url = forms.URLField(required=False, label=gettext_lazy("Paper or code URL"), assume_scheme="https")
    # Declarations (ExpMRC's submission policy): shown on the entry, the board, the API and exports.
    dev_set_use = forms.ChoiceField(choices=DevSetUse.choices, initial=DevSetUse.NONE, required=False,
                                    label=gettext_lazy("Dev set used for training"),
                                    help_text=gettext_lazy("Part or whole marks the row on the board."))
    external_data = forms.CharField(max_length=300, required=False,
                                    label=gettext_lazy("External human-annotated data"),
                                    help_text=gettext_lazy("Name it; empty: none."))
    code_url = forms.URLField(required=False, label=gettext_lazy("Code URL"), assume_scheme="https")
    paper_url = forms.URLField(required=False, label=gettext_lazy("Paper URL"), assume_scheme="https")

    def __init__(self, *args: Any, task: Task | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        upload_kinds = task.upload_choices if task is not None else []
        if task is not None:
            self.fields["file"].help_text = gettext(task.kind_definition.file_help)
            # The links the task requires of every upload (intake.REQUIRABLE_LINKS refuses them too).
            self.fields["code_url"].required = task.requires_code_url
            self.fields["paper_url"].required = task.requires_paper_url
        if len(upload_kinds) > 1:
            choices = [(kind, gettext(label)) for kind, label in upload_kinds]
            cast(forms.ChoiceField, self.fields["kind"]).choices = choices
            self.fields["kind"].help_text = ""
        else:
            del self.fields["kind"]  # one kind of upload only

    # Unticked unless the researcher's settings say otherwise (the view passes their preference).
    public = forms.BooleanField(required=False, initial=False,
                                label=gettext_lazy("Show on the public leaderboard once scored"),
                                help_text=gettext_lazy("You can change it later on the entry's page; your default "
                                                       "is in your account settings."))


# What an owner may change about an entry after upload (web edit page and API PATCH alike).
EDITABLE_FIELDS = ["method_name", "system_name", "description", "url", "public"]


def save_entry_edit(submission: Submission, *, old_name: str, was_public: bool, team: str | None,
                    changed_by: User | AnonymousUser) -> NameChange | None:
    """Store an owner's edit. Only the editable columns are written, so a score a worker stores
    at the same moment is never overwritten by this (older) copy. A scored entry whose name was
    or becomes public keeps a trail of its renames (NameChange, shown to staff), so a position on
    a board can always be traced to the names it was shown under. ``team`` belongs to the
    account: it changes the team of all the owner's entries."""
    with transaction.atomic():
        submission.save(update_fields=EDITABLE_FIELDS)
        if team is not None:
            profile = profile_of(submission.user)
            if profile.team != team or profile.pk is None:
                profile.team = team
                profile.save()
        # The stored status, not the copy's: a run may have been scored since the form was opened.
        scored = Submission.objects.filter(pk=submission.pk, status=Status.SCORED).exists()
        if submission.method_name == old_name or not scored or not (was_public or submission.public):
            return None
        return NameChange.objects.create(submission=submission, old_name=old_name, new_name=submission.method_name,
                                         changed_by=changed_by if isinstance(changed_by, User) else None)


def system_names_of(user: User) -> list[str]:
    """The systems the user's entries already belong to (rejected uploads left out), for the
    edit page to offer: entries given the same system name are one system on average boards."""
    rows = (Submission.objects.filter(user=user).exclude(status=Status.REJECTED)
            .values_list("system_name", "method_name").distinct())
    return sorted({system or method for system, method in rows}, key=str.casefold)


class EntryEditForm(forms.ModelForm):
    """The owner's edit page: names, description, link, visibility, and the account's team."""

    description = forms.CharField(widget=forms.Textarea(attrs={"rows": 3}), required=False, max_length=5000,
                                  label=gettext_lazy("Description"))
    url = forms.URLField(required=False, max_length=200, label=gettext_lazy("Paper or code URL"), assume_scheme="https")
    team = forms.CharField(max_length=120, required=False, label=gettext_lazy("Team"),
                           help_text=gettext_lazy("Your team or affiliation. It belongs to your account: all your "
                                                  "entries show it."))

    class Meta:
        model = Submission
        fields = ["method_name", "system_name", "description", "url", "public"]
        labels = {"method_name": gettext_lazy("Method name"), "system_name": gettext_lazy("System"),
                  "public": gettext_lazy("Show on the public leaderboard once scored")}
        help_texts = {
            "method_name": gettext_lazy("The name shown on this task's leaderboard."),
            "system_name": gettext_lazy("Entries with the same system name are one system on a benchmark's average "
                                        "board (e.g. one model submitted to each subset under different method "
                                        "names). Leave empty to use the method name."),
            "public": "",
        }
        widgets = {"system_name": forms.TextInput(attrs={"list": "system-names", "autocomplete": "off"})}

    def __init__(self, *args: Any, editor: User | AnonymousUser, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.editor = editor
        # Kept before binding: validation copies the new values onto the instance.
        self.old_name = self.instance.method_name
        self.was_public = self.instance.public
        self.fields["team"].initial = profile_of(self.instance.user).team
        self.order_fields(["method_name", "system_name", "description", "url", "team", "public"])
        self.name_change: NameChange | None = None

    def save(self, commit: bool = True) -> Submission:
        self.name_change = save_entry_edit(self.instance, old_name=self.old_name, was_public=self.was_public,
                                           team=self.cleaned_data["team"], changed_by=self.editor)
        return self.instance
