import math
from urllib.parse import urlsplit

from django.conf import settings
from django.contrib import messages
from django.contrib.auth import login
from django.contrib.auth import views as auth_views
from django.contrib.auth.decorators import login_required
from django.db import transaction
from django.forms import BaseForm
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils.http import url_has_allowed_host_and_scheme
from django.utils.translation import gettext as _
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_POST
from rest_framework.authtoken.models import Token

from . import teams
from .forms import AccountSettingsForm, SignupForm
from .http import AuthenticatedHttpRequest
from .models import Membership, Profile, Team, profile_of
from .throttling import ThrottledPasswordResetView, spend_signup, too_many


def signup(request: HttpRequest) -> HttpResponse:
    if request.user.is_authenticated:
        return redirect("home")
    form = SignupForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        wait = spend_signup(request)
        if wait is not None:
            response = render(request, "accounts/signup.html", {"form": form, "retry_after": math.ceil(wait)})
            return too_many(response, wait)
        with transaction.atomic():
            user = form.save()
            Profile.objects.create(user=user, team=form.cleaned_data["team"])
        login(request, user, backend="django.contrib.auth.backends.ModelBackend")
        messages.success(request, _("Welcome, %(username)s. Pick a task and upload your predictions.")
                         % {"username": user.username})
        next_url = request.GET.get("next", "")
        if url_has_allowed_host_and_scheme(next_url, allowed_hosts={request.get_host()}):
            return redirect(next_url)
        return redirect("home")
    return render(request, "accounts/signup.html", {"form": form}, status=400 if form.errors else 200)


# The page shows the API token: no cache, shared or the browser's, may keep a copy.
@never_cache
@login_required
def account(request: AuthenticatedHttpRequest) -> HttpResponse:
    token = Token.objects.filter(user=request.user).first()
    return render(request, "accounts/account.html", {"token": token})


@login_required
def account_settings(request: AuthenticatedHttpRequest) -> HttpResponse:
    form = AccountSettingsForm(request.POST or None, instance=profile_of(request.user), user=request.user)
    if request.method == "POST" and form.is_valid():
        form.save()
        messages.success(request, _("Settings saved."))
        return redirect("account-settings")
    return render(request, "accounts/settings.html", {"form": form}, status=400 if form.errors else 200)


@login_required
@require_POST
def regenerate_token(request: AuthenticatedHttpRequest) -> HttpResponse:
    Token.objects.filter(user=request.user).delete()
    Token.objects.create(user=request.user)
    messages.success(request, _("New API token created; the old one no longer works."))
    return redirect("account")


class InvalidFormIs400:
    """Django's password views answer a form with errors with 200; ours say 400, like every
    other form of the site, so scripts and tests can tell a refusal from a page."""

    def form_invalid(self, form: BaseForm) -> HttpResponse:
        response = super().form_invalid(form)  # type: ignore[misc]  # a mixin for FormView subclasses
        response.status_code = 400
        return response


def email_link_context() -> dict[str, str]:
    """The parts of an e-mailed link that name the site, from SITE_URL: the request's Host header
    is chosen by whoever asks for the reset, who must never choose where the link points."""
    site = urlsplit(settings.SITE_URL)
    return {"site_name": settings.SITE_NAME, "protocol": site.scheme, "domain": site.netloc}


class PasswordResetView(InvalidFormIs400, ThrottledPasswordResetView):
    def form_valid(self, form: BaseForm) -> HttpResponse:
        self.extra_email_context = email_link_context()
        return super().form_valid(form)


class PasswordResetConfirmView(InvalidFormIs400, auth_views.PasswordResetConfirmView):
    pass


class PasswordChangeView(InvalidFormIs400, auth_views.PasswordChangeView):
    pass


TEAM_ACTIONS = {"create", "invite", "accept", "leave"}


@never_cache
@login_required
def team_page(request: AuthenticatedHttpRequest) -> HttpResponse:
    """The visitor's team: create one, invite people, accept an invitation, leave."""
    status = 200
    if request.method == "POST":
        action = request.POST.get("action", "")
        try:
            team_action(request, action)
        except teams.TeamRefused as exc:
            messages.error(request, exc.message)
            status = 400
        else:
            return redirect("account-team")
    team = teams.team_of(request.user)
    invitations = Membership.objects.filter(user=request.user, status=Membership.INVITED).select_related("team")
    return render(request, "accounts/team.html", {
        "team": team, "members": teams.members(team) if team else [],
        "pending": team.memberships.filter(status=Membership.INVITED).select_related("user") if team else [],
        "invitations": invitations}, status=status)


def team_action(request: AuthenticatedHttpRequest, action: str) -> None:
    if action not in TEAM_ACTIONS:
        raise teams.TeamRefused(_("Unknown action."))
    if action == "create":
        teams.create_team(request.user, request.POST.get("name", ""))
        messages.success(request, _("Team created."))
        return
    team = Team.objects.filter(slug=request.POST.get("team", "")).first()
    if team is None:
        raise teams.TeamRefused(_("No such team."), 404)
    if action == "invite":
        teams.invite(team, request.user, request.POST.get("username", "").strip())
        messages.success(request, _("Invitation sent: they accept it on their team page."))
    elif action == "accept":
        teams.accept(request.user, team)
        messages.success(request, _("You joined %(team)s.") % {"team": team.name})
    else:
        teams.leave(request.user, team)
        messages.success(request, _("You left %(team)s.") % {"team": team.name})
