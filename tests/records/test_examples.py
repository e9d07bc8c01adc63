"""The runnable in-process example (docs/adk-services.md) runs offline, on its own database."""

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_inprocess_example_remembers_across_sessions(tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in {"DATABASE_URL", "GOOGLE_API_KEY"}}
    env.update(MEMADMIN_VAR_DIR=str(tmp_path), DEBUG="1")
    result = subprocess.run(
        [sys.executable, "examples/inprocess_agent.py"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert "agent: I remember: user: Hi! I am allergic to penicillin." in result.stdout
