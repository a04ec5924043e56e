from django.conf import settings
from django.contrib.auth.models import AnonymousUser, User
from django.db import models
from django.utils.translation import gettext_lazy


class Profile(models.Model):
    user = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="profile")
    team = models.CharField(max_length=120, blank=True,
                            help_text=gettext_lazy("Team or affiliation shown on leaderboards."))
    # Private unless the researcher decides otherwise: a new entry reaches the public board only
    # when they asked for it (at upload, or once for all in their settings).
    default_public = models.BooleanField(
        default=False, verbose_name=gettext_lazy("Show new entries on the public leaderboard"),
        help_text=gettext_lazy("The upload form's checkbox and the API start from this; each entry can still be "
                               "changed."))
    notify_on_finish = models.BooleanField(
        default=False, verbose_name=gettext_lazy("Email me when a run finishes"),
        help_text=gettext_lazy("One email per run with its scores or its error (needs an email address)."))

    def __str__(self):
        return f"{self.user.username} ({self.team or 'no team'})"


def profile_of(user: User | AnonymousUser) -> Profile:
    """The user's profile; for an account made without one (``createsuperuser``, the baselines
    account) an unsaved profile with the defaults, so callers never need to special-case it."""
    try:
        return user.profile  # type: ignore[union-attr]  # the reverse one-to-one of Profile.user
    except (Profile.DoesNotExist, AttributeError):
        return Profile(user=user) if isinstance(user, User) else Profile()


class Team(models.Model):
    """Researchers who submit together (docs/phases.md#teams): their entries carry the team, its
    members share the quotas, and the team picks the entry that counts in a phase's final
    ranking. A user is a member of at most one team at a time."""

    name = models.CharField(max_length=100, unique=True)
    slug = models.SlugField(unique=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True,
                                   related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]

    def __str__(self):
        return self.name


class Membership(models.Model):
    INVITED, MEMBER = "invited", "member"
    STATUS_CHOICES = [(INVITED, "Invited"), (MEMBER, "Member")]

    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="memberships")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memberships")
    status = models.CharField(max_length=10, choices=STATUS_CHOICES)
    invited_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True,
                                   related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    joined_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["team", "joined_at", "created_at"]
        constraints = [
            models.UniqueConstraint(fields=["team", "user"], name="unique_membership"),
            # At most one team per user: a second acceptance fails in the database too.
            models.UniqueConstraint(fields=["user"], condition=models.Q(status="member"), name="one_team_per_user"),
        ]

    def __str__(self):
        return f"{self.user} in {self.team} ({self.status})"
