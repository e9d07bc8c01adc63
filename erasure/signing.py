"""The server's side of signed receipts: which key signs, which keys are published.

The format and the signature rule live in ``memadmin_client.receipts`` (no Django), so the
server and a third party's verifier share one definition. Here: the keys.

- The current key signs. It comes from ``RECEIPT_SIGNING_KEY`` (PEM, or its one-line
  base64 body) or the PEM file ``RECEIPT_SIGNING_KEY_FILE``. With DEBUG on and neither
  given (the embedded default), it is generated into ``var/`` on first use (mode 0600);
  with DEBUG off it must be given, as SECRET_KEY must.
- Retired keys stay published so old receipts still verify: the public keys listed in
  ``RECEIPT_RETIRED_KEYS`` and those ``rotate`` wrote beside the key file.

Key files are read on each use (an erasure signs once), so a rotation reaches the web
and worker processes without a restart.
"""

from __future__ import annotations

import base64
import binascii
import os
import tempfile
from pathlib import Path

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from cryptography.hazmat.primitives.serialization import (
    Encoding,
    NoEncryption,
    PrivateFormat,
    load_der_private_key,
    load_pem_private_key,
)
from django.conf import settings
from django.core import checks
from django.core.exceptions import ImproperlyConfigured

from memadmin_client import receipts
from memadmin_client.receipts import ReceiptNotValid

GENERATE_HINT = (
    "Generate one with: python manage.py receipt_keys generate receipt-signing-key.pem "
    "(or: openssl genpkey -algorithm ed25519 -out receipt-signing-key.pem)."
)


def _env_key() -> str:
    return getattr(settings, "RECEIPT_SIGNING_KEY", "")


def key_file() -> Path | None:
    """The PEM file of the current key, if the key comes from a file."""
    path = getattr(settings, "RECEIPT_SIGNING_KEY_FILE", "")
    return Path(path) if path and not _env_key() else None


def retired_file() -> Path | None:
    """Where ``rotate`` keeps the public keys it retired: beside the key file."""
    path = key_file()
    return path.with_name(path.name + ".retired") if path else None


def parse_private_key(text: str | bytes, source: str) -> Ed25519PrivateKey:
    data = text.encode() if isinstance(text, str) else text
    try:
        if b"-----BEGIN" in data:
            key = load_pem_private_key(data, password=None)
        else:
            key = load_der_private_key(base64.b64decode(data.strip(), validate=True), None)
    except (ValueError, TypeError, binascii.Error) as exc:
        raise ImproperlyConfigured(
            f"{source} is not an unencrypted Ed25519 private key (PKCS#8 PEM, or its "
            f"one-line base64 body): {exc}. {GENERATE_HINT}"
        ) from exc
    if not isinstance(key, Ed25519PrivateKey):
        raise ImproperlyConfigured(f"{source} holds a {type(key).__name__}, not Ed25519.")
    return key


def pem(key: Ed25519PrivateKey) -> bytes:
    return key.private_bytes(Encoding.PEM, PrivateFormat.PKCS8, NoEncryption())


def write_new_key(path: Path, *, replace: bool = False) -> Ed25519PrivateKey:
    """A new key in ``path`` (mode 0600), written whole: a reader sees the old file or the
    new one, and without ``replace`` a racing writer's key wins and is returned."""
    key = Ed25519PrivateKey.generate()
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".receipt-key-")  # mode 0600
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(pem(key))
            f.flush()
            os.fsync(f.fileno())
        if replace:
            os.replace(tmp, path)
        else:
            try:
                os.link(tmp, path)  # fails if the file exists: never overwrite a key
            except FileExistsError:
                return parse_private_key(path.read_bytes(), str(path))
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return key


def current_key() -> Ed25519PrivateKey:
    """The key new receipts are signed with."""
    if _env_key():
        return parse_private_key(_env_key(), "MEMADMIN_RECEIPT_SIGNING_KEY")
    path = key_file()
    if path is None:
        raise ImproperlyConfigured(
            "MEMADMIN_RECEIPT_SIGNING_KEY or MEMADMIN_RECEIPT_SIGNING_KEY_FILE must be set "
            "when DEBUG is off: erasure receipts are signed with it (docs/receipts.md). "
            + GENERATE_HINT
        )
    if path.exists():
        return parse_private_key(path.read_bytes(), str(path))
    if not settings.DEBUG:
        raise ImproperlyConfigured(
            f"MEMADMIN_RECEIPT_SIGNING_KEY_FILE names {path}, which does not exist. "
            + GENERATE_HINT
        )
    return write_new_key(path)  # the embedded default: generated on first use


def problem() -> str | None:
    """Why no receipt could be signed now, or None (a generated key counts as fine)."""
    try:
        if _env_key() or (key_file() and key_file().exists()) or not settings.DEBUG:
            current_key()
        retired_keys()
    except (ImproperlyConfigured, OSError) as exc:
        return str(exc)
    return None


def retired_keys() -> list[Ed25519PublicKey]:
    """Public keys no longer signing but still published, oldest first."""
    texts = list(getattr(settings, "RECEIPT_RETIRED_KEYS", []))
    path = retired_file()
    if path is not None and path.exists():
        texts += [line.strip() for line in path.read_text().splitlines() if line.strip()]
    keys = []
    for text in texts:
        try:
            keys.append(receipts.public_key_from_x(text))
        except ReceiptNotValid as exc:
            raise ImproperlyConfigured(
                f"MEMADMIN_RECEIPT_RETIRED_KEYS: {text!r}: {exc} (list each key's JWK x, "
                "as /.well-known/memadmin-receipt-keys.json shows it)."
            ) from exc
    return keys


def verifying_keys() -> dict[str, Ed25519PublicKey]:
    """{key id: public key}: the current key and every retired one."""
    current = current_key().public_key()
    keys = {receipts.key_id(k): k for k in retired_keys()}
    keys[receipts.key_id(current)] = current
    return keys


def published_keys() -> dict:
    """The JWK set served at ``receipts.KEYS_PATH``."""
    current = current_key().public_key()
    current_id = receipts.key_id(current)
    retired = {receipts.key_id(k): k for k in retired_keys()}
    retired.pop(current_id, None)
    return {
        "keys": [receipts.jwk(current, status="current")]
        + [receipts.jwk(k, status="retired") for k in retired.values()],
        "current_key_id": current_id,
        "signature_algorithm": receipts.ALGORITHM,
        "canonicalization": receipts.CANONICALIZATION,
    }


def sign_receipt(receipt: dict) -> dict:
    return receipts.sign(receipt, current_key())


def rotate() -> tuple[str | None, str]:
    """A new current key in the key file; the old one's public key stays published.

    Returns (retired key id or None, new key id). Only for a key kept in a file: a key
    given in the environment is rotated by changing the environment (docs/receipts.md).
    """
    path = key_file()
    if path is None:
        raise ImproperlyConfigured(
            "The signing key is given in MEMADMIN_RECEIPT_SIGNING_KEY (or not at all), so "
            "rotate it there: generate a new key, add the current key's x to "
            "MEMADMIN_RECEIPT_RETIRED_KEYS, set the new key and restart web and workers."
        )
    old = parse_private_key(path.read_bytes(), str(path)).public_key() if path.exists() else None
    if old is not None:
        # Published before the new key signs anything: every receipt stays verifiable.
        with retired_file().open("a") as f:
            f.write(receipts.jwk(old)["x"] + "\n")
    new = write_new_key(path, replace=True)
    return (receipts.key_id(old) if old else None), receipts.key_id(new.public_key())


def check_signing_key(app_configs=None, **kwargs) -> list[checks.CheckMessage]:
    """A system check, so a deployment without a key stops at `migrate`/`runserver`
    instead of failing its first erasure."""
    message = problem()
    return [checks.Error(message, id="erasure.E001")] if message else []
