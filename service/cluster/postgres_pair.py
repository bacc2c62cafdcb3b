"""A PostgreSQL primary and a streaming-replication hot standby on this machine.

Debian's PostgreSQL 15 binaries (``/usr/lib/postgresql/15/bin``), each server
a child process (``service.processes``) on 127.0.0.1 and a port of its own,
trust authentication on loopback only, no unix socket (the data folders may
sit on paths too long for one). As root, both run as the system user
``postgres`` (PostgreSQL refuses root).

The standby is made once from the primary with ``pg_basebackup -R`` (which
writes ``primary_conninfo`` and ``standby.signal``) through a physical
replication slot (``matcha_standby``), so the primary keeps every WAL segment
the standby has not received yet, however long it was away. Each server is
named (``cluster_name``), which is what ``synchronous_standby_names`` lists
for the zero-loss mode (docs/scaling.md).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import psycopg

from service.processes import (
    ServerFailed,
    ServerProcess,
    hand_to,
    run_checked,
    spawn,
    wait_until,
)

PG_BIN = Path("/usr/lib/postgresql/15/bin")
SLOT = "matcha_standby"
PRIMARY_NAME = "matcha_primary"
STANDBY_NAME = "matcha_standby"
_SYSTEM_USER = "postgres"


def binaries_missing() -> str | None:
    """Why the pair cannot start here, or None."""
    for name in ("initdb", "postgres", "pg_basebackup"):
        if not (PG_BIN / name).exists():
            return f"{PG_BIN / name} is missing (apt-get install postgresql-15)"
    if os.geteuid() == 0:
        try:
            import pwd

            pwd.getpwnam(_SYSTEM_USER)
        except KeyError:
            return f"running as root, and there is no system user {_SYSTEM_USER!r} to run as"
    return None


def _user() -> str | None:
    return _SYSTEM_USER if os.geteuid() == 0 else None


def server_url(port: int, database: str = "postgres", user: str = "postgres") -> str:
    return f"postgresql://{user}@127.0.0.1:{port}/{database}"


@dataclass
class PostgresServer:
    name: str
    port: int
    folder: Path
    server: ServerProcess | None = None

    @property
    def url(self) -> str:
        """The superuser URL (database ``postgres``)."""
        return server_url(self.port)

    @property
    def alive(self) -> bool:
        return self.server is not None and self.server.proc.poll() is None

    def stop(self, timeout: float = 30) -> None:
        if self.server is not None:
            self.server.stop(timeout)


@dataclass
class PostgresPair:
    primary: PostgresServer
    standby: PostgresServer

    def writer_url(self, database: str = "postgres", user: str = "postgres") -> str:
        """Both servers, the one that takes writes chosen at each connection (libpq's
        ``target_session_attrs=read-write``): the primary, and after a promotion the
        former standby, with nothing to reconfigure. What the services are given."""
        hosts = f"127.0.0.1:{self.primary.port},127.0.0.1:{self.standby.port}"
        return f"postgresql://{user}@{hosts}/{database}?target_session_attrs=read-write"

    def wait_streaming(self, timeout: float = 60) -> None:
        """Until the primary sees the standby streaming through its slot."""
        deadline = time.monotonic() + timeout
        state: object = None
        while time.monotonic() < deadline:
            with contextlib.suppress(psycopg.Error):
                with psycopg.connect(self.primary.url, connect_timeout=2) as conn:
                    row = conn.execute(
                        "SELECT state FROM pg_stat_replication WHERE application_name = %s",
                        (self.standby.name,),
                    ).fetchone()
                state = row[0] if row else None
                if state == "streaming":
                    return
            time.sleep(0.1)
        raise ServerFailed(
            f"the standby was not streaming within {timeout:.0f}s (state {state!r}); "
            f"its log: {self.standby.folder.parent / (self.standby.folder.name + '.log')}"
        )

    def wait_replayed(self, timeout: float = 30) -> None:
        """Until the standby has replayed everything the primary had written when asked."""
        with psycopg.connect(self.primary.url, autocommit=True) as conn:
            row = conn.execute("SELECT pg_current_wal_lsn()::text").fetchone()
        assert row is not None
        target = row[0]
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with psycopg.connect(self.standby.url, autocommit=True) as conn:
                done = conn.execute(
                    "SELECT pg_last_wal_replay_lsn() >= %s::pg_lsn", (target,)
                ).fetchone()
            if done and done[0]:
                return
            time.sleep(0.05)
        raise ServerFailed(f"the standby did not replay up to {target} within {timeout:.0f}s")

    def promote(self, timeout: float = 30) -> None:
        """Make the standby a primary (after the primary was stopped: a failover)."""
        with psycopg.connect(self.standby.url, autocommit=True) as conn:
            conn.execute("SELECT pg_promote(wait => true, wait_seconds => %s)", (int(timeout),))

    def restart_standby(self, timeout: float = 60) -> None:
        """Start the standby again (after a test stopped it) and wait until it streams."""
        self.standby.stop()
        self.standby = start_standby(
            self.standby.folder, self.standby.port, self.primary, timeout=timeout
        )
        self.wait_streaming(timeout)

    def stop(self, timeout: float = 30) -> None:
        self.standby.stop(timeout)
        self.primary.stop(timeout)


def _run(argv: list[str], what: str) -> None:
    run_checked(argv, what, user=_user())


def _new_folder(folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    hand_to(folder, _user())


def _start(server: PostgresServer, timeout: float, *extra: str) -> None:
    log = server.folder.parent / f"{server.folder.name}.log"
    log.touch()
    hand_to(log, _user())
    log.chmod(0o644)
    # fmt: off
    argv = [
        str(PG_BIN / "postgres"), "-D", str(server.folder),
        "-c", f"port={server.port}", "-c", "listen_addresses=127.0.0.1",
        "-c", "unix_socket_directories=", "-c", "max_connections=200",
        "-c", f"cluster_name={server.name}",
        # a standby answers reads while it replays, and tells the primary what its
        # queries still need (fewer of them cancelled by vacuum on the primary)
        "-c", "hot_standby=on", "-c", "hot_standby_feedback=on",
        *extra,
    ]
    # fmt: on
    # SIGINT is PostgreSQL's "fast" shutdown: roll back open sessions, checkpoint, exit
    proc = spawn(argv, user=_user(), log=log, stop_signal=signal.SIGINT)
    server.server = ServerProcess(server.folder, proc, server.url, log, stop_signal=signal.SIGINT)

    def answers() -> bool:
        try:
            with psycopg.connect(server.url, connect_timeout=2) as conn:
                conn.execute("SELECT 1")
            return True
        except psycopg.Error:
            return False

    wait_until(answers, proc, f"PostgreSQL {server.name}", log, timeout)


def start_primary(folder: Path, port: int, *, timeout: float = 60) -> PostgresServer:
    primary = PostgresServer(PRIMARY_NAME, port, folder)
    if not (folder / "PG_VERSION").exists():
        _new_folder(folder)
        _run(
            [
                str(PG_BIN / "initdb"),
                "-D",
                str(folder),
                "-U",
                "postgres",
                "--auth=trust",
                "-E",
                "utf8",
            ],
            "initdb",
        )
    _start(primary, timeout)
    with psycopg.connect(primary.url, autocommit=True) as conn:
        exists = conn.execute(
            "SELECT 1 FROM pg_replication_slots WHERE slot_name = %s", (SLOT,)
        ).fetchone()
        if exists is None:
            conn.execute("SELECT pg_create_physical_replication_slot(%s)", (SLOT,))
    return primary


def start_standby(
    folder: Path, port: int, primary: PostgresServer, *, timeout: float = 60
) -> PostgresServer:
    standby = PostgresServer(STANDBY_NAME, port, folder)
    if not (folder / "PG_VERSION").exists():
        shutil.rmtree(folder, ignore_errors=True)  # pg_basebackup wants an empty folder
        _new_folder(folder)
        # fmt: off
        _run(
            [
                str(PG_BIN / "pg_basebackup"), "-h", "127.0.0.1", "-p", str(primary.port),
                "-U", "postgres", "-D", str(folder), "-R", "-S", SLOT,
                "-X", "stream", "--checkpoint=fast",
            ],
            "pg_basebackup",
        )
        # fmt: on
    # where the primary is, given at each start (the command line wins over what
    # pg_basebackup -R wrote), so the primary may change port between runs
    conninfo = f"host=127.0.0.1 port={primary.port} user=postgres application_name={STANDBY_NAME}"
    _start(
        standby, timeout, "-c", f"primary_conninfo={conninfo}", "-c", f"primary_slot_name={SLOT}"
    )
    return standby


def start_postgres_pair(
    folder: Path, primary_port: int, standby_port: int, *, timeout: float = 60
) -> PostgresPair:
    """Primary in ``folder/primary``, standby in ``folder/standby``, streaming.
    On failure nothing is left running."""
    missing = binaries_missing()
    if missing:
        raise ServerFailed(missing)
    folder.mkdir(parents=True, exist_ok=True)
    primary = start_primary(folder / "primary", primary_port, timeout=timeout)
    try:
        standby = start_standby(folder / "standby", standby_port, primary, timeout=timeout)
        pair = PostgresPair(primary, standby)
        try:
            pair.wait_streaming(timeout)
        except BaseException:
            standby.stop()
            raise
    except BaseException:
        primary.stop()
        raise
    return pair


@contextlib.contextmanager
def postgres_pair(folder: Path, primary_port: int, standby_port: int) -> Iterator[PostgresPair]:
    """``start_postgres_pair`` for a test: stopped on the way out."""
    pair = start_postgres_pair(folder, primary_port, standby_port)
    try:
        yield pair
    finally:
        pair.stop()
