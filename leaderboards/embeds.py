"""Boards shown elsewhere (docs/client.md#embedding-boards-badges-and-feeds): a board page other
sites may frame, badge data for shields.io, and Atom feeds of new public results.

All three show what anyone may see, whoever asks: a task reachable without an account (public,
or unlisted by its address; the site-wide feed lists public tasks only), and only the rows of
its stored board, the rows its public page shows. A hidden task is a 404 here even for staff:
a page framed elsewhere or a feed copied into a reader must never carry what only staff see.
The frame policy of the embed route is set in config/security_headers.py.
"""
import json
from typing import Any

from django.conf import settings
from django.contrib.auth.models import AnonymousUser
from django.contrib.syndication.views import Feed
from django.core.exceptions import BadRequest
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render
from django.urls import reverse
from django.utils.feedgenerator import Atom1Feed
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.decorators import api_view, permission_classes
from rest_framework.permissions import AllowAny
from rest_framework.request import Request

from benchmark.models import Task
from core.conditional import CONDITIONAL_HEADERS, NOT_MODIFIED, strong_etag, unchanged, with_validators
from core.templatetags.expbench import score
from submissions.models import Submission

from .api import BoardComputing
from .store import RELEASE, Board, all_rows, page_rows, task_board, task_boards

#: Rows an embedded board shows at most (``?rows=``; pinned rows such as human performance first).
EMBED_ROWS, EMBED_MAX_ROWS = 10, 50
#: Entries a feed lists: the latest results first.
FEED_ITEMS = 30
#: How long shields.io may keep a badge (seconds).
BADGE_CACHE_SECONDS = 300


def reachable_tasks() -> Any:
    """Tasks anyone may reach by address (public and unlisted), whoever asks."""
    return Task.objects.visible_to(AnonymousUser()).select_related("benchmark")


def public_task(slug: str) -> Task:
    return get_object_or_404(reachable_tasks(), slug=slug)


def absolute(path: str) -> str:
    """A link for another site or a feed reader: on SITE_URL, never the request's Host."""
    return settings.SITE_URL + path


def primary_label(task: Task) -> str:
    return dict(task.metric_columns).get(task.primary_metric, task.primary_metric)


# -------------------------------------------------------------------------------- the embed


def embed_row_count(request: HttpRequest) -> int:
    value = request.GET.get("rows", "")
    if not value:
        return EMBED_ROWS
    if not value.isdigit() or not 1 <= int(value) <= EMBED_MAX_ROWS:
        raise BadRequest(f"rows: a whole number from 1 to {EMBED_MAX_ROWS}")
    return int(value)


def task_embed(request: HttpRequest, slug: str) -> HttpResponse:
    """A task's board, its first rows, on a page of its own that other sites may put in an
    ``<iframe>``: no site navigation, no form, nothing of the visitor's session, links opening
    the full board in a new tab."""
    task = public_task(slug)
    limit = embed_row_count(request)
    board = task_board(task)
    rows = [] if board is None else page_rows(board, task, "rank", False, 0, limit)
    response = render(request, "leaderboards/embed.html", {
        "task": task, "rows": [embed_row(task, row) for row in rows], "computing": board is None,
        "board_url": absolute(reverse("task-leaderboard", kwargs={"slug": task.slug})),
        "metric_label": primary_label(task),
        "more": board is not None and board.payload["n_rows"] > limit,
    })
    response["Cache-Control"] = "public, max-age=60"
    return response


def embed_row(task: Task, row: dict[str, Any]) -> dict[str, Any]:
    entry = row.get("submission_id")
    return {"rank": row.get("rank"), "method": row.get("method", ""), "team": row.get("team", ""),
            "reported": row.get("reported", False), "date": row.get("date") or "",
            "score": (row.get("scores") or {}).get(task.primary_metric),
            "url": absolute(reverse("submission-detail", kwargs={"pk": entry})) if entry else ""}


# -------------------------------------------------------------------------------- the badge


class BadgeSerializer(serializers.Serializer):
    """shields.io's endpoint badge: https://img.shields.io/endpoint?url=<this answer's URL>."""

    schemaVersion = serializers.IntegerField(help_text="always 1")  # noqa: N815  # shields.io's name
    label = serializers.CharField(help_text="the task and its ranking metric")  # type: ignore[assignment]
    message = serializers.CharField(help_text="the leading entry and its score, or that there is none yet")
    color = serializers.CharField()
    cacheSeconds = serializers.IntegerField()  # noqa: N815  # shields.io's name


def badge_data(task: Task, summary: dict[str, Any]) -> dict[str, Any]:
    best = summary.get("best")
    label = f"{task.name} {primary_label(task)}"
    if not best:
        return {"schemaVersion": 1, "label": label, "message": "no entries yet", "color": "lightgrey",
                "cacheSeconds": BADGE_CACHE_SECONDS}
    value = (best.get("scores") or {}).get(task.primary_metric)
    return {"schemaVersion": 1, "label": label, "message": f"{best.get('method', '')} {score(value)}",
            "color": "blue", "cacheSeconds": BADGE_CACHE_SECONDS}


@extend_schema(summary="Badge data of a task: its leading entry and score (shields.io's endpoint format)",
               parameters=CONDITIONAL_HEADERS, responses={200: BadgeSerializer, 304: NOT_MODIFIED})
@api_view(["GET"])
@permission_classes([AllowAny])
def task_badge(request: Request, slug: str) -> HttpResponse:
    task = public_task(slug)
    board = task_board(task, "summary")
    if board is None:
        raise BoardComputing()
    etag = strong_etag(RELEASE, board.stamp, "badge")
    if (not_modified := unchanged(request, etag, board.computed_at)) is not None:
        return not_modified
    body = json.dumps(badge_data(task, board.payload), ensure_ascii=False)
    response = HttpResponse(body, content_type="application/json")
    response["Cache-Control"] = f"public, max-age={BADGE_CACHE_SECONDS}"
    return with_validators(response, etag, board.computed_at)


# -------------------------------------------------------------------------------- the feeds


def latest_results(boards: dict[int, Board], tasks: dict[int, Task], limit: int = FEED_ITEMS) -> list[dict[str, Any]]:
    """The newest entries on these stored boards, newest first: each a board row with its task
    and the time it was scored."""
    rows = {row["submission_id"]: (tasks[task_id], row) for task_id, board in boards.items()
            for row in all_rows(board) if row.get("kind") == "submission" and row.get("submission_id")}
    # Ids grow with uploads: the newest few hundred hold the latest results.
    candidates = sorted(rows, reverse=True)[: limit * 10]
    finished = dict(Submission.objects.filter(pk__in=candidates).values_list("pk", "finished_at"))
    newest = sorted((pk for pk in candidates if finished.get(pk)), key=lambda pk: (finished[pk], pk), reverse=True)
    return [{"task": rows[pk][0], "row": rows[pk][1], "finished_at": finished[pk], "pk": pk} for pk in newest[:limit]]


class ResultsFeed(Feed):
    """New public results: of one task (``slug``), or of every listed task."""

    feed_type = Atom1Feed
    author_name = "ExpBench"

    def get_object(self, request: HttpRequest, slug: str | None = None) -> Task | None:
        return public_task(slug) if slug is not None else None

    def title(self, obj: Task | None) -> str:
        return f"ExpBench: new results on {obj.name}" if obj is not None else "ExpBench: new results"

    def subtitle(self, obj: Task | None) -> str:
        return "Entries as they appear on the public leaderboards, newest first."

    def link(self, obj: Task | None) -> str:
        return absolute(reverse("task-leaderboard", kwargs={"slug": obj.slug}) if obj is not None else reverse("home"))

    def feed_url(self, obj: Task | None) -> str:
        return absolute(reverse("task-results-feed", kwargs={"slug": obj.slug}) if obj is not None
                        else reverse("results-feed"))

    def items(self, obj: Task | None) -> list[dict[str, Any]]:
        tasks = [obj] if obj is not None else list(Task.objects.public().select_related("benchmark"))
        return latest_results(task_boards(tasks), {task.pk: task for task in tasks})

    def item_title(self, item: dict[str, Any]) -> str:
        task, row = item["task"], item["row"]
        value = (row.get("scores") or {}).get(task.primary_metric)
        return f"{row.get('method', '')} on {task.name}: {primary_label(task)} {score(value)}"

    def item_description(self, item: dict[str, Any]) -> str:
        task, row = item["task"], item["row"]
        scores = row.get("scores") or {}
        parts = [f"{label} {score(scores.get(key))}" for key, label in task.metric_columns]
        rank = f"rank {row['rank']}" if row.get("rank") else "unranked"
        team = f" ({row['team']})" if row.get("team") else ""
        return f"{row.get('method', '')}{team}, {rank} on {task.name}: " + ", ".join(parts)

    def item_link(self, item: dict[str, Any]) -> str:
        return absolute(reverse("submission-detail", kwargs={"pk": item["pk"]}))

    def item_updateddate(self, item: dict[str, Any]) -> Any:
        return item["finished_at"]

    def item_pubdate(self, item: dict[str, Any]) -> Any:
        return item["finished_at"]

    def item_author_name(self, item: dict[str, Any]) -> str:
        return str(item["row"].get("team") or item["row"].get("method") or "ExpBench")


results_feed = ResultsFeed()
