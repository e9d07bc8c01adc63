"""memadmin_client.receipts: the receipt format and offline verification, no Django.

Standard test vectors pin the canonical form (RFC 8785) and the key ids (RFC 7638/8037),
so a verifier written elsewhere with a JOSE or JCS library computes the same bytes.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from memadmin_client import ReceiptNotValid, receipts, verify_receipt

ROOT = Path(__file__).resolve().parents[2]
RECEIPT = {
    "receipt": "memadmin erasure receipt",
    "version": 2,
    "request_id": 7,
    "ticket": "DSR-1001 café",
    "stores": [{"store": "records.MemoryRecord", "deleted": 3, "note": None}],
    "verification": {"passed": True},
}


@pytest.fixture(scope="module")
def key():
    return Ed25519PrivateKey.generate()


@pytest.fixture(scope="module")
def key_set(key):
    return {"keys": [receipts.jwk(key.public_key())]}


def test_canonical_bytes_follow_rfc_8785_member_order_and_escapes():
    # RFC 8785 section 3.2.3: names sort by UTF-16 code units (the emoji before U+FB33).
    names = ["\u20ac", "\r", "\ufb33", "1", "\U0001f600", "\u0080", "\u00f6"]
    out = receipts.canonical_bytes({n: n for n in names})
    order = [k for k, _ in json.loads(out, object_pairs_hook=lambda pairs: pairs)]
    assert order == ["\r", "1", "\u0080", "\u00f6", "\u20ac", "\U0001f600", "\ufb33"]
    assert out.startswith(b'{"\\r":"\\r","1":"1","\xc2\x80":')  # raw UTF-8, no spaces
    assert receipts.canonical_bytes({"b": [True, None, -3], "a": "\x1f"}) == (
        b'{"a":"\\u001f","b":[true,null,-3]}'
    )


@pytest.mark.parametrize("value", [1.5, 2**53, float("nan"), {1: "x"}, b"x", "\udc80"])
def test_values_outside_the_portable_subset_are_refused(value):
    with pytest.raises(ReceiptNotValid):
        receipts.canonical_bytes({"v": value})


def test_key_ids_are_rfc_7638_thumbprints():
    # RFC 8037 appendix A.3: the thumbprint of its example Ed25519 key.
    key = receipts.public_key_from_x("11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo")
    assert receipts.key_id(key) == "kPrK_qmxVWaYVA9wwBF6Iuo3vVzz7TxHCTwXBygrS4k"


def test_a_signed_receipt_verifies_and_its_signature_covers_alg_and_key_id(key, key_set):
    signed = receipts.sign(RECEIPT, key)
    assert set(signed["signature"]) == {"alg", "key_id", "value"}
    assert verify_receipt(json.dumps(signed), key_set).key_id == signed["signature"]["key_id"]
    assert verify_receipt(signed, {receipts.key_id(key.public_key()): key.public_key()})
    covered = receipts.signed_bytes(signed)
    assert signed["signature"]["key_id"].encode() in covered and b'"Ed25519"' in covered
    assert signed["signature"]["value"].encode() not in covered
    assert receipts.sign(signed, key) == signed  # re-signing replaces; Ed25519 is deterministic


def test_refusals_say_why(key, key_set):
    signed = receipts.sign(RECEIPT, key)
    other = Ed25519PrivateKey.generate()

    def refused(receipt, keys=key_set):
        with pytest.raises(ReceiptNotValid) as info:
            verify_receipt(receipt, keys)
        return str(info.value)

    assert "not signed" in refused(RECEIPT)
    assert "not in the key set" in refused(receipts.sign(RECEIPT, other))
    assert "does not match" in refused({**signed, "request_id": 8})
    forged = {**signed, "signature": {**signed["signature"], "alg": "none"}}
    assert "is not Ed25519" in refused(forged)
    extra = {**signed, "signature": {**signed["signature"], "note": "x"}}
    assert "alg, key_id and value" in refused(extra)
    bad_value = {**signed, "signature": {**signed["signature"], "value": "!!"}}
    assert "base64url" in refused(bad_value)
    body = json.dumps(signed)
    assert "same member twice" in refused(body[:-1] + ', "request_id": 8}')
    assert "not JSON" in refused(body[:-1])
    assert "not UTF-8" in refused(b"\xff" + body.encode())
    assert "a receipt is a JSON object" in refused("[1]")
    assert "NaN is not JSON" in refused('{"v": NaN}')
    # A key set that names a key by another key's id is refused, not trusted.
    lying = {"keys": [{**receipts.jwk(other.public_key()), "kid": signed["signature"]["key_id"]}]}
    assert "thumbprint" in refused(signed, lying)
    assert "no Ed25519 key" in refused(signed, {"keys": [{"kty": "RSA"}]})


def test_a_third_party_verifies_offline_without_django(key, key_set, tmp_path):
    """The command line a third party runs, in a process where Django cannot be imported."""
    receipt = tmp_path / "receipt.json"
    keys = tmp_path / "keys.json"
    receipt.write_text(json.dumps(receipts.sign(RECEIPT, key), indent=2, ensure_ascii=False))
    keys.write_text(json.dumps(key_set))
    code = (
        "import runpy, sys\n"
        "sys.modules['django'] = None  # any 'import django...' now fails\n"
        "sys.argv = ['verify', *sys.argv[1:]]\n"
        "runpy.run_module('memadmin_client.receipts', run_name='__main__')\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "DJANGO_SETTINGS_MODULE"}

    def run():
        return subprocess.run(
            [sys.executable, "-c", code, str(receipt), str(keys)],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )

    ok = run()
    assert ok.returncode == 0, ok.stderr
    assert ok.stdout.startswith("OK: receipt 7 is signed by key")
    receipt.write_text(receipt.read_text().replace('"deleted": 3', '"deleted": 4'))
    refused = run()
    assert refused.returncode == 1
    assert "REFUSED: the signature does not match" in refused.stderr
