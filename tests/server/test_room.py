"""The workshop room: what a participant may write, what the facilitator's token guards, what survives a kill.

The HTTP tests serve an empty site with a room from a Tornado server in a
thread of this process; the durability test kills a writer process with
SIGKILL. Nothing here sleeps: event streams are read until the event.
"""

import asyncio
import http.client
import json
import re
import signal
import socket
import subprocess
import sys
import threading
from contextlib import contextmanager

import pytest
import tornado.netutil
from helpers import ROOT

from lab.cli.main import main
from lab.server.room import NAME_MAX, Progress, Report, RoomError, Store, read_name, read_report
from lab.server.roomserve import RoomLimits, RoomServer
from lab.server.serve import make_server

TOKEN = "facilitator-token"
ONE_STAR = "fleet.replicas=4"  # mission cache-on, fixed: the cache is on by default
THREE_STARS = "fleet.replicas=2"


@contextmanager
def room_server(tmp_path, **limits):
    """A server with a room on an empty site; yields a client: `call(method, path, body, headers)`."""
    (tmp_path / "site").mkdir(exist_ok=True)
    sockets = tornado.netutil.bind_sockets(0, "127.0.0.1", family=socket.AF_INET)
    port = sockets[0].getsockname()[1]
    room = RoomServer(tmp_path / "data", TOKEN, f"http://127.0.0.1:{port}/room/join", RoomLimits(**limits))
    loop = asyncio.new_event_loop()
    started = threading.Event()
    servers = []

    def run():
        asyncio.set_event_loop(loop)

        async def start():
            server = make_server(tmp_path / "site", room=room)
            server.add_sockets(sockets)
            servers.append(server)

        loop.run_until_complete(start())
        started.set()
        loop.run_forever()
        servers[0].stop()
        loop.run_until_complete(servers[0].close_all_connections())
        loop.close()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    assert started.wait(10)

    def call(method, path, body=None, headers=None):
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=20)
        data = body if isinstance(body, bytes | None) else json.dumps(body).encode()
        conn.request(method, path, data, {"Content-Type": "application/json", **(headers or {})})
        response = conn.getresponse()
        raw = response.read()
        conn.close()
        call.headers = dict(response.getheaders())
        try:
            return response.status, json.loads(raw)
        except ValueError:
            return response.status, raw

    call.port, call.room, call.headers = port, room, {}
    try:
        yield call
    finally:
        loop.call_soon_threadsafe(loop.stop)
        thread.join(10)
        room.close()


def join(call, name="Ada"):
    status, who = call("POST", "/room/api/join", {"name": name})
    assert status == 200, who
    return who, {"Authorization": f"Bearer {who['id']}.{who['secret']}"}


def report(seq, current=None, **missions):
    return {"seq": seq, "current": current,
            "missions": {k.replace("_", "-"): {"stars": s, "setup": setup} for k, (s, setup) in missions.items()}}


FACILITATOR = {"Authorization": f"Bearer {TOKEN}"}


# -- what a participant may send ---------------------------------------------------------------------

def test_a_name_is_text_of_bounded_length_without_control_characters():
    assert read_name("  Ada \n Lovelace ") == "Ada Lovelace"
    assert read_name("<img src=x onerror=alert(1)>") == "<img src=x onerror=alert(1)>"  # text: shown escaped
    for bad in ("", "   ", "x" * (NAME_MAX + 1), "Ada\x00", "Ada\u202e", 42, None):
        with pytest.raises(RoomError):
            read_name(bad)


@pytest.mark.parametrize("body, says", [
    ([], "JSON object"),
    ({"seq": 0}, "seq"),
    ({"seq": True}, "seq"),
    ({"seq": 1, "current": "no-such-mission"}, "current"),
    ({"seq": 1, "missions": {"no-such-mission": {"stars": 1, "setup": ""}}}, "no mission"),
    ({"seq": 1, "missions": {"cache-on": {"stars": 4, "setup": ""}}}, "0, 1, 2 or 3"),
    ({"seq": 1, "missions": {"cache-on": {"stars": 1}}}, "setup"),
    ({"seq": 1, "missions": {"cache-on": {"stars": 1, "setup": "x" * 2001}}}, "at most 2000"),
])
def test_a_malformed_report_is_refused_naming_the_field(body, says):
    with pytest.raises(RoomError, match=says):
        read_report(body)


def test_a_report_is_stored_with_the_servers_own_score_of_each_setup(tmp_path):
    with room_server(tmp_path) as call:
        _, ada = join(call)
        assert call("POST", "/room/api/report", report(1, "cache-on"), ada) == (200, {"seq": 1})
        assert call("POST", "/room/api/report", report(2, "cache-on", cache_on=(1, ONE_STAR)), ada)[0] == 200
        status, room = call("GET", "/room/api/room", headers=FACILITATOR)
        first = room["missions"][0]
        assert (first["opened"], first["passed"], first["stars"]) == (1, 1, [0, 1, 0, 0])
        assert first["best"][0]["replicas"] == 4 and first["best"][0]["p99_ms"] > 0


def test_a_report_claiming_more_stars_than_its_setup_earns_is_refused(tmp_path):
    with room_server(tmp_path) as call:
        _, ada = join(call)
        status, answer = call("POST", "/room/api/report", report(1, "cache-on", cache_on=(2, "fleet.replicas=2&"
                                                                                   "fleet.cache=false")), ada)
        assert status == 422 and "earns 0 star(s), not 2" in answer["error"]  # simulated: TTFT p50 is far over
        status, answer = call("POST", "/room/api/report", report(1, "cache-on", cache_on=(3, ONE_STAR)), ada)
        assert status == 422 and "cannot earn 3 star(s): 3 star(s) need replicas at most 3; it has 4" in \
            answer["error"]  # turned down before anything runs: the fleet's size alone rules it out
        status, answer = call("POST", "/room/api/report", report(1, "cache-on", cache_on=(1, "fleet.bogus=1")), ada)
        assert status == 400 and "not a setup the page writes" in answer["error"]


def test_a_participant_writes_only_their_own_row(tmp_path):
    with room_server(tmp_path) as call:
        ada_id, ada = join(call, "Ada")
        bob_id, bob = join(call, "Bob")
        forged = {"Authorization": f"Bearer {ada_id['id']}.{bob_id['secret']}"}  # Ada's id, Bob's secret
        for headers in (forged, {}, {"Authorization": f"Bearer {ada_id['id']}"}):
            assert call("POST", "/room/api/report", report(1, "cache-on"), headers)[0] == 401
        assert call("POST", "/room/api/report", report(1, "timestamp"), bob)[0] == 200
        _, room = call("GET", "/room/api/room", headers=FACILITATOR)
        assert {p["name"]: p["current"] and p["current"]["mission"] for p in room["participants"]} == \
            {"Ada": None, "Bob": "timestamp"}


def test_a_repeated_or_older_sequence_number_is_refused_with_the_last_one(tmp_path):
    with room_server(tmp_path) as call:
        _, ada = join(call)
        assert call("POST", "/room/api/report", report(5, "cache-on"), ada)[0] == 200
        assert call("POST", "/room/api/report", report(5, None), ada) == (409, {
            "error": "seq 5 is not after the last report's (5)", "seq": 5})
        assert call("GET", "/room/api/me", headers=ada)[1]["seq"] == 5


def test_bodies_are_small_json(tmp_path):
    with room_server(tmp_path) as call:
        _, ada = join(call)
        huge = json.dumps(report(1, "cache-on")).encode() + b" " * 20_000
        assert call("POST", "/room/api/report", huge, ada)[0] == 413
        form = {"Content-Type": "application/x-www-form-urlencoded", **ada}
        assert call("POST", "/room/api/report", b"seq=1", form)[0] == 415
        assert call("POST", "/room/api/report", b"{not json", ada)[0] == 400


def test_rate_limits_answer_429_with_retry_after(tmp_path):
    with room_server(tmp_path, report_rate=0.01, report_burst=3, join_rate=0.01, join_burst=2) as call:
        _, ada = join(call)
        join(call, "Bob")
        assert call("POST", "/room/api/join", {"name": "Cy"})[0] == 429  # a third join from this address
        answers = [call("POST", "/room/api/report", report(seq, "cache-on"), ada)[0] for seq in range(1, 6)]
        assert answers == [200, 200, 200, 429, 429]


# -- the facilitator --------------------------------------------------------------------------------

@pytest.mark.parametrize("method, path, body", [
    ("GET", "/room/facilitator", None),
    ("GET", "/room/api/room", None),
    ("GET", "/room/api/stream", None),
    ("GET", "/room/api/export.csv", None),
    ("POST", "/room/api/open", {"mission": "round-robin"}),
    ("POST", "/room/api/clear", {"confirm": "clear"}),
])
def test_the_facilitators_routes_need_the_token(tmp_path, method, path, body):
    with room_server(tmp_path) as call:
        join(call)
        assert call(method, path, body)[0] == 401
        assert call(method, path + "?token=guess", body)[0] == 403
        assert call(method, path, body, {"Authorization": "Bearer guess"})[0] == 403
        _, room = call("GET", "/room/api/room", headers=FACILITATOR)
        assert len(room["participants"]) == 1 and room["open"] is None  # nothing was done


def test_the_token_is_in_no_participant_page_or_answer(tmp_path):
    with room_server(tmp_path) as call:
        who, ada = join(call)
        seen = [call("GET", "/room/join")[1], call("GET", "/room/room.js")[1], json.dumps(who),
                json.dumps(call("GET", "/room/api/me", headers=ada)[1])]
        assert all(TOKEN not in (s.decode() if isinstance(s, bytes) else s) for s in seen)
        page = call("GET", "/room/facilitator?token=" + TOKEN)[1].decode()
        assert "<svg" in page and "room/join" in page  # the QR code of the join address


def test_clearing_the_room_needs_the_word_clear(tmp_path):
    with room_server(tmp_path) as call:
        _, ada = join(call)
        assert call("POST", "/room/api/clear", {"confirm": "yes"}, FACILITATOR)[0] == 400
        assert call("GET", "/room/api/me", headers=ada)[0] == 200
        assert call("POST", "/room/api/clear", {"confirm": "clear"}, FACILITATOR)[0] == 200
        assert call("GET", "/room/api/me", headers=ada)[0] == 401  # the page asks to join again


def test_the_csv_keeps_every_name_as_text(tmp_path):
    with room_server(tmp_path) as call:
        _, ada = join(call, "=HYPERLINK(\"http://x\")")
        call("POST", "/room/api/report", report(1, "cache-on", cache_on=(3, THREE_STARS)), ada)
        status, text = call("GET", f"/room/api/export.csv?token={TOKEN}")
        lines = text.decode().splitlines()
        assert status == 200 and lines[0].startswith("participant,name,joined,mission,number,stars")
        assert ",\"'=HYPERLINK(\"\"http://x\"\")\"," in lines[1] and ",cache-on,1,3,2," in lines[1]


def read_event(port, path, event):
    """Open an event stream and return the data of the first `event`, skipping heartbeats."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=20)
    conn.request("GET", path)
    response = conn.getresponse()
    assert response.getheader("Content-Type") == "text/event-stream; charset=utf-8"
    name = None
    while True:
        line = response.fp.readline().decode().rstrip("\n")
        if line.startswith("event: "):
            name = line[7:]
        elif line.startswith("data: ") and name == event:
            conn.close()
            return json.loads(line[6:])


def test_opening_a_mission_for_everyone_reaches_the_participants_stream(tmp_path):
    with room_server(tmp_path) as call:
        assert read_event(call.port, "/room/api/events", "mission") is None
        status, opened = call("POST", "/room/api/open", {"mission": "round-robin"}, FACILITATOR)
        assert status == 200 and (opened["n"], opened["mission"]) == (3, "round-robin")
        assert read_event(call.port, "/room/api/events", "mission")["title"] == "Round robin spreads the memory thin"
        assert call("POST", "/room/api/open", {"mission": "nope"}, FACILITATOR)[0] == 400


# -- the store ----------------------------------------------------------------------------------------

def test_who_is_stuck_longest_and_the_best_setups_come_first(tmp_path):
    now = [1000.0]
    store = Store(tmp_path, clock=lambda: now[0])
    ada, _ = store.join("Ada")
    bob, _ = store.join("Bob")
    cy, _ = store.join("Cy")
    store.record(ada, Report(1, "timestamp", {}), {})
    now[0] += 60
    store.record(bob, Report(1, "timestamp", {}), {})
    store.record(cy, Report(1, "cache-on", {"cache-on": Progress(1, ONE_STAR)}), {"cache-on": _v(1, 4, 90.0)})
    store.record(ada, Report(2, "timestamp", {"cache-on": Progress(3, THREE_STARS)}), {"cache-on": _v(3, 2, 120.0)})
    now[0] += 60
    store.record(bob, Report(2, "timestamp", {"cache-on": Progress(2, "fleet.replicas=3")}), {"cache-on": _v(2, 3, 80)})
    room = store.snapshot()
    assert [(s["name"], s["n"], s["since_s"]) for s in room["stuck"]] == [("Ada", 2, 120.0), ("Bob", 2, 60.0)]
    assert [(b["name"], b["replicas"]) for b in room["missions"][0]["best"]] == [("Ada", 2), ("Bob", 3), ("Cy", 4)]
    assert room["missions"][0]["stars"] == [0, 1, 1, 1] and room["missions"][1]["opened"] == 2


def _v(stars, replicas, p99):
    from lab.server.room import Verified

    return Verified(stars, replicas, p99)


WRITER = """
import sys
from lab.server.room import Progress, Report, Store, Verified
store = Store(sys.argv[1])
pid, _ = store.join("Ada")
seq = 0
while True:
    seq += 1
    store.record(pid, Report(seq, "cache-on", {"cache-on": Progress(1, "fleet.replicas=4")}),
                 {"cache-on": Verified(1, 4, 90.0)})
    print(pid, seq, flush=True)
"""


def test_every_acknowledged_write_survives_a_sigkill(tmp_path):
    writer = subprocess.Popen([sys.executable, "-c", WRITER, str(tmp_path)], stdout=subprocess.PIPE, text=True,
                              cwd=ROOT)
    acked = []
    for line in writer.stdout:
        acked.append(line.split())
        if len(acked) == 300:
            writer.send_signal(signal.SIGKILL)  # mid-write: it is writing the next report
            break
    writer.wait()
    store = Store(tmp_path)
    assert all(store.has_report(pid, int(seq)) for pid, seq in acked)
    assert store.last_seq(acked[0][0]) >= 300


def test_serve_data_needs_room(capsys):
    assert main(["serve", "--data", "somewhere"]) == 2
    assert "--data is the workshop room's folder: add --room" in capsys.readouterr().err


def _serve_without_running(monkeypatch):
    import lab.server.serve

    monkeypatch.setattr(lab.server.serve, "site_is_current", lambda site: True)
    monkeypatch.setattr(lab.server.serve.asyncio, "run", lambda main: main.close())


def test_serve_room_prints_both_addresses_and_keeps_its_data_beside_the_site(tmp_path, monkeypatch, capsys):
    _serve_without_running(monkeypatch)
    assert main(["serve", "--room", "--dir", str(tmp_path / "site"), "--port", "0"]) == 0
    out = capsys.readouterr().out
    join_at = re.search(r"participants join at (http://127\.0\.0\.1:\d+/room/join)\n", out)
    token = re.search(r"(http://127\.0\.0\.1:\d+/room/)facilitator\?token=([\w-]{20,})\n", out)
    assert join_at and token and join_at.group(1) == token.group(1) + "join"
    assert f"the room's data is in {tmp_path / 'room-data'}" in out and (tmp_path / "room-data" / "room.sqlite3").is_file()
    assert "add --host 0.0.0.0" in out


def test_serve_room_with_an_unusable_data_folder_says_so_in_one_line(tmp_path, monkeypatch, capsys):
    _serve_without_running(monkeypatch)
    taken = tmp_path / "a-file"
    taken.write_text("not a folder")
    assert main(["serve", "--room", "--data", str(taken), "--dir", str(tmp_path / "site"), "--port", "0"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"prefix-lab: error: cannot use {taken} for the room's data") and err.count("\n") == 1
