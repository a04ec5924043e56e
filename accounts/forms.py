from typing import Any

from django import forms
from django.contrib.auth.forms import UserCreationForm
from django.contrib.auth.models import User
from django.db import transaction
from django.utils.translation import gettext_lazy as _

from .models import Profile


class SignupForm(UserCreationForm):
    email = forms.EmailField(required=False)
    team = forms.CharField(max_length=120, required=False, help_text=_("Team or affiliation shown on leaderboards."))

    class Meta(UserCreationForm.Meta):  # type: ignore[name-defined]  # django-stubs does not declare the Meta
        model = User
        fields = ["username", "email"]


class AccountSettingsForm(forms.ModelForm):
    """What a researcher changes about themselves: the email (password resets and run
    notifications go there), the team shown on boards, and two preferences."""

    email = forms.EmailField(required=False, help_text=_("Password resets and run notifications are sent here."))

    class Meta:
        model = Profile
        fields = ["team", "default_public", "notify_on_finish"]

    def __init__(self, *args: Any, user: User, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.user = user
        self.fields["email"].initial = user.email
        self.order_fields(["email", "team", "default_public", "notify_on_finish"])

    def clean_team(self) -> str:
        return self.cleaned_data["team"].strip()

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        if data.get("notify_on_finish") and not data.get("email") and "email" not in self.errors:
            self.add_error("email", _("Add an email address to receive run notifications."))
        return data

    def save(self, commit: bool = True) -> Profile:
        with transaction.atomic():
            self.user.email = self.cleaned_data["email"]
            self.user.save(update_fields=["email"])
            profile = super().save(commit=False)
            profile.user = self.user
            profile.save()
        return profile
