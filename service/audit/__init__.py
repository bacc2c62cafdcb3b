"""Audits of contested matches: chain, re-fold, fairness and timing checks,
disputes and admin decisions. See docs/audit.md.

Public surface: ``audit_seen_by`` (the one audit every reader calls: the CLI,
the API, the web page), ``audit_match`` (the whole report, from a connection),
``build_report`` (pure, from raw rows and ``AuditInputs``), ``AuditReport`` and
its JSON form ``to_json``.
"""

from service.audit.audit import audit_match, audit_seen_by, build_report
from service.audit.inputs import AuditInputs
from service.audit.report import AuditReport, from_json, to_json

__all__ = [
    "AuditInputs",
    "AuditReport",
    "audit_match",
    "audit_seen_by",
    "build_report",
    "from_json",
    "to_json",
]
