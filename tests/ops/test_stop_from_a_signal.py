"""A stop requested by a signal that lands while the main thread is logging still
stops: ``request`` runs inside the signal handler, in the interrupted thread, and
must not wait on a lock that thread holds (seen: matcha api hung on 1 SIGTERM in 6)."""

from __future__ import annotations

import logging
import logging.handlers
import queue
import threading

from service.ops.stopping import ProcessStop


def test_a_stop_requested_in_the_middle_of_a_log_call_neither_deadlocks_nor_loses_its_line() -> (
    None
):
    lines: queue.Queue[logging.LogRecord] = queue.Queue()
    handler = logging.handlers.QueueHandler(lines)
    logger = logging.getLogger("matcha.stop")
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    stop = ProcessStop()
    try:

        def signal_during_a_log_call() -> None:
            # The main thread is inside the queue's put when the signal lands: it
            # holds the queue's lock, and the handler runs on top of it.
            with lines.mutex:
                stop.request("SIGTERM", watchdog=False)
                stop.on_stop(lambda: None)  # the handler may also register, under its lock

        interrupted = threading.Thread(target=signal_during_a_log_call, daemon=True)
        interrupted.start()
        interrupted.join(5)
        assert not interrupted.is_alive(), "the stop request waited on a lock its thread held"
        assert stop.requested
        record = lines.get(timeout=5)  # the line is written once the lock is free
        assert "stopping (SIGTERM)" in record.getMessage()
    finally:
        logger.removeHandler(handler)
