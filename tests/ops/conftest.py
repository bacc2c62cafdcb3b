"""Fixtures of the ops tests."""

from __future__ import annotations

import io
import logging
from collections.abc import Iterator

import pytest

from .ops_harness import LogLines


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def json_logs() -> Iterator[LogLines]:
    from service.ops.logging import JsonFormatter, _install_record_factory

    _install_record_factory()
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(JsonFormatter())
    # On "matcha", not the root: every Litestar app re-configures the root logger.
    matcha = logging.getLogger("matcha")
    previous = matcha.level
    matcha.addHandler(handler)
    matcha.setLevel(logging.DEBUG)
    try:
        yield LogLines(stream)
    finally:
        matcha.removeHandler(handler)
        matcha.setLevel(previous)
