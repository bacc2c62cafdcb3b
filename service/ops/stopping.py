"""A stop is a stop: one stop request per process, announced at once, bounded in time.

On SIGTERM (or SIGINT) a process of the service

1. tells everything long-lived to end now: every callback registered with
   ``on_stop`` runs at once (the live streams close each WebSocket with 1012
   and end each Server-Sent Events stream with a retry hint, and refuse new
   ones; the projection runners stop after their current pass; readiness
   answers 503);
2. stops accepting work: uvicorn closes its listening socket once the streams
   have closed (``count_open`` probes say so), ``STREAMS_FIRST_S`` at most, so
   its own shutdown never closes a stream before the stream could say where to
   resume; a worker takes no new job;
3. exits within ``STOP_DEADLINE_S`` whatever happens: a watchdog started by the
   first request ends the process with ``os._exit`` if it is still there then
   (a connection that never drains, a pool that never closes, a job that
   ignores its signal).

Kubernetes gives a pod ``terminationGracePeriodSeconds`` after its preStop hook
before it sends SIGKILL; deploy/k8s/ sets it above this deadline, so the
watchdog, never the kubelet, has the last word (docs/operations.md "Stopping").

``attach_to_uvicorn`` (an API start-up hook, ``service.ops.install_ops``) puts
the request in front of uvicorn's own signal handler, whichever way uvicorn was
started (``matcha api``, ``matcha run``, ``uvicorn --factory``, several
workers), and bounds uvicorn's wait for open connections.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import sys
import threading
import time
from collections.abc import Callable
from types import FrameType
from typing import Any

log = logging.getLogger("matcha.stop")

STOP_DEADLINE_S = 10.0
"""From the first stop request to the process's end, at most."""
STREAMS_FIRST_S = 1.0
"""Under uvicorn: how long the streams get to close themselves (with their resume
hint) before uvicorn starts its own shutdown, which would close a WebSocket with
1012 but no hint, and stop listening. They usually need milliseconds."""
DRAIN_S = 5.0
"""How long uvicorn waits for open connections after the streams were told to end
(they end within milliseconds; this bounds a client that never reads its close)."""
_WATCHDOG_MARGIN_S = 0.5
"""The watchdog fires this much before the deadline, so the exit is inside it."""

Callback = Callable[[], None]


class ProcessStop:
    """The process's stop request (``process_stop``): set once, read by everything."""

    def __init__(self, deadline_s: float = STOP_DEADLINE_S) -> None:
        self.deadline_s = deadline_s
        self.event = threading.Event()
        self.requested_at: float | None = None
        """``time.monotonic()`` of the first request."""
        self.reason = ""
        self._callbacks: list[Callback] = []
        self._open: list[Callable[[], int]] = []
        # Reentrant: ``request`` runs inside signal handlers, which interrupt the
        # main thread wherever it is, possibly inside ``on_stop`` holding this lock.
        self._lock = threading.RLock()

    @property
    def requested(self) -> bool:
        return self.event.is_set()

    def remaining(self) -> float:
        """Seconds left before the deadline (the whole deadline before any request)."""
        if self.requested_at is None:
            return self.deadline_s
        return max(0.0, self.requested_at + self.deadline_s - time.monotonic())

    def on_stop(self, callback: Callback) -> Callback:
        """Run ``callback()`` when the stop is requested (at once if it was); returns
        a function that unregisters it. Callbacks run in the requesting thread (a
        signal handler's): they must only schedule work, never wait for it."""
        with self._lock:
            if not self.requested:
                self._callbacks.append(callback)

                def unregister() -> None:
                    with self._lock, contextlib.suppress(ValueError):
                        self._callbacks.remove(callback)

                return unregister
        _run(callback)
        return lambda: None

    def count_open(self, probe: Callable[[], int]) -> Callback:
        """Register ``probe()``, how many things (streams) are still open that the
        stop asked to end; returns a function that unregisters it."""
        with self._lock:
            self._open.append(probe)

        def unregister() -> None:
            with self._lock, contextlib.suppress(ValueError):
                self._open.remove(probe)

        return unregister

    def settled(self, timeout: float) -> bool:
        """Wait until every probe says nothing is open (or ``timeout``); True if so."""
        deadline = time.monotonic() + timeout
        while True:
            with self._lock:
                probes = list(self._open)
            try:
                still = sum(probe() for probe in probes)
            except Exception:  # a probe that fails says nothing: do not wait on it
                still = 0
            if still <= 0:
                return True
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.02)

    def request(self, reason: str, *, watchdog: bool = True) -> bool:
        """Ask the process to stop; True the first time. Starts the watchdog
        (``watchdog=False`` in tests that only want the callbacks)."""
        with self._lock:
            if self.requested:
                return False
            self.requested_at = time.monotonic()
            self.reason = reason
            self.event.set()
            callbacks, self._callbacks = self._callbacks, []
        # Logged from a thread, never here: a signal handler that logs while the
        # main thread is inside the logging queue's put (its lock is not reentrant)
        # deadlocks the process, and the stop never comes (seen: 1 SIGTERM in 6).
        threading.Thread(
            target=log.info,
            args=("stopping (%s): ending within %.0f s", reason, self.deadline_s),
            name="stop-log",
            daemon=True,
        ).start()
        if watchdog:
            threading.Thread(target=self._watchdog, name="stop-watchdog", daemon=True).start()
        for callback in callbacks:
            _run(callback)
        return True

    def _watchdog(self) -> None:
        time.sleep(max(0.0, self.remaining() - _WATCHDOG_MARGIN_S))
        # Still here: something did not end when told. The deadline is the promise.
        with contextlib.suppress(Exception):
            log.error("did not stop within %.0f s (%s); exiting now", self.deadline_s, self.reason)
            for handler in logging.getLogger().handlers:
                handler.flush()
            sys.stderr.flush()
        os._exit(1)


def _run(callback: Callback) -> None:
    try:
        callback()
    except Exception:  # one part's failure to stop must not keep the others running
        log.exception("stop callback %r failed", callback)


process_stop = ProcessStop()
"""This process's stop request."""

SignalHandler = Callable[[int, FrameType | None], Any]


def _uvicorn_server(handler: object) -> Any:
    """The ``uvicorn.Server`` whose ``handle_exit`` is this signal handler, or None."""
    server = getattr(handler, "__self__", None)
    try:
        from uvicorn import Server
    except ImportError:  # pragma: no cover - uvicorn is a dependency
        return None
    return server if isinstance(server, Server) else None


def attach_to_uvicorn() -> bool:
    """Under uvicorn: request the stop before uvicorn's own handler runs, and bound
    its wait for open connections to ``DRAIN_S``. False when not under uvicorn
    (a test client, a script): nothing is changed then."""
    if threading.current_thread() is not threading.main_thread():
        return False
    attached = False
    for sig in (signal.SIGTERM, signal.SIGINT):
        current = signal.getsignal(sig)
        server = _uvicorn_server(current)
        if server is None or not callable(current):
            continue
        timeout = server.config.timeout_graceful_shutdown
        if timeout is None or timeout > DRAIN_S:
            server.config.timeout_graceful_shutdown = DRAIN_S
        signal.signal(sig, _chained(current))
        attached = True
    return attached


def _chained(uvicorn_handler: SignalHandler) -> SignalHandler:
    """The stop first, uvicorn's shutdown once the streams closed (``STREAMS_FIRST_S``
    at most): a signal handler must not wait, so a thread hands it over. A second
    signal goes to uvicorn at once (its own force-exit on a second Ctrl-C)."""

    def handler(signum: int, frame: FrameType | None) -> None:
        if not process_stop.request(signal.Signals(signum).name):
            uvicorn_handler(signum, frame)
            return

        def then_uvicorn() -> None:
            process_stop.settled(STREAMS_FIRST_S)
            uvicorn_handler(signum, None)  # sets flags its main loop polls: any thread may

        threading.Thread(target=then_uvicorn, name="stop-uvicorn", daemon=True).start()

    return handler


__all__ = [
    "DRAIN_S",
    "STOP_DEADLINE_S",
    "STREAMS_FIRST_S",
    "ProcessStop",
    "attach_to_uvicorn",
    "process_stop",
]
