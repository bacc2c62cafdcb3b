"""Run servers and service processes in the foreground until Ctrl-C, then stop them all.

What ``matcha run`` (one machine, ``service.run``) and ``matcha cluster``
(the clustered shape, ``service.cluster``) share. A child that exits is
started again, with backoff (1 s, doubling to 30 s; back to 1 s once it has
run for a minute), and nothing else is touched: the API never goes down
because the worker did. Ctrl-C or SIGTERM stops everything that was started
within ``STOP_DEADLINE_S``, in reverse order: the children first (they use
the servers; each stops itself within its own 10 s, and is killed if not),
then the servers, last started first.

Every child runs in its own process group, so a Ctrl-C typed in the terminal
reaches only the supervising process, which then decides the order; each child
is also told by the kernel to stop if that process dies without cleaning up
(``service.processes``).
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import IO, Protocol
from urllib.parse import urlsplit, urlunsplit

import click

from service.errors import MatchaError
from service.processes import die_with_parent, spawn

STOP_DEADLINE_S = 12.0
"""Ctrl-C to everything stopped, at most: the children's share, then the servers'."""
CHILDREN_STOP_S = 8.0
"""The API and the worker each end within 10 s of SIGTERM by themselves (normally in
one or two); past this share of the deadline the stragglers are killed."""
RESTART_FIRST_S = 1.0
RESTART_MAX_S = 30.0
HEALTHY_AFTER_S = 60.0
"""A child that ran this long before exiting is restarted at once, not after a backoff."""


class Server(Protocol):
    """A server the supervisor stops last (``service.processes.ServerProcess``)."""

    def stop(self, timeout: float = 30) -> None: ...


class _Stop(Exception):
    """Raised from the signal handler: unwinds whatever is starting, then we clean up."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


def _on_signal(signum: int, frame: FrameType | None) -> None:
    raise _Stop(signum)


@dataclass
class Child:
    name: str
    argv: list[str]
    env: dict[str, str]
    proc: subprocess.Popen[bytes]
    log: Path | None = None
    stop_signal: int = signal.SIGTERM
    started_at: float = field(default_factory=time.monotonic)
    restarts: int = 0
    backoff_s: float = 0.0
    restart_at: float | None = None
    """Set while the child is down and waiting for its restart."""


@dataclass
class Supervisor:
    """What was started, stopped last-started-first. ``label`` begins every line it prints."""

    label: str
    children: list[Child] = field(default_factory=list)
    servers: list[tuple[str, Server]] = field(default_factory=list)

    def say(self, message: str) -> None:
        click.echo(f"{self.label}: {message}", err=True)

    def spawn(
        self, name: str, argv: list[str], env: dict[str, str], *, log: Path | None = None
    ) -> Child:
        """Start a child (its output to `log`, else to this process's)."""
        child = Child(name, argv, env, _popen(argv, env, log), log)
        self.children.append(child)
        return child

    def tend(self) -> None:
        """Schedule the restart of a child that exited; start those whose time came.

        Backoff like a container runtime's: 1 s, doubling up to 30 s, while the
        child keeps failing; a child that ran for a minute first is restarted at once.
        """
        now = time.monotonic()
        for child in self.children:
            if child.restart_at is None and child.proc.poll() is not None:
                ran = now - child.started_at
                if ran >= HEALTHY_AFTER_S:
                    child.backoff_s = 0.0
                else:
                    child.backoff_s = min(RESTART_MAX_S, max(RESTART_FIRST_S, child.backoff_s * 2))
                child.restart_at = now + child.backoff_s
                self.say(
                    f"the {child.name} exited with code {child.proc.returncode}"
                    f" after {ran:.1f} s; starting it again in {child.backoff_s:.0f} s"
                )
            elif child.restart_at is not None and now >= child.restart_at:
                child.proc = _popen(child.argv, child.env, child.log)
                child.started_at, child.restart_at = now, None
                child.restarts += 1
                self.say(
                    f"{child.name} started again (pid {child.proc.pid}, restart {child.restarts})"
                )

    def stop_all(self) -> None:
        deadline = time.monotonic() + STOP_DEADLINE_S
        children_until = time.monotonic() + CHILDREN_STOP_S
        # Children first: each gets its graceful signal at once, then they are awaited together.
        for child in reversed(self.children):
            if child.proc.poll() is None:
                self.say(f"stopping {child.name} (pid {child.proc.pid})")
                with contextlib.suppress(ProcessLookupError):
                    child.proc.send_signal(child.stop_signal)
        for child in reversed(self.children):
            try:
                child.proc.wait(max(0.0, children_until - time.monotonic()))
            except subprocess.TimeoutExpired:
                self.say(f"{child.name} did not stop in time; killing it")
            # Its whole group: a job process it forked must not outlive it.
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(child.proc.pid, signal.SIGKILL)
            child.proc.wait()
        self.children.clear()
        for name, server in reversed(self.servers):
            self.say(f"stopping {name}")
            server.stop(max(1.0, deadline - time.monotonic()))
        self.servers.clear()

    def serve(self, start: Callable[[], None]) -> None:
        """``start()``, then tend the children until Ctrl-C or SIGTERM; stop everything
        on the way out, whatever happened (a failed start included)."""
        previous = {sig: signal.signal(sig, _on_signal) for sig in (signal.SIGINT, signal.SIGTERM)}
        reason = "stopped"
        try:
            start()
            while True:
                self.tend()
                time.sleep(0.3)
        except _Stop as stop:
            reason = f"received {stop}"
        except click.ClickException as failure:
            reason = failure.message
            raise
        except MatchaError as failure:  # a server that would not start, say
            reason = failure.detail
            raise click.ClickException(failure.detail) from failure
        finally:
            # A second Ctrl-C must not cut the clean-up short (it would orphan the servers).
            for sig in previous:
                signal.signal(sig, signal.SIG_IGN)
            self.say(f"{reason}; shutting down")
            self.stop_all()
            for sig, handler in previous.items():
                signal.signal(sig, handler)
            self.say("everything stopped")


def _popen(argv: list[str], env: dict[str, str], log: Path | None) -> subprocess.Popen[bytes]:
    if log is not None:
        return spawn(argv, env=env, log=log, stop_signal=signal.SIGTERM)
    # Output to the terminal, as the command's own: `matcha run` shows its children's logs.
    return subprocess.Popen(
        argv,
        env=env,
        stdin=subprocess.DEVNULL,
        process_group=0,
        preexec_fn=die_with_parent(signal.SIGTERM),
    )


def lock_folder(data_dir: Path, command: str) -> IO[str]:
    """One `command` per data folder: a second one would fight over its servers.

    The lock file names the holder's pid (what ``matcha cluster stop`` signals).
    """
    import fcntl

    lock = (data_dir / f"{command.replace(' ', '-')}.lock").open("a+")
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        lock.seek(0)
        holder = lock.read().strip() or "another process"
        lock.close()
        raise click.ClickException(
            f"{data_dir} is in use by another `{command}` (pid {holder}); stop it, "
            "or give this one its own folder with --data-dir"
        ) from None
    lock.seek(0)
    lock.truncate()
    lock.write(f"{os.getpid()}\n")
    lock.flush()
    return lock


def wait_for_http(url: str, child: Child, timeout: float) -> None:
    """Until `url` answers 200; the child exiting meanwhile is an error."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if child.proc.poll() is not None:
            raise click.ClickException(f"the {child.name} exited with code {child.proc.returncode}")
        try:
            with urllib.request.urlopen(url, timeout=2) as response:
                if response.status == 200:
                    return
        except urllib.error.HTTPError:
            pass  # it answers (not ready yet, or no such route): keep waiting for 200
        except (urllib.error.URLError, OSError):
            pass
        time.sleep(0.2)
    raise click.ClickException(f"the {child.name} did not answer {url} within {timeout:.0f}s")


def redact_url(url: str) -> str:
    """A URL without its password, for printing."""
    parts = urlsplit(url)
    if parts.password:
        netloc = parts.netloc.replace(f":{parts.password}@", ":***@")
        return urlunsplit(parts._replace(netloc=netloc))
    return url
