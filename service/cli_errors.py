"""What ``matcha`` says when a command fails: one sentence on stderr, never a traceback.

Exit statuses, the same for every subcommand (docs/operations.md "Exit statuses"):

* **0**: done; for a check (``audit``, ``verify``), everything held;
* **1**: a check found a problem (the command printed it), or the command
  could not finish for a reason that is not the caller's (the sentence says which);
* **2**: the caller's mistake: a usage error, something named that does not
  exist (a match, a ladder, a file), or no database to talk to.

Click's own usage errors already exit 2 with one line; this module turns
every other exception a command lets out into its sentence and status.
"""

from __future__ import annotations

import re

import msgspec
import psycopg
import psycopg.errors

from service.errors import MatchaError, NotFound, ValidationFailed

USAGE = 2
PROBLEM = 1


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0].strip() if text else type(exc).__name__


def _without_password(text: str) -> str:
    """A connection error quotes the URL it tried: never print a password."""
    return re.sub(r"(postgres(?:ql)?://[^:/@\s]+):[^@\s]+@", r"\1:***@", text)


def explain(exc: BaseException) -> tuple[int, str]:
    """The exit status and the sentence for ``exc``."""
    if isinstance(exc, NotFound | ValidationFailed):
        return USAGE, exc.detail
    if isinstance(exc, MatchaError):
        return PROBLEM, exc.detail
    if isinstance(exc, psycopg.errors.UndefinedTable | psycopg.errors.InvalidSchemaName):
        return USAGE, (
            "the database has no Matcha tables yet: run `matcha migrate` on it first"
            f" ({_first_line(exc)})"
        )
    if isinstance(exc, psycopg.errors.InsufficientPrivilege):
        return USAGE, f"the database refuses this role: {_first_line(exc)}"
    if isinstance(exc, psycopg.OperationalError):
        return USAGE, (
            "cannot reach the database: "
            + _without_password(_first_line(exc))
            + " (is it running, and does the URL name it? `make run` starts one)"
        )
    if isinstance(exc, psycopg.Error):
        return PROBLEM, f"the database refused a query: {_first_line(exc)}"
    if isinstance(exc, FileNotFoundError):
        return USAGE, f"no such file: {exc.filename}"
    if isinstance(exc, PermissionError):
        return USAGE, f"not allowed: {exc.filename}"
    if isinstance(exc, IsADirectoryError | NotADirectoryError):
        return USAGE, f"not a file: {exc.filename}"
    if isinstance(exc, msgspec.DecodeError):
        return USAGE, f"the input is not what this command reads: {_first_line(exc)}"
    if isinstance(exc, OSError):
        return PROBLEM, f"{exc.strerror or _first_line(exc)}: {exc.filename or ''}".rstrip(": ")
    return PROBLEM, (
        f"failed unexpectedly ({type(exc).__name__}: {_first_line(exc)}); this is a bug of"
        " ours, please report it with the command you ran"
    )


__all__ = ["PROBLEM", "USAGE", "explain"]
