"""OpenTelemetry traces, on only when ``OTEL_EXPORTER_OTLP_ENDPOINT`` is set.

Unset, nothing of OpenTelemetry's instrumentation is imported and no hook is installed.
Set, each process sends its spans over OTLP/HTTP (the exporter reads the standard
``OTEL_*`` variables itself): the web process from ``memadmin.wsgi`` before Django loads
its middleware, each Celery pool process from ``worker_process_init`` (an exporter's
thread does not survive the fork). Django, Celery (publishing and running tasks, so a
task's spans join the request that queued it), psycopg and Redis are instrumented.
"""

from __future__ import annotations

import os

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
    provider.add_span_processor(span_processor)
    trace.set_tracer_provider(provider)
    DjangoInstrumentor().instrument(tracer_provider=provider, response_hook=_pseudonymous_urls)
    CeleryInstrumentor().instrument(tracer_provider=provider)
    PsycopgInstrumentor().instrument(tracer_provider=provider, skip_dep_check=True)
    RedisInstrumentor().instrument(tracer_provider=provider)
    _configured = True
    return True
