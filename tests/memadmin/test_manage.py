"""manage.py itself: arguments every command can trust."""

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    "args",
    [
        [b"apikey", b"list", b"--app", b"\xff"],
        [b"erase", b"--app", b"shop", b"--user", b"u", b"--ticket", b"T\xe9", b"--reason", b"r"],
    ],
)
def test_an_argument_that_is_not_utf8_is_refused_before_any_command_runs(args):
    """Python passes such bytes on as lone surrogates, which reached the database as a
    traceback (UnicodeEncodeError) in several commands; now none runs."""
    position = 1 + args.index(next(a for a in args if b"\xff" in a or b"\xe9" in a))
    done = subprocess.run(
        [sys.executable.encode(), b"manage.py", *args], cwd=ROOT, capture_output=True, timeout=60
    )
    assert done.returncode == 1
    stderr = done.stderr.decode("utf-8", "replace")
    assert f"argument {position} is not valid UTF-8" in stderr and "nothing was done" in stderr
    assert "Traceback" not in stderr
