"""``/metrics``: the site's state in Prometheus' text format (docs/operations.md#metrics).

Every value is read when Prometheus asks, from the database and the broker, never counted in
the process that answers: any gunicorn worker gives the same figures, and a restart loses
nothing. Counts of submissions are gauges (a failed run sent again leaves the failures); the
scoring latency is a histogram over every finished submission (queued to finished), which only
grows, so ``rate()`` and ``histogram_quantile()`` work on it.

Only figures, never a gold text, a test input, a file name or a user: the page is for the
operator's monitoring. It answers a request with ``Authorization: Bearer <METRICS_TOKEN>`` or
from a staff member's session; anyone else gets the site's 404, as if there were no such page.
"""
import hmac
import logging
import os
from collections import Counter
from collections.abc import Iterable, Iterator
from datetime import timedelta

from django.conf import settings
from django.db.models import Count, DurationField, ExpressionWrapper, F, Min, Q, Sum
from django.http import Http404, HttpRequest, HttpResponse
from django.utils import timezone
from kombu import Connection
from kombu.exceptions import ChannelError
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest
from prometheus_client.core import GaugeMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.registry import Collector

from submissions.models import Status, Submission

from .celery import QUEUES

log = logging.getLogger(__name__)

#: Upper bounds (seconds) of the scoring-latency buckets: a file is scored in seconds, a
#: sandboxed run in minutes, a queue that backs up in hours.
LATENCY_BUCKETS = (1, 2, 5, 10, 30, 60, 120, 300, 600, 1800, 3600, 3 * 3600, 12 * 3600)
BROKER_TIMEOUT_SECONDS = 3.0
FINISHED = (Status.SCORED, Status.FAILED, Status.REJECTED)
SANDBOXED_KINDS = (Submission.CODE, Submission.MODEL)


def allowed(request: HttpRequest) -> bool:
    token = getattr(settings, "METRICS_TOKEN", "")
    header = request.META.get("HTTP_AUTHORIZATION", "")
    if token and header.startswith("Bearer ") and hmac.compare_digest(header[7:].strip().encode(), token.encode()):
        return True
    user = getattr(request, "user", None)
    return bool(user is not None and user.is_authenticated and user.is_staff)


def filesystem_queue_depths(folder: os.PathLike[str] | str) -> dict[str, int]:
    """Messages waiting in the embedded broker's folder: files ``<stamp>_<uuid>.<queue>.msg``
    (one a worker has taken is renamed ``.….claimed``, one being written ``.….partial``)."""
    names = [name for name in os.listdir(folder) if not name.startswith(".")]
    return {queue: sum(1 for name in names if name.endswith(f".{queue}.msg")) for queue in QUEUES}


def broker_queue_depths(url: str) -> dict[str, int]:
    """Messages waiting per queue on a Redis (the lengths of its lists) or AMQP broker (a
    passive declare): what kombu reports as a queue's size. A queue never declared holds none."""
    options = {**getattr(settings, "CELERY_BROKER_TRANSPORT_OPTIONS", {}),
               "socket_timeout": BROKER_TIMEOUT_SECONDS, "socket_connect_timeout": BROKER_TIMEOUT_SECONDS}
    depths = {}
    with Connection(url, connect_timeout=BROKER_TIMEOUT_SECONDS, transport_options=options) as broker:
        broker.ensure_connection(max_retries=1, interval_start=0, interval_step=0, timeout=BROKER_TIMEOUT_SECONDS)
        channel = broker.channel()
        try:
            for queue in QUEUES:
                try:
                    depths[queue] = int(channel.queue_declare(queue=queue, passive=True).message_count)
                except ChannelError:
                    depths[queue] = 0
                    channel = broker.channel()  # AMQP closes a channel on NOT_FOUND
        finally:
            channel.close()
    return depths


def queue_depths() -> dict[str, int] | None:
    """Messages waiting per Celery queue, or None where the broker cannot say (or fails to)."""
    url = settings.CELERY_BROKER_URL
    try:
        if url.startswith("filesystem://"):
            return filesystem_queue_depths(settings.CELERY_BROKER_DIR)
        return broker_queue_depths(url)
    except Exception as exc:  # a broker down must not take the other figures with it
        log.warning("metrics: queue depths unavailable (%s)", type(exc).__name__)
        return None


def latency_histograms() -> Iterator[tuple[str, list[tuple[str, float]], float]]:
    """Per submission kind: the cumulative buckets and the sum (seconds) of queued-to-finished."""
    latency = ExpressionWrapper(F("finished_at") - F("queued_at"), output_field=DurationField())
    buckets = {f"le_{i}": Count("pk", filter=Q(latency__lte=timedelta(seconds=bound)))
               for i, bound in enumerate(LATENCY_BUCKETS)}
    rows = (Submission.objects.filter(status__in=FINISHED, queued_at__isnull=False, finished_at__isnull=False)
            .annotate(latency=latency).values("kind")
            .annotate(total=Count("pk"), seconds=Sum("latency"), **buckets).order_by("kind"))
    for row in rows:
        cumulative = [(str(float(bound)), float(row[f"le_{i}"])) for i, bound in enumerate(LATENCY_BUCKETS)]
        cumulative.append(("+Inf", float(row["total"])))
        seconds = row["seconds"]
        yield row["kind"], cumulative, seconds.total_seconds() if isinstance(seconds, timedelta) else 0.0


class SiteCollector(Collector):
    """The figures of the whole site, read at each scrape."""

    def collect(self) -> Iterable[Metric]:
        yield from self.queues()
        yield from self.submissions()
        yield self.latency()

    def queues(self) -> Iterator[Metric]:
        depths = queue_depths()
        available = GaugeMetricFamily("expbench_queue_depth_available",
                                      "1 when the broker reported its queue lengths at this scrape")
        available.add_metric([], 1.0 if depths is not None else 0.0)
        yield available
        if depths is not None:
            waiting = GaugeMetricFamily("expbench_queue_messages", "Messages waiting in a Celery queue",
                                        labels=["queue"])
            for queue, count in sorted(depths.items()):
                waiting.add_metric([queue], float(count))
            yield waiting

    def submissions(self) -> Iterator[Metric]:
        by_status = GaugeMetricFamily("expbench_submissions", "Submissions by kind and status",
                                      labels=["kind", "status"])
        for row in Submission.objects.values("kind", "status").annotate(n=Count("pk")).order_by("kind", "status"):
            by_status.add_metric([row["kind"], row["status"]], float(row["n"]))
        yield by_status

        queued = Submission.objects.filter(status=Status.QUEUED, queued_at__isnull=False)
        oldest = queued.aggregate(t=Min("queued_at"))["t"]
        waiting_for = GaugeMetricFamily("expbench_oldest_queued_submission_seconds",
                                        "How long the longest-waiting queued submission has waited (0: none)")
        waiting_for.add_metric([], max((timezone.now() - oldest).total_seconds(), 0.0) if oldest else 0.0)
        yield waiting_for

        failures = GaugeMetricFamily("expbench_submission_failures",
                                     "Failed or rejected submissions by error category (refunded platform "
                                     "faults: worker_lost, scorer_error)", labels=["kind", "category"])
        for row in (Submission.objects.filter(status__in=(Status.FAILED, Status.REJECTED)).exclude(error_category="")
                    .values("kind", "error_category").annotate(n=Count("pk")).order_by("kind", "error_category")):
            failures.add_metric([row["kind"], row["error_category"]], float(row["n"]))
        yield failures

        sandbox = GaugeMetricFamily("expbench_sandbox_runs", "Finished sandboxed runs (interpreter code, model "
                                    "bundles) by outcome: scored, or the error category", labels=["kind", "outcome"])
        outcomes: Counter[tuple[str, str]] = Counter()
        for row in (Submission.objects.filter(kind__in=SANDBOXED_KINDS, status__in=FINISHED)
                    .values("kind", "status", "error_category").annotate(n=Count("pk"))):
            outcome = "scored" if row["status"] == Status.SCORED else (row["error_category"] or row["status"])
            outcomes[row["kind"], outcome] += row["n"]
        for (kind, outcome), count in sorted(outcomes.items()):
            sandbox.add_metric([kind, outcome], float(count))
        yield sandbox

    def latency(self) -> Metric:
        latency = HistogramMetricFamily("expbench_scoring_latency_seconds",
                                        "Time from queued to finished of finished submissions", labels=["kind"])
        for kind, buckets, seconds in latency_histograms():
            latency.add_metric([kind], buckets, seconds)
        return latency


def metrics(request: HttpRequest) -> HttpResponse:
    if not allowed(request):
        raise Http404
    registry = CollectorRegistry(auto_describe=False)
    registry.register(SiteCollector())
    response = HttpResponse(generate_latest(registry), content_type=CONTENT_TYPE_LATEST)
    response["Cache-Control"] = "no-store"
    return response
