"""Teams (docs/phases.md#teams): create, invite, accept, leave. Every change is one of these
functions; each refuses with a ``TeamRefused`` whose message says why, in the active language
(the team page's; English for the API, which always answers in English: config/locale.py)."""
from django.contrib.auth.models import User
from django.db import IntegrityError, transaction
from django.utils import timezone
from django.utils.text import slugify
from django.utils.translation import gettext as _

from .models import Membership, Team


class TeamRefused(Exception):
    def __init__(self, message: str, status_code: int = 400) -> None:
        super().__init__(message)
        self.message = message
        self.status_code = status_code


def team_of(user: User) -> Team | None:
    """The team ``user`` is a member of (None: they submit alone)."""
    membership = Membership.objects.filter(user=user, status=Membership.MEMBER).select_related("team").first()
    return membership.team if membership else None


def members(team: Team) -> list[User]:
    return [m.user for m in team.memberships.filter(status=Membership.MEMBER).select_related("user")]


def create_team(user: User, name: str) -> Team:
    name = name.strip()
    slug = slugify(name)
    if not slug:
        raise TeamRefused(_("A team needs a name with letters or digits."))
    if team_of(user) is not None:
        raise TeamRefused(_("You are in a team already: leave it before creating another."), 409)
    if Team.objects.filter(slug=slug).exists() or Team.objects.filter(name__iexact=name).exists():
        raise TeamRefused(_("A team named %(name)s exists already.") % {"name": repr(name)}, 409)
    with transaction.atomic():
        team = Team.objects.create(name=name, slug=slug, created_by=user)
        Membership.objects.create(team=team, user=user, status=Membership.MEMBER, joined_at=timezone.now())
    return team


def invite(team: Team, by: User, username: str) -> Membership:
    if not Membership.objects.filter(team=team, user=by, status=Membership.MEMBER).exists():
        raise TeamRefused(_("Only a member of the team can invite."), 403)
    invitee = User.objects.filter(username=username).first()
    if invitee is None:
        raise TeamRefused(_("No user named %(username)s.") % {"username": repr(username)}, 404)
    existing = Membership.objects.filter(team=team, user=invitee).first()
    if existing is not None:
        already = (_("%(username)s is a member already.") if existing.status == Membership.MEMBER
                   else _("%(username)s is invited already."))
        raise TeamRefused(already % {"username": username}, 409)
    return Membership.objects.create(team=team, user=invitee, status=Membership.INVITED, invited_by=by)


def accept(user: User, team: Team) -> Membership:
    invitation = Membership.objects.filter(team=team, user=user, status=Membership.INVITED).first()
    if invitation is None:
        raise TeamRefused(_("You have no invitation to %(team)s.") % {"team": team.name}, 404)
    if team_of(user) is not None:
        raise TeamRefused(_("You are in a team already: leave it before joining another."), 409)
    try:
        with transaction.atomic():
            invitation.status, invitation.joined_at = Membership.MEMBER, timezone.now()
            invitation.save(update_fields=["status", "joined_at"])
    except IntegrityError:  # joined another team meanwhile (the one-team constraint)
        raise TeamRefused(_("You are in a team already: leave it before joining another."), 409) from None
    return invitation


def leave(user: User, team: Team) -> None:
    """Leave (or decline an invitation to) ``team``. Its entries keep the team: they were its."""
    if not Membership.objects.filter(team=team, user=user).delete()[0]:
        raise TeamRefused(_("You are not in %(team)s.") % {"team": team.name}, 404)
