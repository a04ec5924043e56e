from django.conf import settings
from django.contrib.auth.models import AnonymousUser, User
from django.db import models


class Profile(models.Model):
    user = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="profile")
    team = models.CharField(max_length=120, blank=True, help_text="Team or affiliation shown on leaderboards.")
    # Private unless the researcher decides otherwise: a new entry reaches the public board only
    # when they asked for it (at upload, or once for all in their settings).
    default_public = models.BooleanField(
        default=False, verbose_name="Show new entries on the public leaderboard",
        help_text="The upload form's checkbox and the API start from this; each entry can still be changed.")
    notify_on_finish = models.BooleanField(
        default=False, verbose_name="Email me when a run finishes",
        help_text="One email per run with its scores or its error (needs an email address).")

    def __str__(self):
        return f"{self.user.username} ({self.team or 'no team'})"


def profile_of(user: User | AnonymousUser) -> Profile:
    """The user's profile; for an account made without one (``createsuperuser``, the baselines
    account) an unsaved profile with the defaults, so callers never need to special-case it."""
    try:
        return user.profile  # type: ignore[union-attr]  # the reverse one-to-one of Profile.user
    except (Profile.DoesNotExist, AttributeError):
        return Profile(user=user) if isinstance(user, User) else Profile()
