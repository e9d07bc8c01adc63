"""``/healthz`` (liveness) and ``/readyz`` (readiness), with django-health-check's runner.

Liveness only says this process answers: restarting it cannot mend a database. Readiness
asks everything memadmin needs to do its work: the database with every migration
applied, the broker, Redis (when configured), a worker on each Celery queue answering a
ping, and beat having fired a schedule lately. It answers JSON with each check's state,
and 503 when one fails.
"""

from __future__ import annotations

import asyncio
import dataclasses
import datetime

from django.conf import settings
from django.contrib.auth.decorators import login_not_required
from django.db import DEFAULT_DB_ALIAS, connections
from django.db.migrations.executor import MigrationExecutor
from django.http import JsonResponse
from django.utils import timezone
from django.utils.decorators import method_decorator
from django.views.decorators.cache import never_cache
from health_check.base import HealthCheck
from health_check.checks import Database
from health_check.contrib.celery import Ping
from health_check.exceptions import ServiceUnavailable
from health_check.views import HealthCheckView

from memadmin import schedules

from .celery import app as celery_app


def _own_connection(check):
    """Checks run in executor threads: each closes the connection its thread opened."""

    def run(self):
        try:
            return check(self)
        finally:
            connections.close_all()

    return run


@dataclasses.dataclass
class DatabaseAnswers(Database):
    """The library's ``SELECT 1``. Its error would name the server (host, address, port)
    to anyone, as ``/readyz`` needs no login: the answer gives the error's class only.
    The library logs the failure as a warning with its traceback, whose database error
    text is withheld as every database error's is (``log_filters.DatabaseErrorFilter``)."""

    def run(self):
        try:
            super().run()
        except ServiceUnavailable as exc:
            cause = exc.__cause__ or exc
            raise ServiceUnavailable(f"database unreachable ({type(cause).__name__})") from cause


@dataclasses.dataclass
class Migrations(HealthCheck):
    """Every migration this code ships is applied to the database."""

    @_own_connection
    def run(self):
        executor = MigrationExecutor(connections[DEFAULT_DB_ALIAS])
        plan = executor.migration_plan(executor.loader.graph.leaf_nodes())
        if plan:
            raise ServiceUnavailable(f"{len(plan)} migration(s) not applied; run migrate")


@dataclasses.dataclass
class Broker(HealthCheck):
    """The Celery broker accepts a connection."""

    def run(self):
        try:
            with celery_app.connection_for_write(
                connect_timeout=settings.READYZ_TIMEOUT
            ) as connection:
                connection.ensure_connection(max_retries=1, timeout=settings.READYZ_TIMEOUT)
        except Exception as exc:
            raise ServiceUnavailable(f"broker unreachable ({type(exc).__name__})") from exc


@dataclasses.dataclass
class Redis(HealthCheck):
    """The Redis that holds the touch buffer answers a ping."""

    def run(self):
        import redis

        client = redis.Redis.from_url(
            settings.REDIS_URL,
            socket_timeout=settings.READYZ_TIMEOUT,
            socket_connect_timeout=settings.READYZ_TIMEOUT,
        )
        try:
            client.ping()
        except redis.RedisError as exc:
            raise ServiceUnavailable(f"Redis unreachable ({type(exc).__name__})") from exc
        finally:
            client.close()


@dataclasses.dataclass
class Workers(Ping):
    """The library's ping check, with a third of the budget for the ping itself.

    A ping waits its whole timeout (it collects every worker's answer); then the check
    asks the workers which queues they consume, and a polling broker (the embedded
    default's folder) adds up to a second to each. The rest of the budget is for that.
    """

    def run(self):
        try:
            replies = self.app.control.ping(timeout=self.timeout.total_seconds() / 3)
        except OSError as exc:
            raise ServiceUnavailable(f"broker unreachable ({type(exc).__name__})") from exc
        if not replies:
            raise ServiceUnavailable("Celery workers unavailable")
        self.check_active_queues(*self.active_workers(replies))


@dataclasses.dataclass
class BeatHeartbeat(HealthCheck):
    """Beat fired some enabled schedule within READYZ_BEAT_MAX_SILENCE."""

    @_own_connection
    def run(self):
        fired = [moment for moment in schedules.last_fired().values() if moment is not None]
        if not fired:
            raise ServiceUnavailable("beat has not fired any schedule yet")
        silence = (timezone.now() - max(fired)).total_seconds()
        if silence > settings.READYZ_BEAT_MAX_SILENCE:
            raise ServiceUnavailable(f"beat last fired a schedule {silence:.0f} s ago")


def readiness_checks() -> list[tuple[str, HealthCheck]]:
    seconds = datetime.timedelta(seconds=settings.READYZ_TIMEOUT)
    checks = [
        ("database", DatabaseAnswers()),
        ("migrations", Migrations()),
        ("broker", Broker()),
        ("worker", Workers(app=celery_app, timeout=seconds)),
        ("beat", BeatHeartbeat()),
    ]
    if settings.REDIS_URL:
        checks.insert(3, ("redis", Redis()))
    return checks


@method_decorator([never_cache, login_not_required], name="dispatch")
class ReadinessView(HealthCheckView):
    """The library's checks, run in parallel, each with its timeout; JSON, 503 if not ready."""

    def get_checks(self):
        self.names, checks = zip(*readiness_checks(), strict=True)
        yield from checks

    async def get(self, request, *args, **kwargs):
        with self.get_executor() as executor:
            self.results = await asyncio.gather(
                *(check.get_result(executor) for check in self.get_checks())
            )
        states = {
            name: "ok" if result.error is None else str(result.error)
            for name, result in zip(self.names, self.results, strict=True)
        }
        ready = all(state == "ok" for state in states.values())
        return JsonResponse(
            {"status": "ready" if ready else "unavailable", "checks": states},
            status=200 if ready else 503,
        )


@never_cache
@login_not_required
def healthz(request):
    """Liveness: the process answers. Cheap; touches no other service."""
    return JsonResponse({"status": "ok"})
