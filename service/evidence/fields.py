"""The field order of every event and nested type, read from ``schemas/``
(docs/evidence-spec.md "Event bytes").

An event's chain bytes are msgspec's JSON of it: the tag first, then every
field in the order msgspec keeps them (``v`` last: a base class's defaulted
field goes after the subclass's), an ``UNSET`` field left out. An independent
verifier cannot guess that order, so it is written out here, from the very
structs the service encodes with: ``service.vectors`` renders this
table into the spec, into ``docs/evidence-vectors/fields.json`` and into the
browser's verifier (``service/web/static/evidence_fields.js``), and the suite
fails when a schema changes without them.

Types are said in JSON's words: ``string``, ``integer``, ``float``, ``boolean``,
``null``, ``{"tuple": [...]}`` (fixed length), ``{"array": T}``,
``{"struct": name}``, ``{"union": [...]}``.
"""

from __future__ import annotations

from typing import Any

import msgspec
from msgspec import inspect

from schemas.events import EVENT_TYPES

FieldType = str | dict[str, Any]


class FieldSpec(msgspec.Struct, frozen=True, kw_only=True):
    name: str
    """The JSON key."""
    type: FieldType
    presence: str
    """``always`` (written even when it holds its default) or ``unset`` (left out of
    the bytes when unset: a field added after events of its type were written)."""
    default: Any = None
    """The default a decoder fills in when the key is missing (informative)."""


class StructSpec(msgspec.Struct, frozen=True, kw_only=True):
    name: str
    tag_field: str | None
    """The key written first, holding ``tag`` (tagged unions: events, time controls)."""
    tag: str | None
    fields: list[FieldSpec]


def _type(info: inspect.Type, seen: dict[str, StructSpec]) -> FieldType:
    if isinstance(info, inspect.StrType):
        return "string"
    if isinstance(info, inspect.BoolType):
        return "boolean"
    if isinstance(info, inspect.IntType):
        return "integer"
    if isinstance(info, inspect.FloatType):
        return "float"
    if isinstance(info, inspect.NoneType):
        return "null"
    if isinstance(info, inspect.LiteralType):
        kinds = {type(v) for v in info.values}
        if kinds == {str}:
            return "string"
        if kinds == {int}:
            return "integer"
    if isinstance(info, inspect.TupleType):
        return {"tuple": [_type(t, seen) for t in info.item_types]}
    if isinstance(info, inspect.VarTupleType | inspect.ListType):
        return {"array": _type(info.item_type, seen)}
    if isinstance(info, inspect.StructType):
        _struct(info, seen)
        return {"struct": info.cls.__name__}
    if isinstance(info, inspect.UnionType):
        return {"union": [_type(t, seen) for t in info.types]}
    # Anything else (a dict, a datetime) has no spelling in the spec yet: say so
    # loudly rather than write a table an independent verifier would misread.
    raise TypeError(f"no canonical form specified for {info!r}")


def _struct(info: inspect.StructType, seen: dict[str, StructSpec]) -> None:
    name = info.cls.__name__
    if name in seen:
        return
    defaults = {f.name: f.default for f in msgspec.structs.fields(info.cls)}
    seen[name] = StructSpec(name=name, tag_field=None, tag=None, fields=[])  # recursion guard
    fields = []
    for f in info.fields:
        unset = defaults[f.name] is msgspec.UNSET
        default = None if f.required or unset else defaults[f.name]
        if default is msgspec.NODEFAULT:
            default = None
        fields.append(
            FieldSpec(
                name=f.encode_name,
                type=_type(f.type, seen),
                presence="unset" if unset else "always",
                default=msgspec.to_builtins(default),
            )
        )
    tag = info.tag if isinstance(info.tag, str) or info.tag is None else str(info.tag)
    seen[name] = StructSpec(name=name, tag_field=info.tag_field, tag=tag, fields=fields)


def field_table() -> list[StructSpec]:
    """Every event type, then every nested type, in the order they are first met."""
    seen: dict[str, StructSpec] = {}
    for event_type in EVENT_TYPES:
        info = inspect.type_info(event_type)
        assert isinstance(info, inspect.StructType)
        _struct(info, seen)
    events = [seen[t.__name__] for t in EVENT_TYPES]
    nested = [s for name, s in seen.items() if name not in {t.__name__ for t in EVENT_TYPES}]
    return events + nested


def _type_text(t: FieldType) -> str:
    if isinstance(t, str):
        return t
    if "tuple" in t:
        return "[" + ", ".join(_type_text(x) for x in t["tuple"]) + "]"
    if "array" in t:
        return f"array of {_type_text(t['array'])}"
    if "struct" in t:
        return f"`{t['struct']}`"
    return " or ".join(_type_text(x) for x in t["union"])


def markdown(table: list[StructSpec]) -> str:
    """The spec's section "Field order", one table per type."""
    out: list[str] = []
    for s in table:
        head = f"### `{s.name}`"
        if s.tag_field:
            head += f' — `"{s.tag_field}": "{s.tag}"` first'
        out += [head, "", "| # | key | type | written |", "|---|---|---|---|"]
        for i, f in enumerate(s.fields, start=1):
            written = "always" if f.presence == "always" else "only when set"
            out.append(f"| {i} | `{f.name}` | {_type_text(f.type)} | {written} |")
        out.append("")
    return "\n".join(out)


def table_json(table: list[StructSpec]) -> bytes:
    return msgspec.json.format(msgspec.json.encode(table), indent=1) + b"\n"
