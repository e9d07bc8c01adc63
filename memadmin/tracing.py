"""OpenTelemetry traces, on only when ``OTEL_EXPORTER_OTLP_ENDPOINT`` is set.

Unset, nothing of OpenTelemetry's instrumentation is imported and no hook is installed.
Set, each process sends its spans over OTLP/HTTP (the exporter reads the standard
``OTEL_*`` variables itself): the web process from ``memadmin.wsgi`` before Django loads
its middleware, each Celery pool process from ``worker_process_init`` (an exporter's
thread does not survive the fork). Django, Celery (publishing and running tasks, so a
task's spans join the request that queued it), psycopg and Redis are instrumented.
Database errors' text is withheld from spans as from logs (``WithholdingSpanProcessor``).
"""

from __future__ import annotations

import os

from . import log_filters
from .pseudonyms import pseudonymous_path

_configured = False


def enabled() -> bool:
    return bool(os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT"))


def configure_from_environment(*, worker: bool = False) -> bool:
    """Start tracing in this process when the endpoint is set. Returns whether it did."""
    if not enabled():
        return False
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    service = os.environ.get("OTEL_SERVICE_NAME") or ("memadmin-worker" if worker else "memadmin")
    return configure(BatchSpanProcessor(OTLPSpanExporter()), service=service)


# Span attributes that hold the request's URL: the path keeps only pseudonyms of memory
# user ids, and the query (search text, user ids) goes.
URL_ATTRIBUTES = ("http.target", "http.url", "url.path", "url.full")
QUERY_ATTRIBUTES = ("url.query",)


def _pseudonymous_urls(span, request, response) -> None:
    if span is None or not span.is_recording():
        return
    recorded = span.attributes or {}
    path = pseudonymous_path(request)
    for name in URL_ATTRIBUTES:
        if name in recorded:
            span.set_attribute(name, path)
    for name in QUERY_ATTRIBUTES:
        if name in recorded:
            span.set_attribute(name, "")


# Exceptions whose text can quote stored values (PostgreSQL's "Failing row contains
# (...)", "Key (user_id)=(...)"): their message and the lines of it in a stack trace are
# withheld from spans, as from logs (``log_filters.withheld``).
DATABASE_ERROR_MODULES = ("psycopg", "psycopg2", "sqlite3", "django.db")
# Lines of a Python stack trace that are no exception's message.
_TRACE_HEADERS = ("Traceback (", "During handling of", "The above exception")


def _database_type(name: str) -> bool:
    return name.split(".", 1)[0] in DATABASE_ERROR_MODULES or name.startswith("django.db.")


def _withheld_stacktrace(text: str) -> str:
    """``text`` with every database error's message (its line and the ones after it up
    to the next frame or header: DETAIL, CONTEXT, LINE...) replaced by WITHHELD."""
    out, skipping = [], False
    for line in text.splitlines(keepends=True):
        if line[:1].isspace() or line.startswith(_TRACE_HEADERS):
            skipping = False
            out.append(line)
            continue
        head = line.split(":", 1)[0].strip()
        if _database_type(head):
            out.append(f"{head}: {log_filters.WITHHELD}\n")
            skipping = True
        elif not skipping:
            out.append(line)
    return "".join(out)


class WithholdingSpanProcessor:
    """Hands each finished span to ``inner`` with database error text withheld: the
    exception events the instrumentations record (message, stack trace) and the error
    status they set (``Class: message``). Logs withhold the same text; spans leave for a
    collector outside the data stores, which erasure does not reach."""

    def __init__(self, inner) -> None:
        self.inner = inner

    def on_start(self, span, parent_context=None) -> None:
        self.inner.on_start(span, parent_context=parent_context)

    def _on_ending(self, span) -> None:
        ending = getattr(self.inner, "_on_ending", None)
        if ending is not None:
            ending(span)

    def on_end(self, span) -> None:
        self.inner.on_end(_withheld(span))

    def shutdown(self) -> None:
        self.inner.shutdown()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return self.inner.force_flush(timeout_millis)


def _withheld(span):
    from opentelemetry.sdk.trace import Event, ReadableSpan
    from opentelemetry.trace import Status

    events, withheld = [], False
    for event in span.events:
        attributes = dict(event.attributes or {})
        if event.name == "exception" and _database_type(str(attributes.get("exception.type"))):
            attributes["exception.message"] = log_filters.WITHHELD
            withheld = True
        if "exception.stacktrace" in attributes:
            stacktrace = str(attributes["exception.stacktrace"])
            attributes["exception.stacktrace"] = _withheld_stacktrace(stacktrace)
            withheld |= attributes["exception.stacktrace"] != stacktrace
        events.append(Event(event.name, attributes, timestamp=event.timestamp))
    if not withheld:
        return span
    status = span.status
    if status.description:  # "CheckViolation: new row ... DETAIL: Failing row contains"
        name = status.description.split(":", 1)[0]
        status = Status(status.status_code, f"{name}: {log_filters.WITHHELD}")
    return ReadableSpan(
        name=span.name,
        context=span.context,
        parent=span.parent,
        resource=span.resource,
        attributes=span.attributes,
        events=events,
        links=span.links,
        kind=span.kind,
        status=status,
        start_time=span.start_time,
        end_time=span.end_time,
        instrumentation_scope=span.instrumentation_scope,
    )


def configure(span_processor, *, service: str = "memadmin") -> bool:
    """Install a tracer provider with ``span_processor`` and instrument the libraries.

    Tests pass a processor around an in-memory exporter. Once per process.
    """
    global _configured
    if _configured:
        return False
    from opentelemetry import trace
    from opentelemetry.instrumentation.celery import CeleryInstrumentor
    from opentelemetry.instrumentation.django import DjangoInstrumentor
    from opentelemetry.instrumentation.psycopg import PsycopgInstrumentor
    from opentelemetry.instrumentation.redis import RedisInstrumentor
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider

    provider = TracerProvider(resource=Resource.create({"service.name": service}))
    provider.add_span_processor(WithholdingSpanProcessor(span_processor))
    trace.set_tracer_provider(provider)
    DjangoInstrumentor().instrument(tracer_provider=provider, response_hook=_pseudonymous_urls)
    CeleryInstrumentor().instrument(tracer_provider=provider)
    PsycopgInstrumentor().instrument(tracer_provider=provider, skip_dep_check=True)
    RedisInstrumentor().instrument(tracer_provider=provider)
    _configured = True
    return True
