"""``TournamentPlugin``: tournaments' start-up and shut-down in the API process
(listed in ``service.app.PLUGINS``; the routes are in its ``ROUTES``).

Its lifespan runs inside the API's (which owns the pool, the event store,
Redis and the match service) and puts on ``app.state``: ``tournaments``
(``TournamentService``), ``tournament_hints`` (``Hints``) and
``tournament_settings``. It registers the after-commit hooks (a tournament
that moved is hinted and the matches of its new games started; a match that
ended wakes the runner) and starts two bounded background tasks: the runner
(``MATCHA_TOURNAMENT_RUNNER``, on by default) and the Redis hint listener.
Both are cancelled at shut-down, each waited for at most a few seconds.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from litestar import Litestar
from litestar.config.app import AppConfig
from litestar.plugins import InitPluginProtocol

from schemas.tournaments import ArenaPaired, RoundPaired
from service.store import StoredEvent
from service.tournaments import match_adapter
from service.tournaments.config import TournamentSettings
from service.tournaments.hints import Hints
from service.tournaments.runner import TournamentRunner
from service.tournaments.service import Outcome, TournamentService

log = logging.getLogger("matcha.tournaments")

STOP_WAIT_S = 5.0
INLINE_STARTS = 32
"""A command pairing at most this many games starts their matches before it
answers; a bigger round is left to the runner's next pass (woken at once), so
that an organiser's request does not wait for hundreds of match starts."""


def games_to_start(outcome: Outcome) -> list[match_adapter.GameToStart]:
    """The matches a command's new pairings need."""
    state = outcome.state
    out = []
    for stored in outcome.stored:
        if isinstance(stored.event, RoundPaired | ArenaPaired):
            for game in stored.event.games:
                if game.match_id is not None and not state.games[game.game].done:
                    out.append(
                        match_adapter.GameToStart(
                            tournament_id=outcome.tournament_id,
                            match_id=game.match_id,
                            players=game.players,
                            ladder_id=state.ladder_id,
                            ruleset=state.ruleset,
                        )
                    )
    return out


async def start_tournaments(app: Litestar) -> list[asyncio.Task[Any]]:
    state = app.state
    settings = TournamentSettings()
    hints = Hints(state.redis, state.settings.redis.prefix)
    service = TournamentService(state.pool)
    matches = state.matches

    async def start(game: match_adapter.GameToStart) -> bool:
        return await match_adapter.start_game(matches, game)

    async def after_tournament_commit(outcome: Outcome) -> None:
        await hints.tournament_moved(outcome.tournament_id)
        games = games_to_start(outcome)
        if len(games) > INLINE_STARTS:
            hints.results.set()
            return
        for game in games:
            await start(game)

    async def after_match_commit(match_id: str, stored: list[StoredEvent]) -> None:
        if match_adapter.ends_a_match(stored):
            await hints.match_ended()

    service.after_commit.append(after_tournament_commit)
    match_adapter.on_match_commit(matches, after_match_commit)
    state.tournaments = service
    state.tournament_hints = hints
    state.tournament_settings = settings
    tasks = [asyncio.create_task(hints.listen(), name="tournament-hints")]
    if settings.runner:
        runner = TournamentRunner(
            state.pool, state.store, service, start, wake=hints.results, poll_s=settings.poll_s
        )
        state.tournament_runner = runner
        tasks.append(asyncio.create_task(runner.run_forever(), name="tournament-runner"))
    return tasks


async def stop_tasks(tasks: list[asyncio.Task[Any]]) -> None:
    for task in tasks:
        task.cancel()
    for task in tasks:
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await asyncio.wait_for(task, STOP_WAIT_S)


@asynccontextmanager
async def tournaments_lifespan(app: Litestar) -> AsyncIterator[None]:
    tasks = await start_tournaments(app)
    try:
        yield
    finally:
        await stop_tasks(tasks)


class TournamentPlugin(InitPluginProtocol):
    def on_app_init(self, app_config: AppConfig) -> AppConfig:
        app_config.lifespan.append(tournaments_lifespan)
        return app_config
