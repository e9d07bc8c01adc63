"""``/metrics``: Prometheus figures for ops, behind a token or an allowed network.

Two kinds of figures:
- counters kept by each process (HTTP and database by django-prometheus, memadmin's
  ingests, searches and touches in ``memadmin.counters``); with
  ``PROMETHEUS_MULTIPROC_DIR`` set, every web and worker process on the host writes
  them there and this view adds them up;
- figures read from the database, Redis and the broker at scrape time (what is held,
  evictions, queues, runs, erasure, beat): the same in every process, so nothing to add.

Labels name apps, eviction reasons, queues, run kinds and schedules: never a user id.
This module wires the apps together (project shell): it reads each app's selectors.
"""

from __future__ import annotations

import hmac
import ipaddress
import logging
import os

from django.conf import settings
from django.contrib.auth.decorators import login_not_required
from django.http import HttpResponse
from django.utils import timezone
from django.views.decorators.cache import never_cache
from kombu.exceptions import ChannelError
from prometheus_client import REGISTRY, CollectorRegistry, generate_latest, multiprocess
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.exposition import CONTENT_TYPE_LATEST
from prometheus_client.registry import Collector

from erasure import selectors as erasure_selectors
from memadmin import schedules
from records import touches
from records.selectors import totals
from sweeper import selectors as sweeper_selectors

from .celery import app as celery_app

log = logging.getLogger(__name__)


def queue_depths() -> dict[str, int]:
    """Messages waiting in each Celery queue, as the broker counts them."""
    depths = {}
    with celery_app.connection_for_read() as connection:
        channel = connection.default_channel
        for queue in celery_app.conf.task_queues:
            try:
                depth = channel.queue_declare(queue.name, passive=True).message_count
            except ChannelError:  # Redis keeps no key for an empty queue: "not found"
                depth = 0
            depths[queue.name] = depth
    return depths


class MemadminCollector(Collector):
    """Reads memadmin's state at scrape time; one failing source spoils only its figures."""

    def describe(self):
        return []  # so registering it does not query anything (its names are ours alone)

    def collect(self):
        now = timezone.now()
        failed = GaugeMetricFamily(
            "memadmin_scrape_source_failed",
            "1 when a source of the figures below could not be read at this scrape.",
            labels=["source"],
        )
        for source, read in (
            ("held", self._held),
            ("evictions", self._evictions),
            ("touch_buffer", self._touch_buffer),
            ("queues", self._queues),
            ("runs", self._runs),
            ("erasure", lambda: self._erasure(now)),
            ("beat", lambda: self._beat(now)),
        ):
            try:
                families = list(read())
            except Exception as exc:
                log.warning("metrics source %s failed: %s", source, type(exc).__name__)
                failed.add_metric([source], 1)
                continue
            failed.add_metric([source], 0)
            yield from families
        yield failed

    def _held(self):
        records = GaugeMetricFamily("memadmin_records", "Memory records held.", labels=["app"])
        tokens = GaugeMetricFamily("memadmin_tokens", "Tokens held in memory.", labels=["app"])
        for app, (n, t) in sorted(totals.held_by_app().items()):
            records.add_metric([app], n)
            tokens.add_metric([app], t)
        return records, tokens

    def _evictions(self):
        family = CounterMetricFamily(
            "memadmin_evictions", "Records evicted, by app and reason.", labels=["app", "reason"]
        )
        for (app, reason), n in sorted(totals.evictions_by_app_and_reason().items()):
            family.add_metric([app, reason], n)
        return (family,)

    def _touch_buffer(self):
        pending = touches.backlog()
        if pending is None:
            return ()
        return (
            GaugeMetricFamily(
                "memadmin_touch_buffer_backlog",
                "Users whose search touches wait in the Redis buffer for the next flush.",
                value=pending,
            ),
        )

    def _queues(self):
        family = GaugeMetricFamily(
            "memadmin_celery_queue_depth", "Messages waiting in a Celery queue.", labels=["queue"]
        )
        for queue, depth in sorted(queue_depths().items()):
            family.add_metric([queue], depth)
        return (family,)

    def _runs(self):
        states = GaugeMetricFamily(
            "memadmin_runs",
            "Sweep, enforcement and apply runs by state.",
            labels=["kind", "status"],
        )
        for (kind, status), n in sorted(sweeper_selectors.run_states().items()):
            states.add_metric([kind, status], n)
        duration = GaugeMetricFamily(
            "memadmin_run_last_duration_seconds",
            "Start to finish of the latest finished run of each kind.",
            labels=["kind"],
        )
        for kind, seconds in sorted(sweeper_selectors.last_run_durations().items()):
            duration.add_metric([kind], seconds)
        return states, duration

    def _erasure(self, now):
        per_status, oldest = erasure_selectors.open_backlog(now)
        backlog = GaugeMetricFamily(
            "memadmin_erasure_open_requests",
            "Erasure requests not yet verified or failed.",
            labels=["status"],
        )
        for status, n in sorted(per_status.items()):
            backlog.add_metric([status], n)
        age = GaugeMetricFamily(
            "memadmin_erasure_oldest_open_age_seconds",
            "Age of the oldest open erasure request (0 when none is open).",
            value=oldest,
        )
        return backlog, age

    def _beat(self, now):
        family = GaugeMetricFamily(
            "memadmin_beat_last_fired_age_seconds",
            "Seconds since beat last fired each enabled schedule (absent: never fired).",
            labels=["schedule"],
        )
        for name, fired in sorted(schedules.last_fired().items()):
            if fired is not None:
                family.add_metric([name], max(0.0, (now - fired).total_seconds()))
        return (family,)


REGISTRY.register(MemadminCollector())


def exposition() -> bytes:
    """The text exposition of every figure (all processes' counters in multiprocess mode)."""
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        registry = CollectorRegistry()
        multiprocess.MultiProcessCollector(registry)
        registry.register(MemadminCollector())
        return generate_latest(registry)
    return generate_latest(REGISTRY)


def allowed(request) -> bool:
    """A bearer token equal to METRICS_TOKEN, or a client address in METRICS_ALLOWED_NETWORKS."""
    token = settings.METRICS_TOKEN
    header = request.headers.get("Authorization", "")
    if token and header.startswith("Bearer "):
        return hmac.compare_digest(header[len("Bearer ") :].encode(), token.encode())
    try:
        client = ipaddress.ip_address(request.META.get("REMOTE_ADDR", ""))
    except ValueError:
        return False
    return any(client in network for network in settings.METRICS_ALLOWED_NETWORKS)


@never_cache
@login_not_required
def metrics_view(request):
    if not allowed(request):
        return HttpResponse(
            "Forbidden: /metrics needs 'Authorization: Bearer <METRICS_TOKEN>' or a client "
            "address in METRICS_ALLOWED_NETWORKS.\n",
            status=403,
            content_type="text/plain; charset=utf-8",
        )
    return HttpResponse(exposition(), content_type=CONTENT_TYPE_LATEST)
