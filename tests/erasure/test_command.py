"""manage.py erase for operators."""

import io
import json

import pytest
from django.core.management import CommandError, call_command

from erasure.models import ErasureRequest
from records.models import MemoryRecord, Policy

from .conftest import populate
from .helpers import USER

pytestmark = pytest.mark.django_db


def erase_cmd(*args, **kwargs):
    out = io.StringIO()
    call_command("erase", *args, stdout=out, **kwargs)
    return out.getvalue()


def test_erase_wait_runs_verifies_and_writes_the_receipt(tmp_path):
    populate("pharmacy", USER, "mk1x9q")
    path = tmp_path / "receipt.json"
    out = erase_cmd(
        "--app",
        "pharmacy",
        "--user",
        USER,
        "--ticket",
        "DSR-3",
        "--reason",
        "Subject request",
        "--wait",
        "--no-input",
        "--receipt",
        str(path),
    )
    req = ErasureRequest.objects.get()
    assert f"Erasure #{req.pk} submitted: pharmacy, ticket DSR-3" in out
    assert "records.MemoryRecord" in out and "Verified" in out
    assert f"Receipt written to {path}" in out
    receipt = json.loads(path.read_text())
    assert receipt["request_id"] == req.pk and USER not in path.read_text()
    assert f"signed with Ed25519 key {receipt['signature']['key_id']}" in out
    out = io.StringIO()
    call_command("verify_receipt", str(path), stdout=out)
    assert out.getvalue().startswith(f"OK: receipt of erasure request {req.pk} is signed")


def test_erase_without_wait_leaves_it_to_a_worker():
    out = erase_cmd(
        "--all-apps",
        "--user",
        USER,
        "--ticket",
        "DSR-4",
        "--reason",
        "Subject request",
        "--no-input",
    )
    assert "A Celery worker will run it" in out
    assert ErasureRequest.objects.get().status == "submitted"


def test_erase_asks_for_the_user_id_again_or_refuses():
    with pytest.raises(CommandError, match="--no-input"):
        erase_cmd("--app", "pharmacy", "--user", USER, "--ticket", "T", "--reason", "R")
    with pytest.raises(CommandError, match="must not contain the user id"):
        erase_cmd(
            "--app",
            "pharmacy",
            "--user",
            USER,
            "--ticket",
            "T",
            "--reason",
            f"for {USER}",
            "--no-input",
        )
    assert not ErasureRequest.objects.exists()


def test_erase_refuses_an_app_memadmin_has_never_seen_instead_of_a_receipt(tmp_path):
    populate("pharmacy", USER, "mk7t2w")
    path = tmp_path / "receipt.json"
    args = f"--app no-such-app --user {USER} --ticket DSR-5 --reason Art.17 --wait --no-input"
    with pytest.raises(CommandError) as refused:
        erase_cmd(*args.split(), "--receipt", str(path))
    assert "No app named 'no-such-app'" in str(refused.value)
    assert "known apps: pharmacy" in str(refused.value)
    assert not ErasureRequest.objects.exists() and not path.exists()
    assert not Policy.objects.filter(app_name="no-such-app").exists()
    assert MemoryRecord.objects.filter(app_name="pharmacy", user_id=USER).exists()


def test_erase_refuses_a_receipt_path_it_could_not_write_before_erasing(tmp_path):
    """The erasure cannot be undone: a bad --receipt is refused first, not a traceback
    after the user's data is gone."""
    populate("pharmacy", USER, "mk3r8d")
    (tmp_path / "a-file").write_text("")
    args = f"--app pharmacy --user {USER} --ticket DSR-6 --reason Art.17 --wait --no-input"
    for path, message in [
        (tmp_path / "a-file" / "r.json", "does not exist"),
        (tmp_path / "missing" / "r.json", "does not exist"),
        (tmp_path, "is a folder"),
    ]:
        with pytest.raises(CommandError, match=f"--receipt .*{message}"):
            erase_cmd(*args.split(), "--receipt", str(path))
    assert not ErasureRequest.objects.exists()
    assert MemoryRecord.objects.filter(app_name="pharmacy", user_id=USER).exists()
