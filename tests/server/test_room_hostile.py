"""The workshop room against hostile input: malformed reports, names, a full disk, and what the log keeps.

Each case is one a hostile-input probe found answered with a 500, accepted when
it should not be, or written where it should not be. The HTTP tests reuse the
room server of tests/server/test_room.py (a Tornado server in a thread); nothing sleeps.
"""

import logging

import pytest
from test_room import FACILITATOR, ONE_STAR, TOKEN, join, report, room_server

import lab.server.room
from lab.server.room import RoomError, read_name, read_report, verify


@pytest.mark.parametrize("current", [[], {}, 3, True])
def test_a_current_mission_that_is_not_text_is_a_400_not_a_500(tmp_path, current):
    with pytest.raises(RoomError, match="current"):
        read_report({"seq": 1, "current": current})
    with room_server(tmp_path) as call:
        _, ada = join(call)
        status, answer = call("POST", "/room/api/report", {"seq": 1, "current": current, "missions": {}}, ada)
        assert status == 400 and answer["error"].startswith("current:")


def test_a_setup_over_the_pages_budget_is_refused_naming_it(monkeypatch):
    import lab.page.view
    from lab.page.store import STORE

    monkeypatch.setattr(lab.page.view, "PAGE_BUDGET", 100)
    STORE.runs.clear()  # no run remembered from another test
    STORE.traffic.clear()
    verify.cache_clear()
    try:
        with pytest.raises(RoomError, match="more than 100 requests") as refused:
            verify("cache-on", ONE_STAR)
    finally:
        verify.cache_clear()
    assert refused.value.status == 422


@pytest.mark.parametrize("blank", ["\u3164", "\u2800\u2800", "\u115f\u1160", "\uffa0", "\u0301\u0301", "\u034f"])
def test_a_name_that_shows_nothing_is_refused(blank):
    with pytest.raises(RoomError, match="name: type a name"):
        read_name(blank)
    if not blank.startswith(("\u0301", "\u034f")):  # marks join the letter before them; fillers are spaces
        assert read_name(f"\u3164Ada{blank}") == "Ada"  # invisible padding goes, as spaces do


def test_names_that_look_the_same_are_one_name():
    key = lab.server.room.name_key
    assert len({key(n) for n in ("Ada", "ada", "ADA", "\uff21\uff44\uff41", " Ada\u3164")}) == 1
    assert key("Ada") != key("Ada B")


def test_a_name_someone_in_the_room_has_is_refused(tmp_path):
    with room_server(tmp_path) as call:
        join(call, "Ada")
        for same in ("ada", "  ADA ", "\uff21\uff44\uff41", "\u3164Ada"):
            status, answer = call("POST", "/room/api/join", {"name": same})
            assert status == 409 and "someone in the room is already called Ada" in answer["error"], same
        assert call("POST", "/room/api/join", {"name": "Ada L."})[0] == 200
        _, room = call("GET", "/room/api/room", headers=FACILITATOR)
        assert [p["name"] for p in room["participants"]] == ["Ada", "Ada L."]


def test_the_facilitators_token_is_never_written_to_the_log(tmp_path, caplog):
    caplog.set_level(logging.INFO)
    with room_server(tmp_path) as call:
        join(call)
        assert call("POST", f"/room/api/open?token={TOKEN}", {"mission": "nope"})[0] == 400
        assert call("GET", f"/room/api/nothing-here?token={TOKEN}")[0] == 404
        assert call("GET", f"/room/api/room?token={TOKEN}x")[0] == 403
        assert call("GET", f"/room/api/room?token={TOKEN}")[0] == 200
    logged = caplog.text
    assert "/room/api/open" in logged and "/room/api/nothing-here" in logged  # the requests are still logged
    assert TOKEN not in logged and "token=" not in logged.replace("token=[hidden]", "")


def _fill_the_disk(room):
    """Make the room's database refuse to grow, as a full disk does (SQLITE_FULL), on its own thread."""
    def cap():
        pages = room.store.db.execute("PRAGMA page_count").fetchone()[0]
        room.store.db.execute(f"PRAGMA max_page_count = {pages}")
    room._db.submit(cap).result()


def _free_the_disk(room):
    room._db.submit(lambda: room.store.db.execute("PRAGMA max_page_count = 1073741823")).result()


def test_a_full_data_folder_is_a_503_to_retry_and_loses_nothing(tmp_path):
    with room_server(tmp_path, report_burst=500, api_burst=500, join_burst=100) as call:
        _, ada = join(call)
        _fill_the_disk(call.room)
        answers = []
        for seq in range(1, 200):  # the first reports may fit in pages the database already has
            status, answer = call("POST", "/room/api/report", report(seq, "cache-on", cache_on=(1, ONE_STAR)), ada)
            answers.append(status)
            if status != 200:
                break
        assert status == 503, answers[-5:]
        assert "full" in answer["error"] and call.headers.get("Retry-After")
        joins = [call("POST", "/room/api/join", {"name": f"Bob {n}"})[0] for n in range(40)]
        assert 503 in joins and set(joins) <= {200, 503}
        _, room = call("GET", "/room/api/room", headers=FACILITATOR)
        assert len(room["participants"]) == 1 + joins.count(200)  # a refused join left nothing behind
        _free_the_disk(call.room)
        assert call("POST", "/room/api/report", report(seq, "cache-on", cache_on=(1, ONE_STAR)), ada)[0] == 200
        assert call("GET", "/room/api/me", headers=ada)[1]["seq"] == seq
