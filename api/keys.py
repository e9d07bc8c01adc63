"""Creating, revoking and checking API keys: the one way in for the page, the command
and the API's authentication.

A token is ``mma_<prefix>_<secret>``: the prefix (12 hex characters) is stored in
clear to tell keys apart; the secret is 32 random bytes. Only the SHA-256 of the whole
token is stored. A fast hash is right here: the token has 256 bits of entropy, so
there is nothing to brute-force, and checking a request costs one indexed lookup.
"""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db import IntegrityError, transaction
from django.db.models import Q

from records.ids import decimal_id, validate_app_name

from .models import ApiKey

TOKEN_SCHEME = "mma"  # noqa: S105 - the public start of every token, not a secret
PREFIX_BYTES = 6
SECRET_BYTES = 32
NAME_MAX = ApiKey._meta.get_field("name").max_length
# Longer than any token we issue; anything longer is refused before hashing.
TOKEN_MAX = 128
# last_used_at is written at most this often per key, not on every request.
LAST_USED_RESOLUTION = timedelta(minutes=1)


class InvalidApiKey(Exception):
    """The token matches no key."""


class RevokedApiKey(InvalidApiKey):
    def __init__(self, key: ApiKey) -> None:
        self.key = key
        super().__init__(
            f"API key {key.prefix}… was revoked on {key.revoked_at:%Y-%m-%d %H:%M} UTC; "
            "ask ops for a new one."
        )


class UnknownApiKey(LookupError):
    """No key has that prefix or id (for revoking)."""


@dataclass(frozen=True)
class NewKey:
    key: ApiKey
    token: str  # shown once; never stored


def hash_token(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).hexdigest()


def check_app_name(app_name: object) -> str:
    validate_app_name(app_name)
    if app_name != app_name.strip() or "/" in app_name:
        raise ValueError(
            "app_name must not contain '/' or surrounding spaces: it is a segment of API paths."
        )
    return app_name


def create_key(app_name: str, name: str, now: datetime, *, created_by=None) -> NewKey:
    """A new key for ``app_name``. The returned token is the only copy there will be."""
    check_app_name(app_name)
    if not isinstance(name, str) or not name.strip():
        raise ValueError("name must say what the key is for, e.g. 'support agent (prod)'.")
    name = name.strip()
    if len(name) > NAME_MAX:
        raise ValueError(f"name is {len(name)} characters long; at most {NAME_MAX} are allowed.")
    for _ in range(5):  # a prefix collision is rare; try again with a fresh one
        prefix = secrets.token_hex(PREFIX_BYTES)
        token = f"{TOKEN_SCHEME}_{prefix}_{secrets.token_urlsafe(SECRET_BYTES)}"
        try:
            with transaction.atomic():
                key = ApiKey.objects.create(
                    app_name=app_name,
                    name=name,
                    prefix=prefix,
                    key_hash=hash_token(token),
                    created_by=created_by,
                    created_at=now,
                )
        except IntegrityError:
            continue
        return NewKey(key=key, token=token)
    raise RuntimeError("could not find an unused key prefix")  # pragma: no cover


def find_key(ident: str | int) -> ApiKey:
    """The key with this prefix (or the token's prefix, or a numeric id)."""
    ident = str(ident).strip()
    prefix = ident.removeprefix(f"{TOKEN_SCHEME}_").split("_", 1)[0].rstrip("…")
    query = Q(prefix=prefix)
    pk = decimal_id(ident)
    if pk is not None:
        query |= Q(pk=pk)
    key = ApiKey.objects.filter(query).first()
    if key is None:
        raise UnknownApiKey(f"No API key has the prefix or id {ident!r}.")
    return key


def revoke_key(ident: str | int, now: datetime, *, revoked_by=None) -> ApiKey:
    """Revoke a key for good. Revoking a revoked key changes nothing."""
    key = find_key(ident)
    ApiKey.objects.filter(pk=key.pk, revoked_at__isnull=True).update(
        revoked_at=now, revoked_by=revoked_by
    )
    key.refresh_from_db()
    return key


def list_keys(app_name: str | None = None):
    keys = ApiKey.objects.select_related("created_by", "revoked_by")
    if app_name:
        keys = keys.filter(app_name=app_name)
    return keys.order_by("app_name", "-created_at")


def authenticate(token: str, now: datetime) -> ApiKey:
    """The active key for ``token``; raises InvalidApiKey / RevokedApiKey."""
    if not token or len(token) > TOKEN_MAX or not token.startswith(f"{TOKEN_SCHEME}_"):
        raise InvalidApiKey("This is not a memadmin API key.")
    key = ApiKey.objects.filter(key_hash=hash_token(token)).first()
    if key is None:
        raise InvalidApiKey("Unknown API key.")
    if key.revoked_at is not None:
        raise RevokedApiKey(key)
    _note_use(key, now)
    return key


def _note_use(key: ApiKey, now: datetime) -> None:
    # At most one write per key per minute, however many requests: the conditional
    # UPDATE also keeps concurrent requests from writing it twice.
    if key.last_used_at is not None and now - key.last_used_at < LAST_USED_RESOLUTION:
        return
    stale = Q(last_used_at__isnull=True) | Q(last_used_at__lte=now - LAST_USED_RESOLUTION)
    if ApiKey.objects.filter(stale, pk=key.pk).update(last_used_at=now):
        key.last_used_at = now
