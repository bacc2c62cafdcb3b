"""Audits of contested matches: chain, re-fold, fairness and timing checks,
disputes and admin decisions. See docs/audit.md.

Public surface: ``audit_match`` (async, from a connection), ``build_report``
(pure, from raw rows), ``AuditReport`` and its JSON form ``to_json``.
"""

from service.audit.audit import audit_match, build_report
from service.audit.report import AuditReport, from_json, to_json

__all__ = ["AuditReport", "audit_match", "build_report", "from_json", "to_json"]
