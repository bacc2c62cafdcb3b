"""One root error type for everything the service refuses.

Every error carries a stable machine-readable ``code`` and a plain sentence;
the API maps them to ``application/problem+json`` in one place
(``service.api.errors``). The engine raises ``RuleError``; the store raises
``VersionConflict``. Neither knows about HTTP: ``status`` is a hint the API
layer reads.
"""

from typing import ClassVar


class MatchaError(Exception):
    status: ClassVar[int] = 400
    default_code: ClassVar[str] = "bad_request"

    def __init__(self, detail: str, *, code: str | None = None) -> None:
        super().__init__(detail)
        self.code = code or self.default_code
        self.detail = detail


class RuleError(MatchaError):
    """A command the rules forbid (``not_your_turn``, ``target_taken``, ...)."""

    status = 422
    default_code = "illegal_move"

    def __init__(self, code: str, detail: str) -> None:
        super().__init__(detail, code=code)


class RuleConflict(RuleError):
    """A dispute or an administrator's command the match's state refuses
    (``match_not_finished``, ``dispute_pending``, ``dispute_decided``...): 409,
    as the API has always answered these, where a seat's illegal move is 422."""

    status = 409


class RuleInputError(RuleError):
    """A command the rules refuse for what it says, not for the match's state
    (``reason_required``): 400."""

    status = 400


class VersionConflict(MatchaError):
    status = 409
    default_code = "version_conflict"


class ValidationFailed(MatchaError):
    status = 400
    default_code = "validation_error"


class Unauthorized(MatchaError):
    status = 401
    default_code = "unauthorized"


class Forbidden(MatchaError):
    status = 403
    default_code = "forbidden"


class NotFound(MatchaError):
    status = 404
    default_code = "not_found"


class Conflict(MatchaError):
    """A request that clashes with the current state of a non-match resource."""

    status = 409
    default_code = "conflict"


class LogInconsistent(MatchaError):
    """A match's log no longer folds into a match: rows were changed behind the
    store (docs/audit.md). Nothing of it is shown; an admin audit names the fault."""

    status = 409
    default_code = "match_log_inconsistent"


class Unavailable(MatchaError):
    """The service cannot take this request now; the client may retry shortly."""

    status = 503
    default_code = "unavailable"
