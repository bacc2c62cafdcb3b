"""Everything after the commit survives the faults that used to stall it: Redis
stopped and started mid-job under a whole-match load, a worker killed mid-drain,
an API killed right after committing a match's last command. The worker stays
up, and every archive and rating is there within 10 s."""

from __future__ import annotations

import asyncio
import random
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import psycopg
import pytest
from harness import Account, Api, play_out
from redis import Redis
from rq.job import Job

from service.broker.jobs import queue
from service.embedded import free_port
from service.replays import build_from_log

from .processes import (
    ADMIN_TOKEN,
    OwnRedis,
    Service,
    service_database,
    service_env,
    wait_for,
    wait_ready,
    write_played_matches,
)

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]

WITHIN_S = 10.0


@pytest.fixture
def databases(pg_server_url: str) -> Iterator[tuple[str, str]]:
    with service_database(pg_server_url) as urls:
        yield urls


def _archived(conn: psycopg.Connection, match_ids: list[str]) -> int:
    return int(
        conn.execute(
            "SELECT count(*) FROM replay_archives WHERE match_id = ANY(%s)", (match_ids,)
        ).fetchone()[0]
    )


def _rated(conn: psycopg.Connection, ladder_id: str) -> int:
    """Matches the ladder's ratings include."""
    row = conn.execute(
        "SELECT matches FROM ladder_projections WHERE ladder_id = %s", (ladder_id,)
    ).fetchone()
    return 0 if row is None else int(row[0])


async def _ladder_with_pairs(api: Api, pairs: int) -> tuple[str, Account, list[Account]]:
    organiser = await api.organiser()
    players = [await api.register() for _ in range(2 * pairs)]
    ladder_id = await api.ladder(organiser, "duel", members=players)
    return ladder_id, organiser, players


def test_redis_stopped_and_started_mid_job_under_load_leaves_the_worker_up_and_nothing_behind(
    tmp_path: Path, databases: tuple[str, str], redis_prefix: str
) -> None:
    app_url, _ = databases
    own = OwnRedis(tmp_path / "redis")
    own.start()
    service = Service(tmp_path, service_env(app_url, own.url, redis_prefix))
    try:
        port = free_port()
        base = f"http://127.0.0.1:{port}"
        api_proc = service.api("api", port)
        worker = service.worker("worker", "--poll", "2")  # RQ's forking worker, as deployed
        wait_ready(base, api_proc, "the API")

        def worker_alive() -> None:
            assert worker.poll() is None, f"the worker exited\n{service.log('worker')}"

        async def scenario() -> tuple[str, list[str], Job]:
            async with httpx.AsyncClient(base_url=base, timeout=30) as client:
                api = Api(client, ADMIN_TOKEN)
                ladder_id, organiser, players = await _ladder_with_pairs(api, 4)
                slow_ladder, _, _ = await _ladder_with_pairs(api, 1)
                # A job in the middle of its run when Redis goes: a recompute that holds
                # its transaction for 4 s (on a ladder of its own, so it delays no rating).
                job = queue("ratings", redis=Redis.from_url(own.url), prefix=redis_prefix).enqueue(
                    "workers.ratings.update_ladder",
                    slow_ladder,
                    full=True,
                    pause_s=4.0,
                    job_timeout=120,
                )
                pairs = [(players[i], players[i + 1]) for i in range(0, len(players), 2)]
                match_ids = [await api.pair(ladder_id, organiser, a, b) for a, b in pairs]

                async def load() -> None:
                    rng = random.Random(17)
                    await asyncio.gather(
                        *(
                            play_out(api, m, seats, random.Random(rng.random()))
                            for m, seats in zip(match_ids, pairs, strict=True)
                        )
                    )

                playing = asyncio.create_task(load())
                await asyncio.to_thread(
                    wait_for,
                    lambda: job.get_status(refresh=True) == "started",
                    60,
                    "the job started",
                    worker_alive,
                )
                own.stop()  # mid-job, mid-load
                stopped_at = time.monotonic()
                await asyncio.wait_for(playing, 180)  # moves are accepted with Redis gone
                # Down longer than the job runs: its work horse ends while the broker is
                # away and cannot report, which is where RQ used to give up and exit.
                await asyncio.sleep(max(0.0, stopped_at + 8.0 - time.monotonic()))
            return ladder_id, match_ids, job

        ladder_id, match_ids, job = asyncio.run(scenario())
        worker_alive()
        own.start()
        with psycopg.connect(app_url, autocommit=True) as conn:
            took = wait_for(
                lambda: (
                    _archived(conn, match_ids) == len(match_ids)
                    and _rated(conn, ladder_id) == len(match_ids)
                ),
                WITHIN_S,
                "every archive and rating",
                worker_alive,
            )
            for match_id in match_ids:
                built = build_from_log(conn, match_id)
                stored = conn.execute(
                    "SELECT archive FROM replay_archives WHERE match_id = %s", (match_id,)
                ).fetchone()
                assert built is not None and built.data == bytes(stored[0])
        assert took <= WITHIN_S
        # The job Redis left behind ran again to its end, on the same worker.
        wait_for(
            lambda: job.get_status(refresh=True) == "finished",
            60,
            "the interrupted job ran again",
            worker_alive,
        )
        worker_alive()
    finally:
        service.stop_all()
        own.stop()


def test_a_worker_killed_mid_drain_and_started_again_builds_every_archive_within_10_s(
    tmp_path: Path, databases: tuple[str, str], redis_server_url: str, redis_prefix: str
) -> None:
    app_url, owner_url = databases
    match_ids = write_played_matches(owner_url, 300)
    service = Service(tmp_path, service_env(app_url, redis_server_url, redis_prefix))
    try:
        # No sweep: the log position alone must carry the restarted worker to the end.
        first = service.worker("first", "--no-catch-up", "--poll", "1")
        with psycopg.connect(app_url, autocommit=True) as conn:
            wait_for(
                lambda: _archived(conn, match_ids) > 0,
                60,
                "the drain started",
                lambda: None if first.poll() is None else pytest.fail(service.log("first")),
            )
            service.kill("first")  # SIGKILL, mid-drain
            built_before = _archived(conn, match_ids)
            assert 0 < built_before < len(match_ids), "the drain was not cut short"

            # Its pass's row is free at once: no lock outlives a dead worker.
            with psycopg.connect(app_url) as other:
                wait_for(lambda: _claimable(other), 5, "the runner's row freed")

            again = service.worker("again", "--no-catch-up", "--poll", "1")
            alive = lambda: None if again.poll() is None else pytest.fail(service.log("again"))  # noqa: E731
            # From the moment the new worker runs (its interpreter's start is not the
            # projection's to count):
            wait_for(
                lambda: "archives projection runner started" in service.log("again", None),
                60,
                "the new worker started",
                alive,
            )
            took = wait_for(
                lambda: _archived(conn, match_ids) == len(match_ids),
                WITHIN_S,
                "every archive after the restart",
                alive,
            )
            assert took <= WITHIN_S
            for match_id in random.Random(1).sample(match_ids, 5):
                built = build_from_log(conn, match_id)
                stored = conn.execute(
                    "SELECT archive FROM replay_archives WHERE match_id = %s", (match_id,)
                ).fetchone()
                assert built is not None and built.data == bytes(stored[0])
    finally:
        service.stop_all()


def _claimable(conn: psycopg.Connection) -> bool:
    try:
        conn.execute("SELECT 1 FROM projection_positions WHERE name = 'archives' FOR UPDATE NOWAIT")
        return True
    except psycopg.errors.LockNotAvailable:
        return False
    finally:
        conn.rollback()


def test_an_api_killed_right_after_committing_a_final_command_still_gets_its_archive_and_rating(
    tmp_path: Path, databases: tuple[str, str], redis_server_url: str, redis_prefix: str
) -> None:
    app_url, _ = databases
    service = Service(tmp_path, service_env(app_url, redis_server_url, redis_prefix))
    try:
        port = free_port()
        base = f"http://127.0.0.1:{port}"
        # The API kills itself (SIGKILL) after the commit of a match_ended, before any
        # after-commit hook: no hint, no publish, nothing queued.
        api_proc = service.api("api", port, MATCHA_FAULT_KILL_AFTER_COMMIT="match_ended")
        worker = service.worker("worker", "--no-catch-up", "--poll", "2")
        wait_ready(base, api_proc, "the API")

        async def scenario() -> tuple[str, str]:
            async with httpx.AsyncClient(base_url=base, timeout=30) as client:
                api = Api(client, ADMIN_TOKEN)
                ladder_id, match_id, a, b = await api.new_ladder_match("duel")
                with pytest.raises(httpx.TransportError):  # the answer never comes
                    await play_out(api, match_id, (a, b), random.Random(5))
            return ladder_id, match_id

        ladder_id, match_id = asyncio.run(scenario())
        assert api_proc.wait(10) == -signal.SIGKILL
        with psycopg.connect(app_url, autocommit=True) as conn:
            ended = conn.execute(
                "SELECT 1 FROM events WHERE match_id = %s AND type = 'match_ended'", (match_id,)
            ).fetchone()
            assert ended is not None, "the final command was committed"
            wait_for(
                lambda: _archived(conn, [match_id]) == 1 and _rated(conn, ladder_id) == 1,
                WITHIN_S,
                "the archive and the rating",
                lambda: None if worker.poll() is None else pytest.fail(service.log("worker")),
            )
    finally:
        service.stop_all()
