"""The room's scorer: setups scored in worker processes, in turn between addresses, each in a time box, with quotas.

Most tests drive `lab.server.roomscore.Scorer` from an event loop of their own (on a thread of its own); the
quota tests hold every setup waiting (no worker starts), so what they see does
not depend on how fast anything runs. Nothing here sleeps or times anything.
"""

import asyncio
import itertools
import threading

import pytest
from test_room import join, report, room_server

from lab.page.urlstate import write_hash
from lab.server.room import RoomError, Verified, verify
from lab.server.roomscore import ScoreLimits, Scorer, Unchecked
from missions import find_mission

CACHE_ON = find_mission("cache-on")
TRACE = find_mission("real-traffic")


def in_thread(main):
    """`asyncio.run(main())` on a thread of its own (a browser test may leave a loop running on this one)."""
    outcome = {}

    def run():
        try:
            outcome["value"] = asyncio.run(main())
        except BaseException as exc:  # noqa: BLE001 -- handed to the test's thread
            outcome["error"] = exc
    thread = threading.Thread(target=run)
    thread.start()
    thread.join()
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]


def setup_of(mission, **changes):
    """The URL state the page writes for `mission`'s start with these keys changed."""
    return write_hash(mission.start.with_text({k.replace("_", "."): v for k, v in changes.items()}),
                      {"mission": mission.id})


def replicas(n):
    return write_hash(CACHE_ON.start.with_text({"fleet.replicas": str(n), "fleet.cache": "true"}))


def test_a_setup_is_scored_in_a_worker_as_the_page_scores_it():
    async def main():
        scorer = Scorer()
        try:
            return await scorer.score("127.0.0.2", "ada", "cache-on", replicas(2)), scorer.started
        finally:
            scorer.close()
    verified, started = in_thread(main)
    assert verified == verify("cache-on", replicas(2)) and verified.stars == 3 and started == 1


def test_addresses_take_turns_and_one_address_never_runs_two_setups_at_once():
    """Address A asks for three setups, then B for one: with one worker, B's is scored second, not fourth."""
    async def main():
        scorer = Scorer(limits=ScoreLimits(workers=1))
        done = []

        async def ask(address, who, n):
            await scorer.score(address, who, "cache-on", replicas(n))
            done.append((address, n))
        try:
            first = [asyncio.ensure_future(ask("127.0.0.2", f"a{n}", n)) for n in (5, 6, 7)]
            await asyncio.sleep(0)  # A's three are waiting before B asks
            await asyncio.gather(*first, ask("127.0.0.3", "b", 8))
        finally:
            scorer.close()
        return done
    assert in_thread(main) == [("127.0.0.2", 5), ("127.0.0.3", 8), ("127.0.0.2", 6), ("127.0.0.2", 7)]


def test_a_setup_past_its_time_box_is_unchecked_and_its_worker_replaced():
    async def main():
        scorer = Scorer(limits=ScoreLimits(workers=1, time_box_s=0.001))  # no simulation ends within a millisecond
        try:
            with pytest.raises(Unchecked, match="takes more than 0.001 s to check"):
                await scorer.score("127.0.0.2", "ada", "cache-on", replicas(3))
            with pytest.raises(Unchecked):
                await scorer.score("127.0.0.2", "ada", "cache-on", replicas(4))
            return scorer.started
        finally:
            scorer.close()
    assert in_thread(main) == 2  # the first worker was killed with its setup; a new one took the next


class Held(Scorer):
    """A scorer whose workers never start: every setup asked for stays waiting (until close answers 503)."""

    def _start_workers(self):
        pass


def _asking(scorer, asks):
    """Ask for each (address, participant, n) in order while nothing is scored; the status each one got at once
    (None: it is waiting)."""
    async def main():
        pending, statuses = [], []
        for address, who, n in asks:
            task = asyncio.ensure_future(scorer.score(address, who, "cache-on", replicas(n)))
            await asyncio.sleep(0)
            if task.done():
                exc = task.exception()
                statuses.append((exc.status, getattr(exc, "retry_after_s", None) is not None))
            else:
                statuses.append(None)
                pending.append(task)
        scorer.close()
        for task in pending:
            with pytest.raises(RoomError):
                await task
        return statuses
    return in_thread(main)


def test_one_participant_may_have_two_setups_waiting_and_one_address_eight():
    limits = ScoreLimits(per_participant=2, per_address=8, queue=100)
    asks = [("127.0.0.2", "ada", 1), ("127.0.0.2", "ada", 2), ("127.0.0.2", "ada", 3)]
    assert _asking(Held(limits=limits), asks) == [None, None, (429, True)]
    asks = [("127.0.0.2", f"p{n}", n) for n in range(1, 10)] + [("127.0.0.3", "bob", 10)]
    assert _asking(Held(limits=limits), asks) == [None] * 8 + [(429, True), None]


def test_the_queue_is_bounded_and_a_full_one_says_when_to_come_back():
    asks = [(f"127.0.0.{n + 2}", f"p{n}", n) for n in range(1, 6)]
    assert _asking(Held(limits=ScoreLimits(queue=4)), asks) == [None] * 4 + [(503, True)]


def test_an_address_that_spent_its_worker_seconds_waits_for_them_to_come_back():
    ticks = itertools.count(0.0, 1.0)  # the scorer's clock: a second passes at every look, a run "takes" one

    async def main():
        scorer = Scorer(limits=ScoreLimits(workers=1, seconds_burst=0.5, seconds_rate=0.001), clock=ticks.__next__)
        try:
            await scorer.score("127.0.0.2", "ada", "cache-on", replicas(2))  # spends more than the half second
            with pytest.raises(RoomError, match="share of the room's checking") as refused:
                await scorer.score("127.0.0.2", "ada", "cache-on", replicas(3))
            other = await scorer.score("127.0.0.3", "bob", "cache-on", replicas(3))  # another address is not held
            return refused.value, other
        finally:
            scorer.close()
    refused, other = in_thread(main)
    assert refused.status == 429 and refused.retry_after_s > 100  # a thousandth of a second back per second
    assert isinstance(other, Verified)


def test_the_same_setup_asked_twice_at_once_is_scored_once():
    async def main():
        scorer = Scorer(limits=ScoreLimits(workers=1))
        try:
            both = await asyncio.gather(scorer.score("127.0.0.2", "ada", "cache-on", replicas(3)),
                                        scorer.score("127.0.0.3", "bob", "cache-on", replicas(3)))
            return both, scorer.scored
        finally:
            scorer.close()
    (a, b), scored = in_thread(main)
    assert a == b and scored == 1


def test_the_trace_missions_stars_are_checked_on_its_trace():
    """A forged report: one replica, three stars. On synthetic chat it would earn them; on the trace, none."""
    forged = setup_of(TRACE, fleet_replicas="1")
    assert verify("real-traffic", forged) == Verified(0, 1, 7144.36)  # as `prefix-lab score` finds it
    passed = setup_of(TRACE, fleet_replicas="4", router_kind="cache_aware")
    assert verify("real-traffic", passed).stars == 3


def test_a_forged_report_on_the_trace_mission_is_refused_and_an_honest_one_listed(tmp_path):
    with room_server(tmp_path) as call:
        _, ada = join(call)
        forged = setup_of(TRACE, fleet_replicas="1")
        status, answer = call("POST", "/room/api/report", report(1, "real-traffic", real_traffic=(1, forged)), ada)
        assert status == 422 and "earns 0 star(s), not 1" in answer["error"]
        honest = setup_of(TRACE, fleet_replicas="4", router_kind="cache_aware")
        assert call("POST", "/room/api/report", report(2, "real-traffic", real_traffic=(3, honest)), ada)[0] == 200
        _, room = call("GET", "/room/api/room", headers={"Authorization": "Bearer facilitator-token"})
        best = next(m for m in room["missions"] if m["id"] == "real-traffic")["best"]
        assert [(b["replicas"], b["p99_ms"]) for b in best] == [(4, 1838.32)]  # the trace's p99, not chat's


def test_a_report_whose_setup_runs_out_of_time_is_stored_without_those_stars(tmp_path):
    with room_server(tmp_path) as call:
        call.room.scorer.limits = ScoreLimits(time_box_s=0.001)
        _, ada = join(call)
        status, answer = call("POST", "/room/api/report", report(1, "cache-on", cache_on=(1, replicas(4))), ada)
        assert status == 200 and "takes more than" in answer["unchecked"]["cache-on"]
        _, room = call("GET", "/room/api/room", headers={"Authorization": "Bearer facilitator-token"})
        first = room["missions"][0]
        assert (first["opened"], first["passed"]) == (1, 0)  # opened, its star not counted
