"""The Makefile's virtualenv: a venv left on a too-old Python is rebuilt, not reused.

Each test runs the real Makefile against a venv folder of its own (never the project's
.venv). The old venv's interpreter reports Python 3.11 (what `PYTHON=python3.11 make
run` leaves behind); the new one is this interpreter, creating its venv without pip,
the one slow step (a download-free ensurepip) that none of these tests needs.
"""

import os
import stat
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# An interpreter that is Python 3.11 as far as anyone asking can tell.
AS_311 = "import sys; sys.version_info = (3, 11, 2, 'final', 0); exec(sys.argv[1])"
PYTHON_311 = f"""#!/bin/sh
if [ "$1" = "--version" ]; then echo "Python 3.11.2"; exit 0; fi
if [ "$1" = "-c" ]; then exec {sys.executable} -c "{AS_311}" "$2"; fi
exit 2
"""
# This interpreter; `-m venv DIR` makes the venv without pip.
PYTHON_NEW = f"""#!/bin/sh
if [ "$1" = "-m" ] && [ "$2" = "venv" ]; then exec {sys.executable} -m venv --without-pip "$3"; fi
exec {sys.executable} "$@"
"""


def script(path: Path, text: str) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return str(path)


def old_venv(venv: Path) -> Path:
    """A venv whose interpreter is Python 3.11, as a failed `PYTHON=python3.11 make run`
    leaves it (no install stamp)."""
    script(venv / "bin" / "python", PYTHON_311)
    (venv / "pyvenv.cfg").write_text("home = /usr/bin\nversion = 3.11.2\n")
    return venv


def make(*args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in {"MAKEFLAGS", "MFLAGS", "MAKELEVEL"}}
    return subprocess.run(
        ["make", "--no-print-directory", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def version_of(venv: Path) -> tuple[int, int]:
    out = subprocess.run(
        [venv / "bin" / "python", "-c", "import sys; print(*sys.version_info[:2])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return tuple(int(part) for part in out.split())


def test_a_venv_left_on_python_3_11_is_rebuilt_with_the_new_python(tmp_path):
    venv = old_venv(tmp_path / "venv")
    new_python = script(tmp_path / "python-new", PYTHON_NEW)
    result = make("venv", f"VENV={venv}", f"PYTHON={new_python}")
    assert result.returncode == 0, result.stderr
    version = ".".join(map(str, sys.version_info[:3]))
    assert (
        f"{venv} has Python 3.11.2, too old for memadmin (3.12 or newer): "
        f"rebuilding it with Python {version}."
    ) in result.stdout
    assert f"Creating {venv} with Python {version}" in result.stdout
    assert version_of(venv) == sys.version_info[:2]
    # and a second run finds it good and leaves it alone
    again = make("venv", f"VENV={venv}", f"PYTHON={new_python}")
    assert again.returncode == 0 and again.stdout == ""


def test_setup_checks_the_venv_before_installing_into_it(tmp_path):
    venv = old_venv(tmp_path / "venv")
    new_python = script(tmp_path / "python-new", PYTHON_NEW)
    plan = make("-n", "setup", f"VENV={venv}", f"PYTHON={new_python}").stdout  # prints only
    assert plan.index("too old for memadmin") < plan.index("pip install")
    assert version_of(venv) == (3, 11)  # -n changed nothing


def test_a_too_old_python_asked_for_is_refused_before_any_venv_is_made(tmp_path):
    python_311 = script(tmp_path / "python3.11", PYTHON_311)
    venv = tmp_path / "venv"
    result = make("venv", f"VENV={venv}", f"PYTHON={python_311}")
    assert result.returncode != 0
    assert (
        f"memadmin needs Python 3.12 or newer (Django 6); PYTHON={python_311} is Python 3.11.2."
    ) in result.stderr
    assert not venv.exists()


def test_a_folder_that_is_not_a_venv_is_never_deleted(tmp_path):
    folder = tmp_path / "not-a-venv"
    (folder / "keep.txt").parent.mkdir()
    (folder / "keep.txt").write_text("mine")
    new_python = script(tmp_path / "python-new", PYTHON_NEW)
    result = make("venv", f"VENV={folder}", f"PYTHON={new_python}")
    assert result.returncode != 0
    assert "exists but is not a virtualenv" in result.stderr
    assert (folder / "keep.txt").read_text() == "mine"
