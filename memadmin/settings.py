"""memadmin settings: everything comes from the environment.

With no environment at all, memadmin runs on an embedded default that needs no
server: SQLite in ``var/`` and a Celery broker on the local filesystem. Set
``DATABASE_URL`` and ``CELERY_BROKER_URL`` to run on PostgreSQL and Redis.
"""

import ipaddress
import os
import secrets
from datetime import timedelta
from pathlib import Path
from urllib.parse import parse_qsl, unquote, urlsplit

from django.core.exceptions import ImproperlyConfigured
from django.utils.csp import CSP
from kombu import Queue

BASE_DIR = Path(__file__).resolve().parent.parent
# Local, git-ignored state of the embedded default: database, broker folders, secret key.
VAR_DIR = Path(os.environ.get("MEMADMIN_VAR_DIR", BASE_DIR / "var"))


def env_bool(name: str, default: bool) -> bool:
    value = os.environ.get(name)
    if value is None or value == "":
        return default
    if value.lower() in {"1", "true", "yes", "on"}:
        return True
    if value.lower() in {"0", "false", "no", "off"}:
        return False
    raise ImproperlyConfigured(
        f"{name} must be one of 1/0/true/false/yes/no/on/off, not {value!r}."
    )


def env_seconds(name: str, default: float) -> float:
    value = os.environ.get(name)
    if value is None or value == "":
        return default
    try:
        seconds = float(value)
    except ValueError:
        seconds = 0.0
    if not 0 < seconds < float("inf"):
        raise ImproperlyConfigured(f"{name} must be a number of seconds above 0, not {value!r}.")
    return seconds


def env_list(name: str, default: list[str]) -> list[str]:
    value = os.environ.get(name)
    if not value:
        return default
    return [item.strip() for item in value.split(",") if item.strip()]


def env_count(name: str, default: int) -> int:
    value = os.environ.get(name)
    if value is None or value == "":
        return default
    if not (value.isascii() and value.isdigit()):
        raise ImproperlyConfigured(f"{name} must be a whole number (0, 1, 2, ...), not {value!r}.")
    return int(value)


def database_from_url(url: str) -> dict:
    """Translate ``postgres://user:pass@host:port/name?opt=v`` or ``sqlite:///path``."""
    parts = urlsplit(url)
    options = dict(parse_qsl(parts.query))
    if parts.scheme in {"postgres", "postgresql", "pgsql"}:
        if not parts.path.strip("/"):
            raise ImproperlyConfigured("DATABASE_URL must name a database, e.g. postgres://u@h/db")
        return {
            "ENGINE": "django.db.backends.postgresql",
            "NAME": unquote(parts.path.lstrip("/")),
            "USER": unquote(parts.username or ""),
            "PASSWORD": unquote(parts.password or ""),
            "HOST": parts.hostname or "",
            "PORT": str(parts.port or ""),
            "CONN_MAX_AGE": int(os.environ.get("DB_CONN_MAX_AGE", "60")),
            "CONN_HEALTH_CHECKS": True,
            "OPTIONS": options,
            "TEST": {"NAME": os.environ.get("TEST_DATABASE_NAME") or None},
        }
    if parts.scheme == "sqlite":
        # sqlite:///relative.db or sqlite:////absolute/path.db
        return sqlite_database(BASE_DIR / unquote(parts.path[1:]))
    raise ImproperlyConfigured(
        f"DATABASE_URL scheme {parts.scheme!r} is not supported; use postgres:// or sqlite:///"
    )


def sqlite_database(path: Path) -> dict:
    return {
        "ENGINE": "django.db.backends.sqlite3",
        "NAME": path,
        "OPTIONS": {
            # WAL lets the web process read while the worker writes; IMMEDIATE
            # takes the write lock up front so transactions queue instead of failing.
            "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
            "transaction_mode": "IMMEDIATE",
            "timeout": 30,
        },
        "TEST": {"NAME": str(VAR_DIR / "test.sqlite3")},
    }


DATABASE_URL = os.environ.get("DATABASE_URL", "")
EMBEDDED = not DATABASE_URL
if EMBEDDED:
    VAR_DIR.mkdir(parents=True, exist_ok=True)

# The embedded default is a developer/demo mode, so DEBUG defaults on there
# and off as soon as a real database is configured.
DEBUG = env_bool("DEBUG", default=EMBEDDED)


def _secret_key() -> str:
    key = os.environ.get("SECRET_KEY")
    if key:
        return key
    if not DEBUG:
        raise ImproperlyConfigured(
            "SECRET_KEY must be set when DEBUG is off. Generate one with: "
            "python -c 'import secrets; print(secrets.token_urlsafe(50))'"
        )
    path = VAR_DIR / "secret_key"
    if not path.exists():
        VAR_DIR.mkdir(parents=True, exist_ok=True)
        path.write_text(secrets.token_urlsafe(50))
        path.chmod(0o600)
    return path.read_text().strip()


SECRET_KEY = _secret_key()
ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", ["localhost", "127.0.0.1", "[::1]"])
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", [])

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django.contrib.humanize",
    "django_htmx",
    "django_celery_beat",
    "axes",
    "ninja",  # serves the API docs' Swagger UI from its own static files
    "memadmin",
    "records",
    "sweeper",
    "erasure",
    "api",
    "mcp_server",
    "backtest",
]

MIDDLEWARE = [
    # A request whose length is no number is refused before anything reads it.
    "memadmin.request_guard.content_length_guard",
    # django-prometheus's pair wraps the others: it counts and times every request.
    "django_prometheus.middleware.PrometheusBeforeMiddleware",
    "memadmin.request_context.RequestIdMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "django.middleware.csp.ContentSecurityPolicyMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    # Every page needs login unless a view opts out explicitly.
    "django.contrib.auth.middleware.LoginRequiredMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    "django_prometheus.middleware.PrometheusAfterMiddleware",
    # Last, as django-axes asks: it turns a lockout into the lockout response.
    "axes.middleware.AxesMiddleware",
]

ROOT_URLCONF = "memadmin.urls"
WSGI_APPLICATION = "memadmin.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "memadmin.roles.roles_context",
            ],
        },
    },
]

DATABASES = {
    "default": database_from_url(DATABASE_URL)
    if DATABASE_URL
    else sqlite_database(VAR_DIR / "memadmin.sqlite3")
}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "home"
LOGOUT_REDIRECT_URL = "login"

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = Path(os.environ.get("STATIC_ROOT", BASE_DIR / "staticfiles"))
STATICFILES_DIRS = [BASE_DIR / "static"]
STATICFILES_FINDERS = [
    "django.contrib.staticfiles.finders.FileSystemFinder",
    "django.contrib.staticfiles.finders.AppDirectoriesFinder",
    # vendor/plotly.min.js from the installed plotly package (no CDN, no copy in git)
    "memadmin.staticfiles.PlotlyFinder",
]
# After `collectstatic` (the Docker image runs it) static files are served compressed
# with hashed names; before it (embedded default, tests) straight from the app folders.
_COLLECTED = env_bool("STATIC_MANIFEST", default=(STATIC_ROOT / "staticfiles.json").exists())
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {
        "BACKEND": "whitenoise.storage.CompressedManifestStaticFilesStorage"
        if _COLLECTED
        else "django.contrib.staticfiles.storage.StaticFilesStorage"
    },
}
WHITENOISE_USE_FINDERS = not _COLLECTED

# --- Security (tightened further when DEBUG is off) ---------------------------
SESSION_COOKIE_HTTPONLY = True
SESSION_COOKIE_AGE = int(os.environ.get("SESSION_COOKIE_AGE", str(8 * 3600)))
SESSION_SAVE_EVERY_REQUEST = True  # the age above is an idle timeout
X_FRAME_OPTIONS = "DENY"
# Pages carry no inline script; plotly.js injects <style> elements while it draws, which
# is why style-src allows inline styles (scripts never do).
SECURE_CSP = {
    "default-src": [CSP.SELF],
    "script-src": [CSP.SELF],
    "style-src": [CSP.SELF, CSP.UNSAFE_INLINE],
    "img-src": [CSP.SELF, "data:"],
    "font-src": [CSP.SELF, "data:"],
    "connect-src": [CSP.SELF],
    "object-src": [CSP.NONE],
    "base-uri": [CSP.SELF],
    "form-action": [CSP.SELF],
    "frame-ancestors": [CSP.NONE],
}

# Login throttling (django-axes): 5 failures for a username from one address lock it
# out for 15 minutes; a successful login resets the count.
AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",
    "django.contrib.auth.backends.ModelBackend",
]
AXES_FAILURE_LIMIT = int(os.environ.get("AXES_FAILURE_LIMIT", "5"))
AXES_COOLOFF_TIME = timedelta(minutes=int(os.environ.get("AXES_COOLOFF_MINUTES", "15")))
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_RESET_ON_SUCCESS = True
AXES_LOCKOUT_TEMPLATE = "registration/locked.html"
# Reverse proxies in front of memadmin (TLS ends at them). Their X-Forwarded-* headers
# are believed only when there are some: without a proxy any client could send them.
PROXY_COUNT = env_count("PROXY_COUNT", 0)
AXES_IPWARE_PROXY_COUNT = env_count("AXES_PROXY_COUNT", PROXY_COUNT)
if PROXY_COUNT:
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
# The container's health check and Prometheus ask over plain HTTP from inside (no TLS there).
SECURE_REDIRECT_EXEMPT = [r"^(healthz|readyz|metrics)$"]
if not DEBUG:
    SESSION_COOKIE_SECURE = True
    CSRF_COOKIE_SECURE = True
    SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", True)
    SECURE_HSTS_SECONDS = int(os.environ.get("SECURE_HSTS_SECONDS", "31536000"))
    SECURE_HSTS_INCLUDE_SUBDOMAINS = True
    SECURE_HSTS_PRELOAD = True

# --- Celery ---------------------------------------------------------------------
CELERY_BROKER_URL = os.environ.get("CELERY_BROKER_URL", "")
if CELERY_BROKER_URL:
    CELERY_BROKER_TRANSPORT_OPTIONS = {"visibility_timeout": 3600}
else:
    # A broker that needs no server: kombu's filesystem transport in var/broker.
    _broker_dir = Path(os.environ.get("MEMADMIN_BROKER_DIR", VAR_DIR / "broker"))
    for _sub in ("queue", "processed", "control"):
        (_broker_dir / _sub).mkdir(parents=True, exist_ok=True)
    CELERY_BROKER_URL = "filesystem://"
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        "data_folder_in": str(_broker_dir / "queue"),
        "data_folder_out": str(_broker_dir / "queue"),
        "processed_folder": str(_broker_dir / "processed"),
        "control_folder": str(_broker_dir / "control"),
        "store_processed": False,
    }
CELERY_TASK_IGNORE_RESULT = True  # outcomes live in database rows, not a result backend
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_TIMEZONE = TIME_ZONE
CELERY_BEAT_SCHEDULER = "django_celery_beat.schedulers:DatabaseScheduler"
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
# Erasure has a queue of its own, consumed by a worker of its own (`make run`, compose),
# so a stuck sweep cannot delay it. A worker started without -Q consumes both queues.
ERASURE_QUEUE = "erasure"
CELERY_TASK_DEFAULT_QUEUE = "celery"
CELERY_TASK_QUEUES = tuple(
    Queue(name, routing_key=name) for name in (CELERY_TASK_DEFAULT_QUEUE, ERASURE_QUEUE)
)
CELERY_TASK_ROUTES = {"erasure.*": {"queue": ERASURE_QUEUE}}
# Tasks that run importance rules over stored text (sweep, enforcement and plan items;
# re-scoring) have time limits. At the soft limit the task stops, gives its claim back
# and is retried; at the hard limit the worker process is killed, and the reconciler
# re-queues the item once its claim is stale. Keep both below the stale-claim time. The
# limits travel in the task's message, so web and workers need the same values.
TASK_SOFT_TIME_LIMIT = env_seconds("MEMADMIN_TASK_SOFT_TIME_LIMIT", 120)
TASK_TIME_LIMIT = env_seconds("MEMADMIN_TASK_TIME_LIMIT", 180)
if TASK_SOFT_TIME_LIMIT >= TASK_TIME_LIMIT:
    raise ImproperlyConfigured(
        f"MEMADMIN_TASK_SOFT_TIME_LIMIT ({TASK_SOFT_TIME_LIMIT:g}) must be below "
        f"MEMADMIN_TASK_TIME_LIMIT ({TASK_TIME_LIMIT:g})."
    )
CELERY_TASK_ANNOTATIONS = {
    name: {"soft_time_limit": TASK_SOFT_TIME_LIMIT, "time_limit": TASK_TIME_LIMIT}
    for name in (
        "sweeper.tasks.run_item",
        "records.tasks.rescore_app",
        "records.tasks.backfill_embeddings",
    )
}

# Redis for the touch buffer and locks; defaults to the broker when that is Redis.
REDIS_URL = os.environ.get("REDIS_URL") or (
    CELERY_BROKER_URL if CELERY_BROKER_URL.startswith(("redis://", "rediss://")) else ""
)

# --- memadmin ---------------------------------------------------------------------
MEMADMIN = {
    # Dotted path of a callable(text) -> int; the default needs no download.
    "TOKEN_COUNTER": os.environ.get("MEMADMIN_TOKEN_COUNTER", "records.tokens.count_tokens"),
    # Dotted path of a callable(text) -> float | None for text no rule matched.
    "IMPORTANCE_CLASSIFIER": os.environ.get("MEMADMIN_IMPORTANCE_CLASSIFIER", ""),
    # Dotted path of a callable(list[str]) -> list[list[float]]: hybrid search when set
    # (records.embeddings, docs/embeddings.md).
    "EMBEDDER": os.environ.get("MEMADMIN_EMBEDDER", ""),
    # Dotted path of a callable(texts, max_tokens) -> str; the default is extractive.
    "SUMMARISER": os.environ.get("MEMADMIN_SUMMARISER", ""),
    # The lease of every claimed job (sweep runs and items, erasure jobs): a claim not
    # renewed for this long is presumed dead and handed on by the job's reconciler.
    "STALE_CLAIM_SECONDS": int(os.environ.get("MEMADMIN_STALE_CLAIM_SECONDS", "300")),
    # Users per enforcement task: one set-based statement and one lock set per batch.
    "ENFORCE_BATCH": int(os.environ.get("MEMADMIN_ENFORCE_BATCH", "200")),
    # Erasure: rows per batch (one short transaction each) and how fresh a password
    # check must be.
    "ERASURE_BATCH_SIZE": int(os.environ.get("MEMADMIN_ERASURE_BATCH_SIZE", "1000")),
    "ERASURE_REAUTH_SECONDS": int(os.environ.get("MEMADMIN_ERASURE_REAUTH_SECONDS", "300")),
    # Days of access history (searches, evicted records' metadata) a backtest can replay.
    "ACCESS_HISTORY_DAYS": int(os.environ.get("MEMADMIN_ACCESS_HISTORY_DAYS", "90")),
}

# Erasure receipts are signed with Ed25519 (erasure/signing.py, docs/receipts.md). The key:
# PEM text (or its one-line base64 body), or a PEM file. With DEBUG on and neither set it
# is generated into var/ on first use; with DEBUG off one must be given (as SECRET_KEY),
# which `manage.py check` and the first signature enforce. Retired keys (their JWK x,
# comma-separated) stay published so receipts they signed still verify.
RECEIPT_SIGNING_KEY = os.environ.get("MEMADMIN_RECEIPT_SIGNING_KEY", "")
RECEIPT_SIGNING_KEY_FILE = os.environ.get("MEMADMIN_RECEIPT_SIGNING_KEY_FILE", "")
if RECEIPT_SIGNING_KEY and RECEIPT_SIGNING_KEY_FILE:
    raise ImproperlyConfigured(
        "Set MEMADMIN_RECEIPT_SIGNING_KEY or MEMADMIN_RECEIPT_SIGNING_KEY_FILE, not both."
    )
if not RECEIPT_SIGNING_KEY and not RECEIPT_SIGNING_KEY_FILE and DEBUG:
    RECEIPT_SIGNING_KEY_FILE = str(VAR_DIR / "receipt-signing-key.pem")
RECEIPT_RETIRED_KEYS = env_list("MEMADMIN_RECEIPT_RETIRED_KEYS", [])

# The HTTP API (api/): requests with a larger body are refused with 413.
MEMADMIN_API_MAX_BODY_BYTES = int(os.environ.get("MEMADMIN_API_MAX_BODY_BYTES", 2 * 1024 * 1024))
# Django's own limit must not refuse first (with a less helpful 400).
DATA_UPLOAD_MAX_MEMORY_SIZE = max(2_621_440, MEMADMIN_API_MAX_BODY_BYTES)

# Every record reaches one handler (Django's own "django" console handler would print
# each warning a second time with DEBUG on). The filters keep memory user ids out of the
# request, security and runserver access lines and log a refused request in one line;
# the handler's filters add the request id and the Celery task id to every record and
# withhold the text of database errors (it can quote stored values).
LOG_FORMAT = os.environ.get("LOG_FORMAT", "plain") or "plain"
if LOG_FORMAT not in {"plain", "json"}:
    raise ImproperlyConfigured(f"LOG_FORMAT must be plain or json, not {LOG_FORMAT!r}.")
LOGGING_CONFIG = "memadmin.log_format.configure"
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {
        "plain": {"format": "%(asctime)s %(levelname)s %(name)s %(message)s"},
        "json": {"()": "memadmin.log_format.JsonFormatter"},
    },
    "filters": {
        "context": {"()": "memadmin.request_context.ContextFilter"},
        "request_privacy": {"()": "memadmin.log_filters.RequestLogFilter"},
        "access_privacy": {"()": "memadmin.log_filters.AccessLogFilter"},
        "database_errors": {"()": "memadmin.log_filters.DatabaseErrorFilter"},
        "mcp_privacy": {"()": "memadmin.log_filters.McpLogFilter"},
    },
    "handlers": {
        "console": {
            "class": "logging.StreamHandler",
            "formatter": LOG_FORMAT,
            "filters": ["context", "database_errors"],
        }
    },
    "root": {"handlers": ["console"], "level": os.environ.get("LOG_LEVEL", "INFO")},
    "loggers": {
        "django": {"handlers": [], "level": "INFO"},
        "django.request": {"filters": ["request_privacy"]},
        # Logger filters see only records logged on that very logger, hence each name.
        "django.security.csrf": {"filters": ["request_privacy"]},
        "django.security.DisallowedModelAdminLookup": {"filters": ["request_privacy"]},
        "django.server": {"filters": ["access_privacy"], "propagate": True},
        # A failed resource read is logged with its URI, which names the user.
        "mcp.server.mcpserver.server": {"filters": ["mcp_privacy"]},
        "django.db.backends": {"level": "WARNING"},
    },
}

# --- Operations: metrics, readiness, traces (docs/observability.md) ----------------------
# /metrics answers a bearer token equal to METRICS_TOKEN, or a client address in one of
# METRICS_ALLOWED_NETWORKS (REMOTE_ADDR: scrape memadmin directly, not through the proxy).
METRICS_TOKEN = os.environ.get("METRICS_TOKEN", "")


def _networks(name: str, default: str) -> list:
    try:
        return [ipaddress.ip_network(n) for n in env_list(name, default.split(","))]
    except ValueError as exc:
        raise ImproperlyConfigured(
            f"{name} must be comma-separated networks such as 10.0.0.0/8,::1/128: {exc}"
        ) from None


METRICS_ALLOWED_NETWORKS = _networks("METRICS_ALLOWED_NETWORKS", "127.0.0.0/8,::1/128")
# /readyz: each check must answer within this many seconds (the worker ping waits a
# third of it), and beat must have fired a schedule within the silence allowed.
READYZ_TIMEOUT = env_seconds("READYZ_TIMEOUT", 3)
READYZ_BEAT_MAX_SILENCE = env_seconds("READYZ_BEAT_MAX_SILENCE", 600)
