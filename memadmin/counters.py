"""memadmin's own Prometheus counters, incremented where the work happens.

Ingests run in Celery workers, searches and touches in web processes: with
``PROMETHEUS_MULTIPROC_DIR`` set, prometheus_client keeps each process's values in a
file there and ``/metrics`` adds them up (docs/observability.md). Labels name apps only:
never a user id, never content.
"""

from __future__ import annotations

from contextlib import contextmanager

from django.db.backends.signals import connection_created
from django_prometheus.db import metrics as db_metrics
from prometheus_client import Counter

INGESTS = Counter("memadmin_ingests", "Ingest calls (a session, events or memories).", ["app"])
RECORDS_ADDED = Counter("memadmin_records_added", "Memory records stored by ingests.", ["app"])
SEARCHES = Counter("memadmin_searches", "Memory searches answered.", ["app"])
TOUCHES = Counter("memadmin_touches", "Records touched by search hits (kept).", ["app"])
TOUCHES_DROPPED = Counter(
    "memadmin_touches_dropped", "Touches lost because the touch buffer was unavailable.", ["app"]
)


def count_ingest(app_name: str, added: int) -> None:
    INGESTS.labels(app_name).inc()
    RECORDS_ADDED.labels(app_name).inc(added)


def count_search(app_name: str) -> None:
    SEARCHES.labels(app_name).inc()


def count_touches(app_name: str, touched: int, outcome: str) -> None:
    """``outcome`` is what the touch buffer answered ('buffered', 'applied', 'dropped')."""
    if touched:
        (TOUCHES_DROPPED if outcome == "dropped" else TOUCHES).labels(app_name).inc(touched)


def _timed_query(execute, sql, params, many, context):
    """Feed django-prometheus's database metrics from Django's own execute hook.

    Its engine wrappers would replace psycopg's cursor factory, which Django, the
    OpenTelemetry psycopg instrumentation and server-side cursors also set; the hook
    counts the same statements without touching the driver.
    """
    connection = context["connection"]
    statements = len(params) if many and isinstance(params, list | tuple) else 1
    with database_statement(connection.alias, connection.vendor, statements, many=many):
        return execute(sql, params, many, context)


@contextmanager
def database_statement(alias: str, vendor: str, statements: int = 1, *, many: bool = False):
    """Count and time a query string in django-prometheus's database metrics: Django's
    (``_timed_query``) and the event loop's own connection's (``records.aio``). Its
    errors count by type, as django-prometheus counts them; a cancellation does not."""
    labels = {"alias": alias, "vendor": vendor}
    db_metrics.execute_total.labels(**labels).inc(statements)
    if many:
        db_metrics.execute_many_total.labels(**labels).inc(statements)
    with db_metrics.query_duration_seconds.labels(**labels).time():
        try:
            yield
        except Exception as exc:  # a cancelled statement (the caller gave up) is no error
            db_metrics.errors_total.labels(**labels, type=type(exc).__name__).inc()
            raise


def count_database_connection(alias: str, vendor: str) -> None:
    db_metrics.connections_total.labels(alias, vendor).inc()


def _on_connection_created(sender, connection, **kwargs):
    count_database_connection(connection.alias, connection.vendor)
    if _timed_query not in connection.execute_wrappers:
        connection.execute_wrappers.append(_timed_query)


def count_database_queries() -> None:
    """Count every new connection's statements (called once, from the app's ready())."""
    connection_created.connect(_on_connection_created, dispatch_uid="memadmin-db-metrics")
