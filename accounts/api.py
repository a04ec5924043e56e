"""Teams over the API (docs/phases.md#teams): create, read, invite, accept, leave."""
from typing import Any, cast

from django.contrib.auth.models import User
from django.shortcuts import get_object_or_404
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.decorators import api_view, permission_classes
from rest_framework.exceptions import APIException
from rest_framework.permissions import IsAuthenticated
from rest_framework.request import Request
from rest_framework.response import Response

from core.api_fields import name_field

from . import teams
from .models import Membership, Team


class TeamProblem(APIException):
    def __init__(self, refused: teams.TeamRefused) -> None:
        super().__init__(refused.message)
        self.status_code = refused.status_code
        self.problem_type = "conflict" if refused.status_code == 409 else None


class TeamSerializer(serializers.ModelSerializer):
    members = serializers.SerializerMethodField(help_text="usernames of the members")

    class Meta:
        model = Team
        fields = ["name", "slug", "members", "created_at"]

    def get_members(self, team: Team) -> list[str]:
        return [user.username for user in teams.members(team)]


class TeamNameSerializer(serializers.Serializer):
    name = name_field(100)


class UsernameSerializer(serializers.Serializer):
    username = serializers.CharField(max_length=150)


def answer(team: Team, request: Request, code: int = status.HTTP_200_OK) -> Response:
    data: dict[str, Any] = dict(TeamSerializer(team).data)
    user = cast(User, request.user)
    if Membership.objects.filter(team=team, user=user, status=Membership.MEMBER).exists():
        # Pending invitations are the members' business only.
        data["invited"] = list(team.memberships.filter(status=Membership.INVITED).values_list("user__username",
                                                                                            flat=True))
    return Response(data, status=code)


@extend_schema(summary="Create a team (you become its first member)", request=TeamNameSerializer,
               responses={201: TeamSerializer})
@api_view(["POST"])
@permission_classes([IsAuthenticated])
def create_team(request: Request) -> Response:
    form = TeamNameSerializer(data=request.data)
    form.is_valid(raise_exception=True)
    try:
        team = teams.create_team(cast(User, request.user), form.validated_data["name"])
    except teams.TeamRefused as exc:
        raise TeamProblem(exc) from None
    return answer(team, request, status.HTTP_201_CREATED)


@extend_schema(summary="A team and its members", responses={200: TeamSerializer})
@api_view(["GET"])
@permission_classes([IsAuthenticated])
def team_detail(request: Request, slug: str) -> Response:
    return answer(get_object_or_404(Team, slug=slug), request)


@extend_schema(summary="Invite a user to your team", request=UsernameSerializer, responses={201: TeamSerializer})
@api_view(["POST"])
@permission_classes([IsAuthenticated])
def invite(request: Request, slug: str) -> Response:
    team = get_object_or_404(Team, slug=slug)
    form = UsernameSerializer(data=request.data)
    form.is_valid(raise_exception=True)
    try:
        teams.invite(team, cast(User, request.user), form.validated_data["username"])
    except teams.TeamRefused as exc:
        raise TeamProblem(exc) from None
    return answer(team, request, status.HTTP_201_CREATED)


@extend_schema(summary="Accept your invitation to a team", request=None, responses={200: TeamSerializer})
@api_view(["POST"])
@permission_classes([IsAuthenticated])
def accept(request: Request, slug: str) -> Response:
    team = get_object_or_404(Team, slug=slug)
    try:
        teams.accept(cast(User, request.user), team)
    except teams.TeamRefused as exc:
        raise TeamProblem(exc) from None
    return answer(team, request)


@extend_schema(summary="Leave a team (or decline its invitation)", request=None, responses={200: TeamSerializer})
@api_view(["POST"])
@permission_classes([IsAuthenticated])
def leave(request: Request, slug: str) -> Response:
    team = get_object_or_404(Team, slug=slug)
    try:
        teams.leave(cast(User, request.user), team)
    except teams.TeamRefused as exc:
        raise TeamProblem(exc) from None
    return answer(team, request)  # the team as it is now, without you
