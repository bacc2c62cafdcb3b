"""``matcha keys``: the service's signing key and public keys (``matcha verify``
checks a record offline: ``service/verify.py``)."""

from __future__ import annotations

import click

from service.evidence.config import EvidenceSettings, load_public_keys
from service.evidence.keys import load_keyring, rotate
from service.evidence.plugin import KEYS_POLL_S


@click.group("keys")
def keys() -> None:
    """The service's signing key and public keys (docs/audit.md "Keys")."""


@keys.command("show")
def show() -> None:
    """Print every public key as JSON (what GET /api/keys serves)."""
    click.echo(load_public_keys(EvidenceSettings()).to_json().decode())


@keys.command("rotate")
def rotate_command() -> None:
    """Retire the current signing key into the keyring and make a new one.

    Running APIs that read these files (``make run``'s, deploy/'s mounts) sign with
    the new key within seconds, without a restart; what the old key signed keeps
    verifying.
    """
    settings = EvidenceSettings()
    if not settings.key_path.exists():
        raise click.ClickException(f"no signing key at {settings.key_path}")
    retired, new = rotate(settings.key_path, settings.keyring_path)
    click.echo(f"retired key {retired.key_id}; now signing with {new.key_id}")
    click.echo(f"public keys: {settings.keyring_path} ({len(load_keyring(settings.keyring_path))})")
    click.echo(
        f"running APIs that read {settings.key_path} sign with {new.key_id} within"
        f" {KEYS_POLL_S:.0f} s (no restart); an API given another copy of the key needs"
        " that copy replaced (deploy/: update the secret; it is followed the same way)"
    )
