"""The service's signing key and the keyring of its public keys (docs/audit.md "Keys").

Ed25519 through ``cryptography`` (OpenSSL underneath): small keys and
signatures (32 and 64 bytes), deterministic signing, and fast verification,
which matters because anyone may verify a record offline.

* The **signing key** is a PKCS#8 PEM file (what ``openssl genpkey -algorithm
  ed25519`` writes), held outside the database: ``MATCHA_SIGNING_KEY_FILE``
  (a mounted secret in deploy/), else ``<data dir>/keys/signing-key.pem``,
  which is created on the first start (``make run``).
* A **key id** is the first 16 hex digits of SHA-256 of the raw 32-byte
  public key, so anyone can recompute it from the key itself.
* The **keyring** lists every public key the service has signed with, retired
  ones included (``MATCHA_PUBLIC_KEYS_FILE``, else ``<data dir>/keys/public-keys.json``);
  the current key is always in it. Rotation (``rotate``) retires the current
  key into the keyring and makes a new one: old receipts, checkpoints and
  event signatures keep verifying with the retired public key.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import os
import secrets
from datetime import UTC, datetime
from pathlib import Path

import msgspec
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import (
    Ed25519PrivateKey,
    Ed25519PublicKey,
)

ALGORITHM = "ed25519"
KEYRING_FORMAT = "matcha-keyring/1"


def key_id_of(public_raw: bytes) -> str:
    """The key id of a raw 32-byte Ed25519 public key."""
    return hashlib.sha256(public_raw).hexdigest()[:16]


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class PublicKey(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """One public key as published (``GET /api/keys``, the keyring file, a record)."""

    key_id: str
    algorithm: str = ALGORITHM
    public_key: str
    """The raw 32-byte key, standard base64."""
    created_at: str | None = None
    retired_at: str | None = None
    """Set when the key stopped signing: it still verifies what it signed."""

    def raw(self) -> bytes:
        return base64.b64decode(self.public_key, validate=True)


class KeyringFile(msgspec.Struct, frozen=True, kw_only=True):
    format: str = KEYRING_FORMAT
    keys: list[PublicKey] = []


class Keyring:
    """Public keys by key id: what every verifier needs, and nothing secret."""

    def __init__(self, keys: list[PublicKey] | tuple[PublicKey, ...] = ()) -> None:
        self._published: dict[str, PublicKey] = {}
        self._keys: dict[str, Ed25519PublicKey] = {}
        for key in keys:
            self.add(key)

    def add(self, key: PublicKey) -> None:
        """Add ``key``; a key whose id does not match its bytes is refused (ValueError)."""
        if key.algorithm != ALGORITHM:
            raise ValueError(f"key {key.key_id}: unsupported algorithm {key.algorithm!r}")
        raw = key.raw()
        if key_id_of(raw) != key.key_id:
            raise ValueError(f"key {key.key_id}: the id is not the hash of the key")
        known = self._published.get(key.key_id)
        if known is not None and known.retired_at and not key.retired_at:
            key = known  # keep the retirement date
        self._published[key.key_id] = key
        self._keys[key.key_id] = Ed25519PublicKey.from_public_bytes(raw)

    def __contains__(self, key_id: object) -> bool:
        return key_id in self._keys

    def __len__(self) -> int:
        return len(self._keys)

    def keys(self) -> list[PublicKey]:
        """Every key, the current (unretired) ones first, then by creation."""
        return sorted(
            self._published.values(),
            key=lambda k: (k.retired_at is not None, k.created_at or "", k.key_id),
        )

    def verify(self, key_id: str | None, message: bytes, signature: bytes | None) -> bool:
        """True when ``signature`` is ``key_id``'s signature of ``message``."""
        if key_id is None or signature is None:
            return False
        key = self._keys.get(key_id)
        if key is None:
            return False
        try:
            key.verify(bytes(signature), message)
        except InvalidSignature:
            return False
        return True

    def to_json(self) -> bytes:
        return msgspec.json.format(msgspec.json.encode(KeyringFile(keys=self.keys())))

    @classmethod
    def from_json(cls, data: bytes | str) -> Keyring:
        """A keyring file, or a bare list of keys, or one key (``matcha verify --keys``)."""
        value = msgspec.json.decode(data)
        if isinstance(value, dict) and "keys" in value:
            return cls(msgspec.convert(value, KeyringFile).keys)
        if isinstance(value, list):
            return cls(msgspec.convert(value, list[PublicKey]))
        return cls([msgspec.convert(value, PublicKey)])


class SigningKey:
    """The private key the service signs with, and its key id."""

    def __init__(self, private: Ed25519PrivateKey, created_at: str | None = None) -> None:
        self._private = private
        raw = private.public_key().public_bytes(
            serialization.Encoding.Raw, serialization.PublicFormat.Raw
        )
        self.public_raw = raw
        self.key_id = key_id_of(raw)
        self.created_at = created_at

    @classmethod
    def generate(cls) -> SigningKey:
        return cls(Ed25519PrivateKey.generate(), _now())

    def sign(self, message: bytes) -> bytes:
        return self._private.sign(message)

    def public(self) -> PublicKey:
        return PublicKey(
            key_id=self.key_id,
            public_key=base64.b64encode(self.public_raw).decode(),
            created_at=self.created_at,
        )

    def pem(self) -> bytes:
        return self._private.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )

    def __repr__(self) -> str:  # never the key itself, in logs or tracebacks
        return f"SigningKey(key_id={self.key_id!r})"


def load_signing_key(path: Path) -> SigningKey:
    """Read a PKCS#8 PEM Ed25519 private key (ValueError if it is anything else)."""
    private = serialization.load_pem_private_key(path.read_bytes(), password=None)
    if not isinstance(private, Ed25519PrivateKey):
        raise ValueError(f"{path} does not hold an Ed25519 private key")
    created = datetime.fromtimestamp(path.stat().st_mtime, UTC)
    return SigningKey(private, created.strftime("%Y-%m-%dT%H:%M:%S.%fZ"))


def _write_new(path: Path, data: bytes, mode: int) -> bool:
    """Write ``path`` only if it does not exist, atomically (False: someone else did first).

    Several processes may start at once on one data folder: each writes a
    temporary file and links it into place; ``link`` fails if the name is
    taken, so exactly one key wins and the others read it.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(6)}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
        try:
            os.link(tmp, path)
        except FileExistsError:
            return False
        return True
    finally:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()


def load_or_create_signing_key(path: Path) -> tuple[SigningKey, bool]:
    """The key at ``path``, made there first if missing: (key, created)."""
    if not path.exists():
        key = SigningKey.generate()
        if _write_new(path, key.pem(), 0o600):
            return key, True
    return load_signing_key(path), False


def load_keyring(path: Path | None) -> Keyring:
    if path is None or not path.exists():
        return Keyring()
    return Keyring.from_json(path.read_bytes())


def save_keyring(path: Path, keyring: Keyring) -> None:
    """Replace the keyring file atomically (public data: mode 0644)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(6)}.tmp")
    tmp.write_bytes(keyring.to_json() + b"\n")
    os.chmod(tmp, 0o644)
    os.replace(tmp, path)


def rotate(key_path: Path, keyring_path: Path) -> tuple[PublicKey, PublicKey]:
    """Retire the current key into the keyring and make a new one: (retired, new).

    The retired private key is deleted: what it signed stays verifiable with
    its public key, and nothing new can be signed with it. Running APIs load the
    new key within seconds (``service.evidence.plugin.follow_keys``).
    """
    old = load_signing_key(key_path)
    keyring = load_keyring(keyring_path)
    retired = msgspec.structs.replace(old.public(), retired_at=_now())
    keyring.add(retired)
    new = SigningKey.generate()
    keyring.add(new.public())
    save_keyring(keyring_path, keyring)
    tmp = key_path.with_name(f".{key_path.name}.{secrets.token_hex(6)}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as out:
        out.write(new.pem())
    os.replace(tmp, key_path)
    return retired, new.public()
