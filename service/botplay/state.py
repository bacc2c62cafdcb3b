"""What bot play keeps on ``app.state.botplay``."""

from __future__ import annotations

from dataclasses import dataclass

from service.botplay.accounts import BotAccounts
from service.botplay.config import BotPlaySettings
from service.botplay.driver import BotDriver
from service.botplay.match_port import MatchPort
from service.botplay.odds import OddsService


@dataclass(frozen=True, kw_only=True)
class BotPlay:
    settings: BotPlaySettings
    port: MatchPort
    accounts: BotAccounts
    driver: BotDriver
    odds: OddsService
