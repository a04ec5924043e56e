from django import forms
from django.contrib.auth.forms import UserCreationForm
from django.contrib.auth.models import User


class SignupForm(UserCreationForm):
    email = forms.EmailField(required=False)
    team = forms.CharField(max_length=120, required=False, help_text="Team or affiliation shown on leaderboards.")

    class Meta(UserCreationForm.Meta):  # type: ignore[name-defined]  # django-stubs does not declare the Meta
        model = User
        fields = ["username", "email"]
