"""Settings come from the environment; checked in fresh interpreters."""

import glob
import os
import subprocess
import sys
from pathlib import Path

import pytest

from memadmin.settings import database_from_url

ROOT = Path(__file__).resolve().parents[2]


def test_postgres_url_is_translated():
    db = database_from_url("postgres://me:p%40ss@db.example:5433/memadmin?sslmode=require")
    assert db["ENGINE"] == "django.db.backends.postgresql"
    assert (db["NAME"], db["USER"], db["PASSWORD"], db["HOST"], db["PORT"]) == (
        "memadmin",
        "me",
        "p@ss",
        "db.example",
        "5433",
    )
    assert db["OPTIONS"] == {"sslmode": "require"}


def test_sqlite_url_and_unknown_scheme():
    from django.core.exceptions import ImproperlyConfigured

    assert database_from_url("sqlite:////tmp/x.db")["NAME"] == Path("/tmp/x.db")
    assert database_from_url("sqlite:///var/y.db")["NAME"].relative_to(ROOT) == Path("var/y.db")
    with pytest.raises(ImproperlyConfigured, match="not supported"):
        database_from_url("mysql://u@h/db")
    with pytest.raises(ImproperlyConfigured, match="must name a database"):
        database_from_url("postgres://u@h/")


def settings_in_subprocess(env_overrides, code="from django.conf import settings; settings.DEBUG"):
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in {"DATABASE_URL", "CELERY_BROKER_URL", "SECRET_KEY", "DEBUG", "REDIS_URL"}
    }
    env.update(env_overrides)
    env["DJANGO_SETTINGS_MODULE"] = "memadmin.settings"
    return subprocess.run(
        [sys.executable, "-c", f"import django; django.setup(); {code}"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_secret_key_is_required_when_debug_is_off(tmp_path):
    result = settings_in_subprocess({"DEBUG": "0", "MEMADMIN_VAR_DIR": str(tmp_path)})
    assert result.returncode != 0
    assert "SECRET_KEY must be set when DEBUG is off" in result.stderr


def test_embedded_default_generates_a_local_secret_and_uses_sqlite_and_filesystem_broker(tmp_path):
    code = (
        "from django.conf import settings as s; "
        "print(s.DATABASES['default']['ENGINE'], s.CELERY_BROKER_URL, s.DEBUG, s.REDIS_URL=='')"
    )
    result = settings_in_subprocess({"MEMADMIN_VAR_DIR": str(tmp_path)}, code)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["django.db.backends.sqlite3", "filesystem://", "True", "True"]
    secret = (tmp_path / "secret_key").read_text()
    assert len(secret) >= 50 and (tmp_path / "secret_key").stat().st_mode & 0o077 == 0


def test_production_shape_from_environment(tmp_path):
    code = (
        "from django.conf import settings as s; "
        "print(s.DATABASES['default']['ENGINE'], s.CELERY_BROKER_URL, s.REDIS_URL, s.DEBUG, "
        "s.SESSION_COOKIE_SECURE, s.SECURE_HSTS_SECONDS > 0)"
    )
    result = settings_in_subprocess(
        {
            "DATABASE_URL": "postgres://u@h/db",
            "CELERY_BROKER_URL": "redis://r:6379/0",
            "SECRET_KEY": "x" * 60,
            "MEMADMIN_VAR_DIR": str(tmp_path),
        },
        code,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == [
        "django.db.backends.postgresql",
        "redis://r:6379/0",
        "redis://r:6379/0",
        "False",
        "True",
        "True",
    ]


PRODUCTION = {"DATABASE_URL": "postgres://u@h/db", "SECRET_KEY": "x" * 60}
BELIEVED = "('HTTP_X_FORWARDED_PROTO', 'https')"
TRUST = (
    "from django.conf import settings as s; "
    "print(s.SECURE_PROXY_SSL_HEADER, s.AXES_IPWARE_PROXY_COUNT, s.SECURE_SSL_REDIRECT)"
)


@pytest.mark.parametrize(
    ("proxies", "expected"),
    [
        ({}, "None 0 True"),
        ({"PROXY_COUNT": "0"}, "None 0 True"),
        ({"PROXY_COUNT": "1"}, f"{BELIEVED} 1 True"),
        ({"PROXY_COUNT": "1", "AXES_PROXY_COUNT": "2"}, f"{BELIEVED} 2 True"),
    ],
)
def test_x_forwarded_proto_is_believed_only_behind_a_configured_proxy(proxies, expected):
    result = settings_in_subprocess({**PRODUCTION, **proxies}, TRUST)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == expected


def test_a_proxy_count_that_is_not_a_number_is_refused_with_what_is_allowed():
    result = settings_in_subprocess({**PRODUCTION, "PROXY_COUNT": "yes"}, TRUST)
    assert result.returncode != 0
    assert "PROXY_COUNT must be a whole number (0, 1, 2, ...), not 'yes'" in result.stderr


def old_python():
    for candidate in sorted(
        glob.glob(os.path.expanduser("~/.pyenv/versions/3.1[01]*/bin/python3"))
    ) + ["/usr/bin/python3"]:
        if os.path.exists(candidate):
            out = subprocess.run(
                [candidate, "-c", "import sys; print(sys.version_info < (3, 12))"],
                capture_output=True,
                text=True,
            )
            if out.stdout.strip() == "True":
                return candidate
    return None


@pytest.mark.skipif(old_python() is None, reason="no Python older than 3.12 on this machine")
def test_old_python_fails_with_a_clear_message():
    result = subprocess.run(
        [old_python(), "manage.py", "check"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={"PATH": os.environ["PATH"]},
    )
    assert result.returncode != 0
    assert "needs Python 3.12 or newer" in result.stderr


def test_the_docker_build_collects_hashed_compressed_static_files(tmp_path):
    """What the Dockerfile runs: collectstatic with STATIC_MANIFEST=1 (no CDN anywhere)."""
    import json

    env = {k: v for k, v in os.environ.items() if k not in {"DEBUG"}}
    env.update(
        STATIC_MANIFEST="1",
        STATIC_ROOT=str(tmp_path / "static"),
        SECRET_KEY="x" * 50,
        DATABASE_URL="postgres://u@h/db",
        MEMADMIN_VAR_DIR=str(tmp_path),
    )
    result = subprocess.run(
        [sys.executable, "manage.py", "collectstatic", "--noinput"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    manifest = json.loads((tmp_path / "static" / "staticfiles.json").read_text())["paths"]
    for name in (
        "css/app.css",
        "js/charts.js",
        "vendor/plotly.min.js",
        "django_htmx/htmx-2.min.js",
    ):
        assert name in manifest and (tmp_path / "static" / (manifest[name] + ".gz")).exists()


def test_task_time_limits_come_from_the_environment_and_are_checked(tmp_path):
    code = (
        "from sweeper.tasks import run_item; from records.tasks import rescore_app; "
        "print(run_item.soft_time_limit, run_item.time_limit, rescore_app.soft_time_limit)"
    )
    env = {"MEMADMIN_VAR_DIR": str(tmp_path)}
    result = settings_in_subprocess(
        {**env, "MEMADMIN_TASK_SOFT_TIME_LIMIT": "7", "MEMADMIN_TASK_TIME_LIMIT": "9.5"}, code
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["7.0", "9.5", "7.0"]
    for overrides, message in [
        ({"MEMADMIN_TASK_SOFT_TIME_LIMIT": "200"}, "(200) must be below MEMADMIN_TASK_TIME_LIMIT"),
        ({"MEMADMIN_TASK_TIME_LIMIT": "abc"}, "must be a number of seconds above 0, not 'abc'"),
        ({"MEMADMIN_TASK_SOFT_TIME_LIMIT": "0"}, "must be a number of seconds above 0, not '0'"),
    ]:
        result = settings_in_subprocess({**env, **overrides})
        assert result.returncode != 0 and message in result.stderr
