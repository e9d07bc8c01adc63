import base64
import contextlib
import os
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from django.db import connection

from memadmin.accounts import ensure_role_groups


def pytest_configure(config):
    """With DEBUG off (the PostgreSQL runs, and any subprocess given a DATABASE_URL) a
    deployment must give the key that signs erasure receipts, as it gives SECRET_KEY.
    Unless the environment gives one, the test run gives its own: one key file for this
    process and the workers and commands it starts, so each verifies what another signed."""
    from django.conf import settings

    if settings.RECEIPT_SIGNING_KEY or os.environ.get("MEMADMIN_RECEIPT_SIGNING_KEY_FILE"):
        return
    from erasure.signing import write_new_key

    path = settings.RECEIPT_SIGNING_KEY_FILE or str(
        settings.VAR_DIR / "test-receipt-signing-key.pem"
    )
    write_new_key(Path(path))  # keeps an existing one
    os.environ["MEMADMIN_RECEIPT_SIGNING_KEY_FILE"] = path
    settings.RECEIPT_SIGNING_KEY_FILE = path


def receipt_signing_key() -> str:
    """A new Ed25519 key as MEMADMIN_RECEIPT_SIGNING_KEY takes it: PKCS#8, one base64 line."""
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
    from cryptography.hazmat.primitives.serialization import Encoding, NoEncryption, PrivateFormat

    der = Ed25519PrivateKey.generate().private_bytes(
        Encoding.DER, PrivateFormat.PKCS8, NoEncryption()
    )
    return base64.b64encode(der).decode()


def pytest_collection_modifyitems(config, items):
    """Skip tests whose real service is not configured (the embedded default run)."""
    from django.conf import settings

    skip_redis = pytest.mark.skip(reason="needs Redis: set CELERY_BROKER_URL/REDIS_URL")
    skip_pg = pytest.mark.skip(reason="needs PostgreSQL: set DATABASE_URL=postgres://...")
    for item in items:
        if "redis" in item.keywords and not settings.REDIS_URL:
            item.add_marker(skip_redis)
        if "postgres" in item.keywords and settings.DATABASES["default"]["ENGINE"].endswith(
            "sqlite3"
        ):
            item.add_marker(skip_pg)


@pytest.fixture
def on_postgres() -> bool:
    return connection.vendor == "postgresql"


@pytest.fixture
def make_user(db):
    groups = None

    def make(username: str, *roles: str, superuser: bool = False, password: str = "pw-Secret-123"):
        nonlocal groups
        groups = groups or ensure_role_groups()
        User = get_user_model()
        if superuser:
            user = User.objects.create_superuser(username, f"{username}@example.com", password)
        else:
            user = User.objects.create_user(username, password=password)
        for role in roles:
            user.groups.add(groups[role])
        return user

    return make


@pytest.fixture
def login(client, make_user):
    """login('support') -> a test client logged in as a fresh user holding that role."""

    def do(*roles: str, superuser: bool = False, username: str | None = None):
        user = make_user(username or ("-".join(roles) or "norole"), *roles, superuser=superuser)
        client.force_login(user)
        return client

    return do


@pytest.fixture(scope="session")
def project_env():
    """Environment for subprocesses (workers, manage.py) that matches this test run."""
    return dict(os.environ)


@pytest.fixture(autouse=True)
def _plain_http_test_client(settings):
    """The test client speaks plain HTTP; in production TLS ends at the proxy."""
    settings.SECURE_SSL_REDIRECT = False


# --- a real Celery worker process --------------------------------------------------------


# Both queues, as one worker consumes them when started without -Q.
WORKER_QUEUES = ("celery", "erasure")


class WorkerProcess:
    """A `celery worker` subprocess on this test run's database and broker."""

    def __init__(self, env, concurrency, queues=WORKER_QUEUES):
        import subprocess
        import sys
        import threading

        self.log: list[str] = []
        self._ready = threading.Event()
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "celery",
                "-A",
                "memadmin",
                "worker",
                "-l",
                "info",
                "--concurrency",
                str(concurrency),
                "-Q",
                ",".join(queues),
                "-P",
                "prefork",
                "--without-gossip",
                "--without-mingle",
                "-n",
                f"test-{os.getpid()}-{id(self)}@%h",
            ],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,
        )
        threading.Thread(target=self._read, daemon=True).start()
        if not self._ready.wait(timeout=90):
            self.stop()
            raise RuntimeError("celery worker did not start:\n" + "".join(self.log[-40:]))

    def _read(self):
        for line in self.proc.stdout:
            self.log.append(line)
            if " ready." in line:
                self._ready.set()

    def kill(self):
        """kill -9 the whole worker (main process and its pool children)."""
        import signal

        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait(timeout=30)

    def stop(self):
        import signal

        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)  # warm shutdown; tests need no more
            try:
                self.proc.wait(timeout=5)
            except Exception:
                self.kill()


def wait_until(predicate, timeout=60.0, interval=0.05, message="condition"):
    """Poll ``predicate`` until true (a bounded wait on a condition, not a fixed sleep)."""
    import time

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout}s waiting for {message}")


def waiting_on_a_lock(pid: int) -> bool:
    """Whether the PostgreSQL backend ``pid`` is waiting for a lock (for ``wait_until``)."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT wait_event_type FROM pg_stat_activity WHERE pid = %s", [pid])
        row = cursor.fetchone()
    return row is not None and row[0] == "Lock"


def run_until_it_waits(work, then, what="the work"):
    """Run ``work()`` in a thread on its own PostgreSQL connection; once that backend
    waits for a lock, call ``then(pid)`` (release the lock, or end the backend). Returns
    what ``work`` returned, or raises what it raised."""
    import threading

    from django.db import connections

    outcome = {}

    def target():
        outcome["pid"] = connection.cursor().connection.info.backend_pid
        try:
            outcome["result"] = work()
        except BaseException as exc:  # handed to the caller's thread
            outcome["error"] = exc
        finally:
            connections.close_all()

    thread = threading.Thread(target=target)
    thread.start()
    pid = wait_until(lambda: outcome.get("pid"), message=f"{what} to connect")
    try:
        wait_until(lambda: waiting_on_a_lock(pid), message=f"{what} to wait for a lock")
    finally:  # called even when it never waited, so the thread is not left blocked
        then(pid)
        thread.join(timeout=120)
    assert not thread.is_alive(), f"{what} did not finish"
    if "error" in outcome:
        raise outcome["error"]
    return outcome["result"]


def subprocess_database_url() -> str:
    """DATABASE_URL of this test run's database, for subprocesses (workers, servers)."""
    db = connection.settings_dict
    if connection.vendor == "postgresql":
        return (
            f"postgres://{db['USER']}:{db['PASSWORD']}@{db['HOST'] or '127.0.0.1'}:"
            f"{db['PORT'] or 5432}/{db['NAME']}"
        )
    return f"sqlite:///{db['NAME']}"  # an absolute path: sqlite:////...


@pytest.fixture
def celery_worker_factory(transactional_db, settings):
    """start(concurrency=1, queues=WORKER_QUEUES) -> WorkerProcess using the test database.
    Stopped afterwards."""
    from memadmin.celery import app as celery_app

    env = dict(os.environ)
    env["DATABASE_URL"] = subprocess_database_url()
    env["SECRET_KEY"] = settings.SECRET_KEY
    env["MEMADMIN_STALE_CLAIM_SECONDS"] = str(settings.MEMADMIN["STALE_CLAIM_SECONDS"])
    celery_app.control.purge()  # messages left by earlier runs are not ours
    workers: list[WorkerProcess] = []

    def start(concurrency=1, queues=WORKER_QUEUES, **extra_env):
        worker = WorkerProcess(
            {**env, **{k: str(v) for k, v in extra_env.items()}}, concurrency, queues
        )
        workers.append(worker)
        return worker

    start.env = env
    yield start
    for worker in workers:
        worker.stop()
    celery_app.control.purge()


@pytest.fixture(autouse=True)
def clean_touch_buffer():
    """Redis outlives the test database: start and end each test with an empty buffer
    (touches, searches' history entries and counters, which a later flush would add)."""
    import redis

    from records import aio, later, touches

    def clear():
        touches.redis_client.cache_clear()  # the configured Redis, not a test's own
        client = touches.redis_client()
        if client is not None:
            try:
                keys = list(client.scan_iter(match=f"{touches.PREFIX}:*", count=1000))
                if keys:
                    client.delete(*keys)
            except redis.ConnectionError:  # a test's own Redis, stopped before its settings
                pass
        touches.redis_client.cache_clear()

    clear()
    yield
    later.drain()  # a search's writes still queued land now, then go (records.later)
    aio.close_idle()  # an idle connection left open would block the database's drop
    clear()
