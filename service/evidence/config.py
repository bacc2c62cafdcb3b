"""Where the evidence lives, read from the environment once (docs/audit.md "Keys").

* ``MATCHA_SIGNING_KEY_FILE``: the private key (a secret in deploy/; must
  exist when set). Default ``<data dir>/keys/signing-key.pem``, made on the
  first start.
* ``MATCHA_PUBLIC_KEYS_FILE``: every public key, retired ones too. Default
  ``<data dir>/keys/public-keys.json``.
* ``MATCHA_CHECKPOINT_DIR``: the append-only checkpoint logs (one per event
  store). Default ``<data dir>/checkpoints``.
* ``MATCHA_CHECKPOINT_INTERVAL_S``: a checkpoint at least this often while
  matches change (default 60), and one at every match end.
* ``MATCHA_CHECKPOINT_BUCKET`` / ``MATCHA_CHECKPOINT_PREFIX``: an S3 bucket
  (with Object Lock) that also receives every checkpoint, under the prefix
  (default ``checkpoints/``).

``<data dir>`` is ``MATCHA_DATA_DIR`` (``matcha run`` sets it), else ``var``.
"""

from __future__ import annotations

import logging
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from service.evidence.keys import (
    Keyring,
    SigningKey,
    load_keyring,
    load_or_create_signing_key,
    load_signing_key,
    save_keyring,
)

log = logging.getLogger("matcha.evidence")


def _env(name: str, default: str = "") -> str:
    return os.environ.get(name, default)


@dataclass(frozen=True, kw_only=True)
class EvidenceSettings:
    signing_key_file: str = field(default_factory=lambda: _env("MATCHA_SIGNING_KEY_FILE"))
    public_keys_file: str = field(default_factory=lambda: _env("MATCHA_PUBLIC_KEYS_FILE"))
    data_dir: str = field(default_factory=lambda: _env("MATCHA_DATA_DIR"))
    checkpoint_dir: str = field(default_factory=lambda: _env("MATCHA_CHECKPOINT_DIR"))
    checkpoint_interval_s: float = field(
        default_factory=lambda: float(_env("MATCHA_CHECKPOINT_INTERVAL_S", "60"))
    )
    checkpoint_bucket: str = field(default_factory=lambda: _env("MATCHA_CHECKPOINT_BUCKET"))
    checkpoint_prefix: str = field(
        default_factory=lambda: _env("MATCHA_CHECKPOINT_PREFIX", "checkpoints/")
    )

    @property
    def base(self) -> Path:
        return Path(self.data_dir or "var").expanduser()

    @property
    def key_path(self) -> Path:
        return (
            Path(self.signing_key_file)
            if self.signing_key_file
            else self.base / "keys" / ("signing-key.pem")
        )

    @property
    def keyring_path(self) -> Path:
        if self.public_keys_file:
            return Path(self.public_keys_file)
        return self.base / "keys" / "public-keys.json"

    @property
    def checkpoint_folder(self) -> Path:
        """One log per event store in it (``<database>-<store id>.jsonl``).

        Nothing configured (an ad-hoc ``matcha api``, the tests): a folder of
        this user's in the temp dir, so throwaway databases leave nothing in
        ``var``; ``matcha run`` and deploy/ always name one.
        """
        if self.checkpoint_dir:
            return Path(self.checkpoint_dir)
        if not self.configured:
            return Path(tempfile.gettempdir()) / f"matcha-checkpoints-{os.getuid()}"
        return self.base / "checkpoints"

    @property
    def configured(self) -> bool:
        """Keys were pointed at explicitly (a deployment, ``matcha run``), not just defaulted."""
        return bool(self.signing_key_file or self.public_keys_file or self.data_dir)


def load_signer(settings: EvidenceSettings) -> SigningKey:
    """The service's signing key: the configured file (which must exist), else the
    data folder's, made on the first start."""
    if settings.signing_key_file:
        return load_signing_key(settings.key_path)
    key, created = load_or_create_signing_key(settings.key_path)
    if created:
        log.warning("created a new signing key %s in %s", key.key_id, settings.key_path)
    return key


def load_public_keys(settings: EvidenceSettings, signer: SigningKey | None = None) -> Keyring:
    """Every public key: the keyring file, plus the current key (``signer``, or the one
    in the key file when this process may read it)."""
    keyring = load_keyring(settings.keyring_path)
    if signer is None and settings.key_path.exists():
        try:
            signer = load_signing_key(settings.key_path)
        except (OSError, ValueError):
            signer = None
    if signer is not None and signer.key_id not in keyring:
        keyring.add(signer.public())
    return keyring


def publish_current_key(settings: EvidenceSettings, signer: SigningKey) -> None:
    """Add the current public key to the keyring file when it is missing (best
    effort: in deploy/ the file is a read-only mount kept by the operators)."""
    keyring = load_keyring(settings.keyring_path)
    if signer.key_id in keyring:
        return
    keyring.add(signer.public())
    try:
        save_keyring(settings.keyring_path, keyring)
    except OSError as exc:
        log.warning("could not add key %s to %s: %s", signer.key_id, settings.keyring_path, exc)
