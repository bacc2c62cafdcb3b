"""Imports only run downward: the layers of service/, workers/ and schemas/, listed
once (``LAYERS``, quoted by docs/architecture.md), checked over every import
statement the code holds (an AST walk, nothing is imported or run).

The rules, each a test below:

* every module belongs to exactly one part of one layer;
* a module imports nothing from a higher layer;
* the adapters are siblings: none imports another (they meet in the
  application layer, and only the composition root holds them all);
* the match core (the first part of the application layer) builds on no other
  application part, so every one of them may build on it;
* no import of the project hides inside a function (where it would hide a
  circle or an upward arrow from a reader and from this check);
* no circle, neither between modules nor between parts.

A new part is one new line in ``LAYERS`` (and the paragraph of
docs/architecture.md that quotes it, which ``test_the_docs_quote_the_layers``
holds to this list).
"""

from __future__ import annotations

import ast
import textwrap
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("schemas", "service", "workers")


@dataclass(frozen=True)
class Part:
    name: str
    modules: tuple[str, ...]
    """Dotted prefixes: a module belongs to the part of its longest matching prefix."""


@dataclass(frozen=True)
class Layer:
    name: str
    parts: tuple[Part, ...]
    siblings: bool = False
    """Its parts never import each other."""


def _part(name: str, *modules: str) -> Part:
    return Part(name, modules or (name,))


LAYERS: tuple[Layer, ...] = (
    Layer("contract", (_part("schemas"),)),
    Layer(
        "foundation",
        (
            _part("errors", "service.errors", "service.problems", "service.cli_errors"),
            _part("settings", "service.settings"),
            _part("cache", "service.cache"),
            _part("processes", "service.processes", "service.supervisor"),
            _part("embedded servers", "service.embedded"),
        ),
    ),
    Layer(
        "domain",
        (
            _part("engine", "service.engine"),
            _part("bots", "service.bots"),
            _part("ratings math", "service.ratings"),
            _part(
                "tournament engine",
                *(
                    f"service.tournaments.{m}"
                    for m in (
                        "state",
                        "evolve",
                        "decide",
                        "records",
                        "standings",
                        "tiebreaks",
                        "berger",
                        "arena",
                        "formats",
                        "dutch",
                        "trf",
                        "trf_export",
                    )
                ),
            ),
        ),
    ),
    Layer("storage", (_part("store", "service.store"),)),
    Layer(
        "application",
        (
            _part("matches", "service.matches"),
            _part("accounts", "service.accounts"),
            _part("ladders", "service.ladders"),
            _part("broker", "service.broker"),
            _part("replays", "service.replays"),
            _part("tournaments", "service.tournaments"),
            _part("seasons", "service.seasons"),
            _part("fairplay", "service.fairplay"),
            _part("audit", "service.audit"),
            _part("evidence", "service.evidence"),
            _part("ops", "service.ops"),
            _part("console defaults", "service.cli_defaults"),
        ),
    ),
    Layer(
        "adapters",
        (
            _part("api", "service.api"),
            _part("live", "service.live"),
            _part("botplay", "service.botplay"),
            _part("web", "service.web"),
            _part(
                "cli",
                "service.audit.cli",
                "service.bots.cli",
                "service.cli_migrate",
                "service.evidence.cli",
                "service.vectors",
                "service.evidence.witness",
                "service.fairplay.cli",
                "service.tournaments.cli",
                "service.schema_export",
                "service.simulate",
                "service.verify",
            ),
            _part("workers", "workers"),
        ),
        siblings=True,
    ),
    Layer(
        "composition root",
        (
            _part(
                "root",
                "service.app",
                "service.serve",
                "service.run",
                "service.cli",
                "service.cluster",
            ),
        ),
    ),
)
"""From the bottom up."""

CORE = "matches"
"""The application part every other one may build on: it builds on none of them."""


@dataclass(frozen=True)
class Where:
    layer: int
    part: Part
    prefix: str


@dataclass(frozen=True)
class Import:
    source: str
    target: str
    line: int
    local: bool
    """Inside a function (not at module level, nor under ``if TYPE_CHECKING``)."""


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


@cache
def modules() -> dict[str, Path]:
    return {
        _module_name(path): path
        for package in PACKAGES
        for path in sorted((ROOT / package).rglob("*.py"))
    }


def where(module: str) -> Where | None:
    best: Where | None = None
    for index, layer in enumerate(LAYERS):
        for part in layer.parts:
            for prefix in part.modules:
                inside = module == prefix or module.startswith(prefix + ".")
                if inside and (best is None or len(prefix) > len(best.prefix)):
                    best = Where(index, part, prefix)
    return best


def _imports_of(module: str, path: Path) -> Iterator[Import]:
    known = modules()
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]

    def targets(node: ast.Import | ast.ImportFrom) -> Iterator[str]:
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
            return
        base = node.module or ""
        if node.level:
            anchor = package.split(".")[: len(package.split(".")) - (node.level - 1)]
            base = ".".join([*anchor, *([base] if base else [])])
        for alias in node.names:
            whole = f"{base}.{alias.name}"
            yield whole if whole in known else base

    def walk(node: ast.AST, local: bool) -> Iterator[Import]:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.Import | ast.ImportFrom):
                for target in targets(child):
                    if target.split(".")[0] in PACKAGES:
                        yield Import(module, target, child.lineno, local)
            inner = local or isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef)
            yield from walk(child, inner)

    yield from walk(ast.parse(path.read_text(), str(path)), False)


@cache
def imports() -> tuple[Import, ...]:
    return tuple(i for m, p in modules().items() for i in _imports_of(m, p) if i.target != m)


def _placed(i: Import) -> tuple[Where, Where]:
    source, target = where(i.source), where(i.target)
    assert source is not None and target is not None, i
    return source, target


def _shown(i: Import) -> str:
    return f"{modules()[i.source].relative_to(ROOT)}:{i.line} imports {i.target}"


def test_every_module_has_one_part_of_one_layer() -> None:
    unplaced = [m for m in modules() if m not in PACKAGES and where(m) is None]
    assert not unplaced, "modules no layer lists (add a part to LAYERS):\n" + "\n".join(unplaced)
    listed = [p for layer in LAYERS for part in layer.parts for p in part.modules]
    missing = [p for p in listed if not any(m == p or m.startswith(p + ".") for m in modules())]
    assert not missing, f"LAYERS lists modules that do not exist: {missing}"


def test_no_module_imports_a_higher_layer() -> None:
    upward = [
        f"{_shown(i)} ({LAYERS[s.layer].name} -> {LAYERS[t.layer].name})"
        for i in imports()
        for s, t in [_placed(i)]
        if t.layer > s.layer
    ]
    assert not upward, "imports that run up:\n" + "\n".join(upward)


def test_adapters_never_import_each_other() -> None:
    crossing = [
        f"{_shown(i)} ({s.part.name} -> {t.part.name})"
        for i in imports()
        for s, t in [_placed(i)]
        if s.layer == t.layer and LAYERS[s.layer].siblings and s.part != t.part
    ]
    assert not crossing, "adapters importing each other:\n" + "\n".join(crossing)


def test_the_match_core_builds_on_no_other_application_part() -> None:
    leaning = [
        f"{_shown(i)} ({t.part.name})"
        for i in imports()
        for s, t in [_placed(i)]
        if s.part.name == CORE and t.layer == s.layer and t.part.name != CORE
    ]
    assert not leaning, "the match core imports its own users:\n" + "\n".join(leaning)


def _local_imports() -> list[str]:
    return [f"local import: {i.source} ({_shown(i)})" for i in imports() if i.local]


def test_no_project_import_hides_inside_a_function() -> None:
    hidden = _local_imports()
    assert not hidden, "function-local imports of the project (move them up):\n" + "\n".join(hidden)


def _circles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Every strongly connected group of more than one node (Tarjan), each as a
    shortest way round from its first node, for the message."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(edges.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            group = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                group.append(top)
                if top == node:
                    break
            if len(group) > 1:
                groups.append(sorted(group))

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return [_way_round(g[0], set(g), edges) for g in groups]


def _way_round(start: str, group: set[str], edges: dict[str, set[str]]) -> list[str]:
    paths = {start: [start]}
    frontier = [start]
    while frontier:
        nxt: list[str] = []
        for node in frontier:
            for to in sorted(edges.get(node, ())):
                if to == start:
                    return [*paths[node], start]
                if to in group and to not in paths:
                    paths[to] = [*paths[node], to]
                    nxt.append(to)
        frontier = nxt
    raise AssertionError("a strongly connected group without a way round")


def _all_circles() -> list[str]:
    by_module: dict[str, set[str]] = defaultdict(set)
    by_part: dict[str, set[str]] = defaultdict(set)
    for i in imports():
        s, t = _placed(i)
        target = i.target if i.target in modules() else i.target.rpartition(".")[0]
        by_module[i.source].add(target)
        if s.prefix != t.prefix and s.layer == t.layer:
            by_part[s.prefix].add(t.prefix)
    found = [f"circle: {' -> '.join(c)}" for c in _circles(by_module)]
    return found + [f"circle: {' <-> '.join(c[:-1])}" for c in _circles(by_part)]


def test_no_circle_between_modules_or_parts() -> None:
    found = _all_circles()
    assert not found, "circles:\n" + "\n".join(found)


def _path(module: str) -> str:
    path = ROOT / module.replace(".", "/")
    return f"{module.replace('.', '/')}/" if path.is_dir() else f"{module.replace('.', '/')}.py"


def layer_table() -> str:
    """``LAYERS`` as docs/architecture.md quotes it: top layer first, a line per part."""
    lines = []
    for layer in reversed(LAYERS):
        notes = []
        if layer.siblings:
            notes.append("siblings: none imports another")
        if any(part.name == CORE for part in layer.parts):
            notes.append(f"{CORE} first: it imports none of the others")
        lines.append(f"{layer.name}" + (f"  ({'; '.join(notes)})" if notes else ""))
        for part in layer.parts:
            paths = textwrap.wrap(" ".join(_path(m) for m in part.modules), 60)
            lines.append(f"    {part.name:<30}{paths[0]}")
            lines += [f"    {'':<30}{more}" for more in paths[1:]]
    return "\n".join(lines)


def test_the_docs_quote_the_layers() -> None:
    docs = (ROOT / "docs" / "architecture.md").read_text()
    assert layer_table() in docs, (
        "docs/architecture.md must quote the layers as tests/test_layers.py lists them:\n"
        + layer_table()
    )
