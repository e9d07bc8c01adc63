"""Signed receipts on the server: keys (generated, required, rotated), the published key
set, `manage.py verify_receipt`, and every byte of a real receipt guarded."""

import base64
import hashlib
import io
import json
import stat

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.asymmetric.rsa import generate_private_key
from cryptography.hazmat.primitives.serialization import Encoding, NoEncryption, PrivateFormat
from django.core.exceptions import ImproperlyConfigured
from django.core.management import CommandError, call_command
from django.core.management.base import SystemCheckError
from django.test import Client

from erasure import jobs, signing
from memadmin_client import receipts
from memadmin_client.receipts import ReceiptNotValid, verify_receipt

from .conftest import populate
from .helpers import USER, erase

pytestmark = pytest.mark.django_db

KEYS_URL = "/.well-known/memadmin-receipt-keys.json"


@pytest.fixture
def key_file(settings, tmp_path):
    """The embedded default's arrangement, in a folder of this test's own."""
    path = tmp_path / "keys" / "receipt-signing-key.pem"
    settings.DEBUG = True
    settings.RECEIPT_SIGNING_KEY = ""
    settings.RECEIPT_SIGNING_KEY_FILE = str(path)
    settings.RECEIPT_RETIRED_KEYS = []
    return path


def download(req) -> bytes:
    client = Client()
    client.force_login(_compliance())
    response = client.post(f"/erasure/{req.pk}/receipt.json")
    assert response.status_code == 200
    return response.content


def _compliance():
    from django.contrib.auth import get_user_model

    from memadmin.accounts import ensure_role_groups

    user, _ = get_user_model().objects.get_or_create(username="carol")
    user.groups.add(ensure_role_groups()["compliance"])
    return user


def published() -> dict:
    response = Client().get(KEYS_URL)  # anonymous: the key set is public on purpose
    assert response.status_code == 200
    assert response["Content-Type"] == "application/json"
    return response.json()


def verify_cmd(*args) -> str:
    out = io.StringIO()
    call_command("verify_receipt", *args, stdout=out)
    return out.getvalue()


# --- a real receipt, verified offline -------------------------------------------------------


def test_a_verified_erasure_has_a_receipt_that_verifies_against_the_published_keys(key_file):
    populate("pharmacy", USER, "mk1x9q")
    req = erase("pharmacy")
    body = download(req)
    keys = published()

    verified = verify_receipt(body, keys)
    assert verified.key_id == keys["current_key_id"] == req.receipt["signature"]["key_id"]
    assert verified.receipt["request_id"] == req.pk and verified.receipt["version"] == 2
    assert [k["status"] for k in keys["keys"]] == ["current"]
    assert hashlib.sha256(body).hexdigest() == req.receipt_sha256  # the audit's digest too
    assert USER not in json.dumps(keys)


def test_every_byte_of_a_real_receipt_is_guarded(key_file):
    """A flipped bit in any byte (every field, the signature, the key id, the layout):
    the receipt no longer parses or no longer verifies. Each byte gets one flip, of bit
    i mod 8, so every bit position is tried throughout the file."""
    populate("pharmacy", USER, "mk1x9q")
    body = download(erase("pharmacy"))
    keys = signing.verifying_keys()
    verify_receipt(body, keys)
    text = body.decode()
    for field in ('"request_id"', '"stores"', '"not_covered"', '"key_id"', '"value"', '"alg"'):
        assert field in text  # the flips below cross every field of the receipt
    accepted = []
    for i in range(len(body)):
        tampered = bytearray(body)
        tampered[i] ^= 1 << (i % 8)
        try:
            verify_receipt(bytes(tampered), keys)
        except ReceiptNotValid:
            continue
        accepted.append(i)
    assert accepted == []
    assert len(body) > 2000


def test_changing_any_value_of_a_real_receipt_is_refused(key_file):
    """The same by meaning: each leaf value of the parsed receipt, changed alone."""
    req = erase("pharmacy")
    keys = signing.verifying_keys()

    def leaves(value, path=()):
        if isinstance(value, dict):
            for k, v in value.items():
                yield from leaves(v, (*path, k))
        elif isinstance(value, list):
            for i, v in enumerate(value):
                yield from leaves(v, (*path, i))
        else:
            yield path

    paths = list(leaves(req.receipt))
    assert len(paths) > 40
    for path in paths:
        tampered = json.loads(json.dumps(req.receipt))
        parent = tampered
        for step in path[:-1]:
            parent = parent[step]
        old = parent[path[-1]]
        parent[path[-1]] = (old + "x") if isinstance(old, str) else ("1" if old is None else None)
        with pytest.raises(ReceiptNotValid):
            verify_receipt(tampered, keys)


# --- keys: generated on the embedded default, required in production ------------------------


def test_the_embedded_default_generates_a_private_key_file_on_first_use(key_file):
    assert not key_file.exists()
    assert signing.problem() is None  # the system check passes before any key exists
    key = signing.current_key()
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
    assert receipts.key_id(signing.current_key().public_key()) == receipts.key_id(key.public_key())
    assert published()["current_key_id"] == receipts.key_id(key.public_key())


@pytest.mark.parametrize("file_setting", ["", "missing"])
def test_with_debug_off_a_key_must_be_given(settings, tmp_path, file_setting):
    settings.DEBUG = False
    settings.RECEIPT_SIGNING_KEY = ""
    settings.RECEIPT_SIGNING_KEY_FILE = str(tmp_path / "none.pem") if file_setting else ""
    with pytest.raises(ImproperlyConfigured, match="Generate one with: python manage.py"):
        signing.current_key()
    assert not (tmp_path / "none.pem").exists()  # never generated in production
    with pytest.raises(SystemCheckError, match="erasure.E001"):
        call_command("check", stdout=io.StringIO(), stderr=io.StringIO())
    req = erase("pharmacy")  # the erasure itself is done; the request says why no receipt
    assert req.status == "failed" and "MEMADMIN_RECEIPT_SIGNING_KEY" in req.failure_reason
    assert req.receipt is None


def test_a_key_given_in_the_environment_as_pem_or_its_one_line_body(settings):
    key = Ed25519PrivateKey.generate()
    pem = key.private_bytes(Encoding.PEM, PrivateFormat.PKCS8, NoEncryption()).decode()
    one_line = pem.splitlines()[1]
    settings.DEBUG = False
    settings.RECEIPT_SIGNING_KEY_FILE = ""
    expected = receipts.key_id(key.public_key())
    for text in (pem, one_line):
        settings.RECEIPT_SIGNING_KEY = text
        assert receipts.key_id(signing.current_key().public_key()) == expected
    assert erase("pharmacy").receipt["signature"]["key_id"] == expected


def test_a_key_that_is_not_an_ed25519_private_key_is_refused_clearly(settings):
    rsa = generate_private_key(public_exponent=65537, key_size=2048)
    settings.RECEIPT_SIGNING_KEY_FILE = ""
    for text, message in (
        ("not a key", "not an unencrypted Ed25519 private key"),
        (base64.b64encode(b"\x00" * 48).decode(), "not an unencrypted Ed25519 private key"),
        (
            rsa.private_bytes(Encoding.PEM, PrivateFormat.PKCS8, NoEncryption()).decode(),
            "not Ed25519",
        ),
    ):
        settings.RECEIPT_SIGNING_KEY = text
        with pytest.raises(ImproperlyConfigured, match=message):
            signing.current_key()
        assert message in signing.problem()


def test_a_bad_retired_key_is_refused_clearly(key_file, settings):
    settings.RECEIPT_RETIRED_KEYS = ["not-a-key"]
    with pytest.raises(ImproperlyConfigured, match="MEMADMIN_RECEIPT_RETIRED_KEYS"):
        signing.published_keys()


# --- rotation ----------------------------------------------------------------------------------


def test_rotation_signs_new_receipts_with_the_new_key_and_keeps_the_old_one_published(key_file):
    old_req = erase("pharmacy")
    old_body = download(old_req)
    old_id = old_req.receipt["signature"]["key_id"]

    out = io.StringIO()
    call_command("receipt_keys", "rotate", stdout=out)
    new_id = receipts.key_id(signing.current_key().public_key())
    assert new_id != old_id
    assert f"Retired key {old_id}" in out.getvalue() and new_id in out.getvalue()
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600

    new_req = erase("pharmacy", user="cust-second")
    assert new_req.receipt["signature"]["key_id"] == new_id
    keys = published()
    assert keys["current_key_id"] == new_id
    assert [(k["kid"], k["status"]) for k in keys["keys"]] == [
        (new_id, "current"),
        (old_id, "retired"),
    ]
    assert verify_receipt(old_body, keys).key_id == old_id
    assert verify_receipt(download(new_req), keys).key_id == new_id
    only_new = {"keys": [k for k in keys["keys"] if k["kid"] == new_id]}
    with pytest.raises(ReceiptNotValid, match="not in the key set"):
        verify_receipt(old_body, only_new)


def test_a_key_given_in_the_environment_is_rotated_there(settings, key_file):
    signing.current_key()
    old = signing.current_key().public_key()
    settings.RECEIPT_SIGNING_KEY = (
        Ed25519PrivateKey.generate()
        .private_bytes(Encoding.PEM, PrivateFormat.PKCS8, NoEncryption())
        .decode()
    )
    with pytest.raises(CommandError, match="rotate it there"):
        call_command("receipt_keys", "rotate", stdout=io.StringIO())
    settings.RECEIPT_RETIRED_KEYS = [receipts.jwk(old)["x"]]
    statuses = {k["kid"]: k["status"] for k in published()["keys"]}
    assert statuses[receipts.key_id(old)] == "retired"


def test_generate_writes_a_private_key_once(tmp_path):
    path = tmp_path / "new.pem"
    out = io.StringIO()
    call_command("receipt_keys", "generate", str(path), stdout=out)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    key = signing.parse_private_key(path.read_bytes(), "file")
    assert receipts.key_id(key.public_key()) in out.getvalue()
    with pytest.raises(CommandError, match="never overwritten"):
        call_command("receipt_keys", "generate", str(path), stdout=io.StringIO())
    assert signing.parse_private_key(path.read_bytes(), "file").private_bytes_raw() == (
        key.private_bytes_raw()
    )


# --- manage.py verify_receipt --------------------------------------------------------------


def test_verify_receipt_accepts_a_signed_receipt_and_refuses_a_tampered_one(key_file, tmp_path):
    req = erase("pharmacy")
    path = tmp_path / "receipt.json"
    path.write_bytes(download(req))
    out = verify_cmd(str(path))
    assert out.startswith(f"OK: receipt of erasure request {req.pk} is signed")

    saved = tmp_path / "keys.json"
    saved.write_text(json.dumps(published()))
    assert verify_cmd(str(path), "--keys", str(saved)).startswith("OK:")

    path.write_bytes(path.read_bytes().replace(b'"attempts": 1', b'"attempts": 2'))
    with pytest.raises(CommandError, match="REFUSED: the signature does not match"):
        verify_cmd(str(path))
    with pytest.raises(CommandError, match="Cannot read"):
        verify_cmd(str(tmp_path / "absent.json"))


def test_a_receipt_from_before_signing_is_labelled_unsigned_and_checked_by_its_digest(
    key_file, tmp_path
):
    """Version 1 receipts stay as they were: only the server's recorded SHA-256 vouches."""
    req = erase("pharmacy")
    legacy = {k: v for k, v in req.receipt.items() if k != "signature"}
    legacy["version"] = 1
    req.receipt = legacy
    req.receipt_sha256 = hashlib.sha256(jobs.receipt_bytes(legacy)).hexdigest()
    req.save()

    path = tmp_path / "legacy.json"
    body = download(req)
    path.write_bytes(body)
    out = verify_cmd(str(path))
    assert out.startswith("UNSIGNED: made before receipts were signed")
    assert f"erasure request {req.pk}" in out
    with pytest.raises(ReceiptNotValid, match="not signed"):
        verify_receipt(body, published())  # no third party can check it

    path.write_bytes(body.replace(b'"attempts": 1', b'"attempts": 2'))
    with pytest.raises(CommandError, match="REFUSED: the receipt is unsigned"):
        verify_cmd(str(path))

    client = Client()
    client.force_login(_compliance())
    page = client.get(f"/erasure/{req.pk}/").content.decode()
    assert "Unsigned: made before receipts were signed" in page


def test_the_detail_page_names_the_signing_key(key_file):
    req = erase("pharmacy")
    client = Client()
    client.force_login(_compliance())
    page = client.get(f"/erasure/{req.pk}/").content.decode()
    assert f"Signed with Ed25519 key <code>{req.receipt['signature']['key_id']}</code>" in page
    assert f'href="{KEYS_URL}"' in page


def test_the_key_set_is_served_to_anyone_by_get_only(key_file):
    assert Client().post(KEYS_URL).status_code == 405
    keys = published()
    assert set(keys) == {"keys", "current_key_id", "signature_algorithm", "canonicalization"}
    assert "d" not in keys["keys"][0]  # the private part never leaves


def test_verify_receipt_on_a_server_without_a_key_takes_a_saved_key_set(settings, tmp_path):
    key = Ed25519PrivateKey.generate()
    path, saved = tmp_path / "receipt.json", tmp_path / "keys.json"
    path.write_text(json.dumps(receipts.sign({"receipt": "r", "request_id": 9}, key)))
    saved.write_text(json.dumps({"keys": [receipts.jwk(key.public_key())]}))
    settings.DEBUG = False
    settings.RECEIPT_SIGNING_KEY = settings.RECEIPT_SIGNING_KEY_FILE = ""
    assert verify_cmd(str(path), "--keys", str(saved)).startswith(
        "OK: receipt of erasure request 9"
    )
    with pytest.raises(CommandError, match="Or pass --keys"):
        verify_cmd(str(path))
