"""The web container's health check: ``python -m memadmin.healthcheck [/readyz]``.

It asks the server in the same container, as a client the production settings accept:
plain HTTP (``/healthz`` and ``/readyz`` are exempt from the HTTPS redirect; TLS ends at
the proxy) on ``$PORT`` (8000, where the image's gunicorn listens), with a Host header
that ALLOWED_HOSTS allows. Exit status 0 means the server answers (``/healthz``, the
default) or that everything it needs answers (``/readyz``; compose uses this one).
"""

from __future__ import annotations

import http.client
import os
import sys


def request_host(allowed_hosts: list[str]) -> str:
    """A Host header ALLOWED_HOSTS accepts: its first entry, as a plain name."""
    for host in allowed_hosts:
        if host == "*":
            return "localhost"
        name = host.lstrip(".")  # ".example.com" allows example.com itself too
        if name:
            return name
    return "localhost"


PATHS = ("/healthz", "/readyz")


def problem(port: int, host: str, path: str = "/healthz", timeout: float = 8.0) -> str | None:
    """What is wrong with GET ``path``, or None when it answers 200."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        connection.request("GET", path, headers={"Host": host})
        response = connection.getresponse()
        body = response.read()
    except OSError as exc:
        return f"no answer on 127.0.0.1:{port}: {exc}"
    finally:
        connection.close()
    if response.status == 200:
        return None
    redirect = response.getheader("Location")
    return f"{path} (Host: {host}) answered {response.status} {response.reason}" + (
        f", a redirect to {redirect}" if redirect else f": {body[:500].decode(errors='replace')}"
    )


def main(argv: list[str]) -> int:
    path = argv[0] if argv else "/healthz"
    if path not in PATHS or len(argv) > 1:
        print(f"usage: python -m memadmin.healthcheck [{' | '.join(PATHS)}]", file=sys.stderr)
        return 2
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memadmin.settings")
    from django.conf import settings

    port = int(os.environ.get("PORT", "8000"))
    found = problem(port, request_host(settings.ALLOWED_HOSTS), path)
    if found:
        print(f"unhealthy: {found}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
