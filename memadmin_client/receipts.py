"""Signed erasure receipts: the format's one definition, and offline verification.

A receipt is a JSON object. Its ``signature`` member says how it was signed::

    "signature": {"alg": "Ed25519", "key_id": "<RFC 7638 thumbprint>", "value": "<base64url>"}

``value`` is the Ed25519 signature of the receipt's canonical bytes with ``value`` itself
left out (so ``alg`` and ``key_id`` are signed too). Canonical bytes are RFC 8785 (JCS):
members sorted by their names' UTF-16 code units, no whitespace, strings as UTF-8 with
only the escapes JSON requires. A receipt holds no floats, so JCS's number rules reduce
to plain integers (refused beyond 2**53, where JSON parsers disagree).

The server publishes its public keys (current and retired) as a JWK set at
``/.well-known/memadmin-receipt-keys.json``; each key id is the key's RFC 7638 thumbprint,
so a key set cannot name a key by another key's id.

Needs only ``cryptography``: no Django, no database, no network.

    python -m memadmin_client.receipts receipt.json memadmin-receipt-keys.json
"""

from __future__ import annotations

import base64
import hashlib
import json
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

ALGORITHM = "Ed25519"
SIGNATURE = "signature"
KEYS_PATH = "/.well-known/memadmin-receipt-keys.json"
CANONICALIZATION = "RFC 8785 (JCS) of the receipt without signature.value"
MAX_SAFE_INTEGER = 2**53 - 1


class ReceiptNotValid(ValueError):
    """The receipt was refused: altered, unsigned, malformed or signed by an unknown key."""


@dataclass(frozen=True)
class VerifiedReceipt:
    key_id: str
    receipt: dict


# --- canonical bytes -------------------------------------------------------------------------


def _jcs_ordered(value: Any) -> Any:
    if isinstance(value, Mapping):
        for key in value:
            if not isinstance(key, str):
                raise ReceiptNotValid(f"member names must be strings, not {key!r}")
        return {k: _jcs_ordered(value[k]) for k in sorted(value, key=_utf16)}
    if isinstance(value, list | tuple):
        return [_jcs_ordered(v) for v in value]
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, int):
        if abs(value) > MAX_SAFE_INTEGER:
            raise ReceiptNotValid(f"integer {value} is beyond 2**53: not portable JSON")
        return value
    raise ReceiptNotValid(f"a receipt holds no {type(value).__name__} values (JCS subset)")


def _utf16(name: str) -> bytes:
    return name.encode("utf-16-be", "surrogatepass")


def canonical_bytes(value: Any) -> bytes:
    """RFC 8785 bytes of a JSON value made of objects, arrays, strings, integers, booleans
    and null (what a receipt holds)."""
    try:
        text = json.dumps(_jcs_ordered(value), separators=(",", ":"), ensure_ascii=False)
        return text.encode("utf-8")
    except UnicodeEncodeError as exc:  # a lone surrogate: not text
        raise ReceiptNotValid("a string is not valid Unicode (a lone surrogate)") from exc


def signed_bytes(receipt: Mapping) -> bytes:
    """What the signature covers: the receipt with ``signature.value`` left out."""
    signature = receipt.get(SIGNATURE)
    if not isinstance(signature, Mapping):
        raise ReceiptNotValid("the receipt is not signed (no signature object)")
    unsigned = dict(receipt)
    unsigned[SIGNATURE] = {k: v for k, v in signature.items() if k != "value"}
    return canonical_bytes(unsigned)


# --- keys ------------------------------------------------------------------------------------


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _unb64url(text: object, what: str) -> bytes:
    if not isinstance(text, str) or not text or "=" in text:
        raise ReceiptNotValid(f"{what} must be unpadded base64url text")
    try:
        data = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    except (ValueError, TypeError) as exc:
        raise ReceiptNotValid(f"{what} is not base64url") from exc
    if _b64url(data) != text:  # one spelling per value: no stray bits, no other alphabet
        raise ReceiptNotValid(f"{what} is not canonical base64url")
    return data


def public_bytes(key: Ed25519PublicKey) -> bytes:
    return key.public_bytes(Encoding.Raw, PublicFormat.Raw)


def key_id(key: Ed25519PublicKey) -> str:
    """RFC 7638 JWK thumbprint (SHA-256, base64url): any JOSE library computes the same."""
    members = {"crv": "Ed25519", "kty": "OKP", "x": _b64url(public_bytes(key))}
    return _b64url(hashlib.sha256(canonical_bytes(members)).digest())


def jwk(key: Ed25519PublicKey, **extra: str) -> dict:
    """The public key as an RFC 8037 JWK with its key id."""
    return {
        "kty": "OKP",
        "crv": "Ed25519",
        "x": _b64url(public_bytes(key)),
        "kid": key_id(key),
        "alg": "EdDSA",
        "use": "sig",
        **extra,
    }


def load_keys(key_set: Mapping | str | bytes) -> dict[str, Ed25519PublicKey]:
    """{key id: public key} from the published JWK set (parsed or its JSON text)."""
    if isinstance(key_set, str | bytes):
        key_set = _parse(key_set, "the key set")
    entries = key_set.get("keys") if isinstance(key_set, Mapping) else None
    if not isinstance(entries, list):
        raise ReceiptNotValid('the key set must be an object with a "keys" list')
    keys: dict[str, Ed25519PublicKey] = {}
    for entry in entries:
        if not isinstance(entry, Mapping) or entry.get("kty") != "OKP":
            continue  # keys of other kinds are not ours to judge
        if entry.get("crv") != "Ed25519":
            continue
        key = public_key_from_x(entry.get("x"))
        if entry.get("kid") != key_id(key):
            raise ReceiptNotValid(
                f"key set entry {entry.get('kid')!r} is not its key's RFC 7638 thumbprint"
            )
        keys[key_id(key)] = key
    if not keys:
        raise ReceiptNotValid("the key set holds no Ed25519 key")
    return keys


def public_key_from_x(text: object) -> Ed25519PublicKey:
    """The public key from its JWK ``x`` (base64url of the 32 raw bytes)."""
    raw = _unb64url(text, "a key's x")
    if len(raw) != 32:
        raise ReceiptNotValid(f"a key's x must be 32 bytes, not {len(raw)}")
    return Ed25519PublicKey.from_public_bytes(raw)


# --- signing and verifying -------------------------------------------------------------------


def sign(receipt: Mapping, private_key: Ed25519PrivateKey) -> dict:
    """A copy of ``receipt`` with its ``signature`` (any earlier one is replaced)."""
    signed = {k: v for k, v in receipt.items() if k != SIGNATURE}
    signed[SIGNATURE] = {"alg": ALGORITHM, "key_id": key_id(private_key.public_key())}
    signed[SIGNATURE]["value"] = _b64url(private_key.sign(signed_bytes(signed)))
    return signed


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict:
    names = [name for name, _ in pairs]
    if len(names) != len(set(names)):
        # Parsers disagree on which copy wins: a reader could be shown the other one.
        raise ReceiptNotValid("a JSON object names the same member twice")
    return dict(pairs)


def _no_constant(name: str) -> None:
    raise ReceiptNotValid(f"{name} is not JSON")


def _parse(data: str | bytes, what: str) -> Any:
    try:
        text = data.decode("utf-8") if isinstance(data, bytes) else data
        return json.loads(text, object_pairs_hook=_no_duplicates, parse_constant=_no_constant)
    except UnicodeDecodeError as exc:
        raise ReceiptNotValid(f"{what} is not UTF-8") from exc
    except json.JSONDecodeError as exc:
        raise ReceiptNotValid(f"{what} is not JSON: {exc}") from exc
    except RecursionError as exc:
        raise ReceiptNotValid(f"{what} is nested too deeply") from exc


def parse_receipt(data: str | bytes) -> dict:
    """A receipt file's JSON object; refused if it is not strictly one."""
    receipt = _parse(data, "the receipt")
    if not isinstance(receipt, dict):
        raise ReceiptNotValid("a receipt is a JSON object")
    return receipt


def verify_receipt(
    receipt: Mapping | str | bytes,
    keys: Mapping[str, Ed25519PublicKey] | Mapping | str | bytes,
) -> VerifiedReceipt:
    """Check a receipt's signature offline, or raise ``ReceiptNotValid`` saying why.

    ``receipt``: the receipt file's bytes (or text, or parsed). ``keys``: the published
    key set (parsed, or its JSON text) or ``{key id: Ed25519PublicKey}``.
    """
    if isinstance(receipt, str | bytes):
        receipt = parse_receipt(receipt)
    elif not isinstance(receipt, Mapping):
        raise ReceiptNotValid("a receipt is a JSON object")
    if not _is_key_map(keys):
        keys = load_keys(keys)
    signature = receipt.get(SIGNATURE)
    if signature is None:
        raise ReceiptNotValid(
            "the receipt is not signed: receipts made before signing carry only a SHA-256, "
            "which the issuing server checks (manage.py verify_receipt)"
        )
    if not isinstance(signature, Mapping) or set(signature) != {"alg", "key_id", "value"}:
        raise ReceiptNotValid("signature must be an object of alg, key_id and value")
    if signature["alg"] != ALGORITHM:
        raise ReceiptNotValid(f"signature algorithm {signature['alg']!r} is not {ALGORITHM}")
    key = keys.get(signature["key_id"]) if isinstance(signature["key_id"], str) else None
    if key is None:
        raise ReceiptNotValid(f"signed by key {signature['key_id']!r}, which is not in the key set")
    value = _unb64url(signature["value"], "signature value")
    try:
        key.verify(value, signed_bytes(receipt))
    except InvalidSignature as exc:
        raise ReceiptNotValid("the signature does not match: the receipt was altered") from exc
    return VerifiedReceipt(key_id=signature["key_id"], receipt=dict(receipt))


def _is_key_map(keys: object) -> bool:
    return (
        isinstance(keys, Mapping)
        and bool(keys)
        and all(isinstance(k, Ed25519PublicKey) for k in keys.values())
    )


def main(argv: Iterable[str] | None = None) -> int:
    """python -m memadmin_client.receipts RECEIPT.json KEYS.json"""
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) != 2:
        print(main.__doc__, file=sys.stderr)
        return 2
    receipt_path, keys_path = args
    try:
        with open(receipt_path, "rb") as r, open(keys_path, "rb") as k:
            verified = verify_receipt(r.read(), k.read())
    except (OSError, ReceiptNotValid) as exc:
        print(f"REFUSED: {exc}", file=sys.stderr)
        return 1
    print(f"OK: receipt {verified.receipt.get('request_id')} is signed by key {verified.key_id}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
