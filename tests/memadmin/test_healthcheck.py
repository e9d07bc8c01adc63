"""The web container's health check passes on the production settings.

There is no Docker engine here, so the test does what compose does: it reads the
Dockerfile and docker-compose.yml, starts the image's server command (gunicorn) with the
environment compose gives the web container (DEBUG off, the HTTPS redirect on, compose's
ALLOWED_HOSTS), and runs the health check's own command next to it.
"""

import http.client
import json
import os
import re
import shlex
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from django.http.request import validate_host
from django.utils import timezone
from django_celery_beat.models import PeriodicTask

from memadmin import schedules
from memadmin.healthcheck import main, request_host

from ..conftest import receipt_signing_key, subprocess_database_url, wait_until

ROOT = Path(__file__).resolve().parents[2]
# What an operator puts in .env next to docker-compose.yml (docs/operations.md, "Production").
DOT_ENV = {
    "SECRET_KEY": "x" * 50,
    "POSTGRES_PASSWORD": "pw",
    "MEMADMIN_RECEIPT_SIGNING_KEY": receipt_signing_key(),
}


def interpolate(value: str, env: dict[str, str]) -> str:
    """Compose's ${VAR}, ${VAR:-default} and ${VAR:?error}."""

    def one(match):
        name, op, arg = match.group(1), match.group(2), match.group(3)
        if env.get(name):
            return env[name]
        if op == "?":
            raise AssertionError(f"compose needs {name}: {arg}")
        return arg or ""

    return re.sub(r"\$\{(\w+)(?::([-?])([^}]*))?\}", one, value)


def web_service() -> tuple[dict[str, str], dict]:
    """The web container's environment (from .env) and its health check."""
    web = yaml.safe_load((ROOT / "docker-compose.yml").read_text())["services"]["web"]
    env = {k: interpolate(str(v), DOT_ENV) for k, v in web["environment"].items()}
    assert web["healthcheck"]["test"][0] == "CMD"  # exec form: no shell in between
    return env, web["healthcheck"]


def image() -> tuple[dict[str, str], list[str]]:
    """The Dockerfile's ENV and the server command (CMD)."""
    env, cmd = {}, None
    for line in (ROOT / "Dockerfile").read_text().splitlines():
        if line.startswith("ENV "):
            env.update(pair.split("=", 1) for pair in shlex.split(line[4:]))
        elif line.startswith("CMD "):
            cmd = json.loads(line[4:])
    return env, cmd


def python(command: list[str]) -> list[str]:
    """The container's ``python``/console scripts, run by this interpreter."""
    if command[0] == "python":
        return [sys.executable, *command[1:]]
    return [sys.executable, "-m", command[0], *command[1:]]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def get(port, path, headers, timeout=60):
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        connection.request("GET", path, headers=headers)
        response = connection.getresponse()
        response.read()
        return response
    finally:
        connection.close()


def accepts(port) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
        return True
    except OSError:
        return False


@pytest.fixture
def production_server(transactional_db, tmp_path):
    """The image's gunicorn with the web container's environment, on this run's database."""
    image_env, server_command = image()
    compose_env, healthcheck = web_service()
    port = free_port()
    passed = ("PATH", "PYTHONPATH", "HOME", "MEMADMIN_VAR_DIR")
    env = {k: os.environ[k] for k in passed if k in os.environ}
    env.update(image_env)
    env.update(compose_env)
    # the services compose would start, as this test run has them (the embedded default's
    # broker is a folder under MEMADMIN_VAR_DIR, which the test's workers share)
    env["DATABASE_URL"] = subprocess_database_url()
    env.pop("CELERY_BROKER_URL")
    if os.environ.get("CELERY_BROKER_URL"):
        env["CELERY_BROKER_URL"] = os.environ["CELERY_BROKER_URL"]
    env["PROMETHEUS_MULTIPROC_DIR"] = str(tmp_path / "metrics")
    (tmp_path / "metrics").mkdir()
    env["PORT"] = str(port)
    log = (tmp_path / "gunicorn.log").open("w+")
    server = subprocess.Popen(
        python(server_command),
        cwd=ROOT,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        wait_until(lambda: accepts(port) or server.poll() is not None, timeout=90)
        assert server.poll() is None, (tmp_path / "gunicorn.log").read_text()
        get(port, "/healthz", {"Host": "localhost"})  # a worker has loaded the app
        yield port, env, healthcheck, compose_env
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(timeout=30)
        log.close()


def compose_health_check(env, healthcheck) -> subprocess.CompletedProcess:
    """As compose does: healthy unless `retries` checks in a row fail (a gunicorn worker's
    first request loads the URLconf, which can outlast one check on a busy machine)."""
    for _ in range(healthcheck["retries"]):
        result = subprocess.run(
            python(healthcheck["test"][1:]), cwd=ROOT, env=env, capture_output=True, text=True
        )
        if result.returncode == 0:
            break
    return result


@pytest.mark.worker
def test_the_compose_health_check_passes_against_the_production_server(
    production_server, celery_worker_factory
):
    port, env, healthcheck, compose_env = production_server
    assert "DEBUG" not in compose_env and "SECURE_SSL_REDIRECT" not in compose_env
    assert healthcheck["test"][-1] == "/readyz"
    schedules.install()
    PeriodicTask.objects.update(last_run_at=timezone.now())  # beat has just fired
    worker = celery_worker_factory(concurrency=1)
    result = compose_health_check(env, healthcheck)
    assert result.returncode == 0, result.stderr[-1000:]

    worker.stop()  # not ready without a worker; still alive
    result = compose_health_check(env, healthcheck)
    assert result.returncode == 1
    assert '"worker": "Unavailable' in result.stderr
    liveness = subprocess.run(
        python([*healthcheck["test"][1:-1], "/healthz"]), cwd=ROOT, env=env, capture_output=True
    )
    assert liveness.returncode == 0


def test_only_the_health_and_metrics_endpoints_are_exempt_from_the_https_redirect(
    production_server,
):
    port, *_ = production_server
    assert get(port, "/healthz", {"Host": "localhost"}).status == 200
    assert get(port, "/readyz", {"Host": "localhost"}).status == 503  # no worker here
    assert get(port, "/metrics", {"Host": "localhost"}).status == 200
    response = get(port, "/login/", {"Host": "localhost"})
    assert response.status == 301
    assert response.getheader("Location") == "https://localhost/login/"


@pytest.mark.parametrize(
    "allowed",
    [["localhost"], ["memadmin.example.com", "localhost"], [".example.com"], ["*"], ["[::1]"]],
)
def test_the_health_check_sends_a_host_that_allowed_hosts_accepts(allowed):
    assert validate_host(request_host(allowed), allowed)


@pytest.mark.parametrize("argv", [["/admin/"], ["/healthz", "/readyz"]])
def test_the_health_check_refuses_other_paths(argv, capsys):
    assert main(argv) == 2
    assert "usage" in capsys.readouterr().err
