"""Ruleset names are spelt once (``schemas.rules.RulesetName``); every other place
that must list them is held to it: the rulesets themselves, the ladders'
CHECK in the database, the practice page's choice, the routes' bodies."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import get_args, get_type_hints

import psycopg
import pytest

from schemas.rules import RULESET_NAMES, RULESETS, Ruleset, RulesetName
from service.api.ladders import LadderBody
from service.botplay.routes import PracticeBody
from service.ladders import Ladder

ROOT = Path(__file__).resolve().parent.parent


def test_every_ruleset_is_named_once_in_the_schema_and_listed() -> None:
    assert tuple(RULESETS) == RULESET_NAMES
    assert all(RULESETS[name].name == name for name in RULESET_NAMES)
    assert get_type_hints(Ruleset)["name"] == RulesetName


@pytest.mark.parametrize(
    ("struct", "field"), [(LadderBody, "ruleset"), (PracticeBody, "ruleset"), (Ladder, "ruleset")]
)
def test_the_routes_take_the_schemas_ruleset_names(struct: type, field: str) -> None:
    assert set(get_args(get_type_hints(struct)[field])) == set(RULESET_NAMES)


def test_the_database_allows_exactly_the_schemas_ruleset_names(admin_database_url: str) -> None:
    with psycopg.connect(admin_database_url) as conn:
        row = conn.execute(
            "SELECT pg_get_constraintdef(c.oid) FROM pg_constraint c"
            " JOIN pg_class t ON t.oid = c.conrelid"
            " WHERE t.relname = 'ladders' AND c.contype = 'c'"
            "   AND pg_get_constraintdef(c.oid) LIKE '%ruleset%'"
        ).fetchone()
    assert row is not None, "the ladders table has no CHECK on its ruleset"
    assert set(re.findall(r"'(\w+)'::text", row[0])) == set(RULESET_NAMES), row[0]


def test_the_practice_page_offers_exactly_the_schemas_rulesets() -> None:
    page = (ROOT / "service" / "web" / "static" / "practice.js").read_text()
    found = re.search(r'choice\("practice-ruleset", "Rules", (\[\[.*?\]\])\)', page)
    assert found is not None, "practice.js no longer lists its rulesets where this test looks"
    offered = [value for value, _label in json.loads(found.group(1))]
    assert tuple(offered) == RULESET_NAMES
