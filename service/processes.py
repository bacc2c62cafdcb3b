"""Server processes that never outlive the process that started them.

Shared by ``matcha run`` (``service.embedded``, ``service.run``) and
``matcha cluster`` (``service.cluster``): each server is a direct child (never
daemonised), in a process group of its own, so a Ctrl-C typed in the terminal
reaches only the parent, which then stops the servers in its own order; and
the kernel sends each one its stop signal if the parent dies without cleaning
up (PR_SET_PDEATHSIG), which leaves no orphan holding a data folder or a port.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import socket
import subprocess
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from service.errors import MatchaError

_PR_SET_PDEATHSIG = 1


class ServerFailed(MatchaError):
    """A server that would not start (its log's tail is in the message)."""

    status = 500
    default_code = "server_failed"


def die_with_parent(sig: int) -> Callable[[], None]:
    """A preexec_fn asking the kernel to send `sig` to the child when its parent dies.

    It runs after any change of user (``Popen(user=...)``), which would clear it.
    """

    def preexec() -> None:
        with contextlib.suppress(OSError, AttributeError):
            libc = ctypes.CDLL("libc.so.6", use_errno=True)
            libc.prctl(_PR_SET_PDEATHSIG, sig)

    return preexec


def free_port() -> int:
    with contextlib.closing(socket.socket(socket.AF_INET, socket.SOCK_STREAM)) as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def port_is_free(port: int) -> bool:
    with contextlib.closing(socket.socket(socket.AF_INET, socket.SOCK_STREAM)) as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True


def server_could_listen(port: int) -> bool:
    """Whether a server (which sets SO_REUSEADDR, as PostgreSQL, Redis and nginx do)
    could listen on ``port`` now: the connections a stopped server leaves in
    TIME_WAIT do not count, as they would for ``port_is_free``."""
    with contextlib.closing(socket.socket(socket.AF_INET, socket.SOCK_STREAM)) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True


def spawn(
    argv: Sequence[str],
    *,
    stop_signal: int,
    log: Path | None = None,
    env: dict[str, str] | None = None,
    user: str | None = None,
) -> subprocess.Popen[bytes]:
    """Start `argv` as a child in its own process group that gets `stop_signal`
    if this process dies; its output goes to `log` (appended), else nowhere."""
    out: int | object = subprocess.DEVNULL
    with contextlib.ExitStack() as stack:
        if log is not None:
            out = stack.enter_context(log.open("ab"))
        return subprocess.Popen(
            list(argv),
            env=env,
            user=user,
            stdin=subprocess.DEVNULL,
            stdout=out,  # type: ignore[arg-type]
            stderr=subprocess.STDOUT,
            process_group=0,
            preexec_fn=die_with_parent(stop_signal),
        )


def run_checked(
    argv: Sequence[str], what: str, *, user: str | None = None, timeout: float = 120
) -> None:
    """Run a setup command to its end (initdb, pg_basebackup, redis-cli --cluster
    create); one that fails is an error that shows what it said."""
    done = subprocess.run(
        list(argv), user=user, capture_output=True, text=True, timeout=timeout, check=False
    )
    if done.returncode != 0:
        raise ServerFailed(f"{what} failed:\n{done.stdout}\n{done.stderr}")


def tail(path: Path, lines: int = 20) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


def wait_until(
    ready: Callable[[], bool], proc: subprocess.Popen[bytes], what: str, log: Path, timeout: float
) -> None:
    """Poll `ready` until it holds; a server that exits or takes too long is an error."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise ServerFailed(
                f"{what} exited with code {proc.returncode}; its log ({log}):\n{tail(log)}"
            )
        if ready():
            return
        time.sleep(0.1)
    proc.kill()
    proc.wait()
    raise ServerFailed(f"{what} was not ready within {timeout:.0f}s; log ({log}):\n{tail(log)}")


def stop(proc: subprocess.Popen[bytes], sig: int, timeout: float) -> None:
    """`sig` (the server's clean stop), then SIGKILL past `timeout`; then whatever is
    left of its process group (a worker process its leader did not take down)."""
    if proc.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            proc.send_signal(sig)
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)


def hand_to(path: Path, user: str | None) -> None:
    """Give a server's data folder to the system user it runs as (mode 0700, as
    PostgreSQL demands); None: it runs as this process's user, nothing to do."""
    if user is None:
        return
    import pwd

    entry = pwd.getpwnam(user)
    for folder in path.resolve().parents:
        mode = folder.stat()
        if mode.st_uid != entry.pw_uid and not mode.st_mode & 0o001:
            raise ServerFailed(
                f"the system user {user!r} cannot reach {path}: {folder} is closed to others "
                f"(chmod o+x {folder}, or use a folder under one it can traverse)"
            )
    os.chown(path, entry.pw_uid, entry.pw_gid)
    path.chmod(0o700)


class ServerProcess:
    """A server child process with its data folder, URL and log; `stop()` ends it
    with the signal that makes this server shut down cleanly."""

    stop_signal: int = signal.SIGTERM

    def __init__(
        self,
        data_dir: Path,
        proc: subprocess.Popen[bytes],
        url: str,
        log: Path,
        *,
        stop_signal: int | None = None,
    ) -> None:
        self.data_dir = data_dir
        self.proc = proc
        self.url = url
        self.log = log
        if stop_signal is not None:
            self.stop_signal = stop_signal

    @property
    def pid(self) -> int:
        return self.proc.pid

    def stop(self, timeout: float = 30) -> None:
        stop(self.proc, self.stop_signal, timeout)
