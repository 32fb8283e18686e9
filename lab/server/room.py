"""The workshop room's storage and rules: who joined, what each has passed, what the facilitator opened.

One SQLite file (`room.sqlite3`) in the data folder, in WAL mode with
`synchronous=FULL`: a write is acknowledged only after its commit reached
the disk, so neither a restart nor a SIGKILL loses one. Plain SQL, no ORM;
the schema is created on start and carries a version (`PRAGMA
user_version`). `Store` is used from one thread at a time (the server runs
it on a single worker thread that owns the connection).

Tables:

    room          one row: the room's id (a new one when the room is cleared) and when it began
    participants  id, sha256 of the participant's secret, display name, the mission they are on and since when,
                  the last report's sequence number
    progress      one row per participant and mission they opened: best stars, the setup (URL state) that
                  earned them with its replicas and TTFT p99, when they opened it and when they first passed it
    reports       every acknowledged report (participant, seq, when, its JSON): the room's history, and
                  what the load test checks after a SIGKILL
    broadcasts    the missions the facilitator opened for everyone, newest last

What comes from a participant is checked here before it is stored (`read_name`,
`read_report`): names are text of at most `NAME_MAX` characters without
control characters, with something visible in them (characters that draw
nothing, as the Hangul filler or the Braille blank, count as spaces), and no
two participants' names look alike (`name_key`: the same letters in any case
or width); a report names known missions only, with stars 0-3 and a setup
that parses as a URL state. The stars themselves are checked in two steps:
`precheck` turns down, without running anything, a setup that cannot earn
the stars claimed (it changes a key the mission keeps fixed, or its fleet
misses a size threshold: `missions.unearnable`); `verify` scores the rest on
the mission with the page's own code, within the page's budget of requests,
on the mission's own traffic (a trace mission replays its trace, as the
page does). A report may claim no more stars than its setup earns.

A disk that fills up, or a database that cannot be written for another
reason, is a `RoomError` with status 503: nothing was stored, and the page
sends its whole state again later.
"""

import contextlib
import csv
import functools
import hashlib
import hmac
import io
import json
import os
import re
import secrets
import sqlite3
import time
import unicodedata
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from missions import MISSIONS, Mission, find_mission, score, unearnable

__all__ = ["NAME_MAX", "REPORT_MAX_BYTES", "SETUP_MAX", "Progress", "Report", "RoomError", "Store", "Verified",
           "mission_number", "name_key", "new_secret", "precheck", "read_name", "read_report", "secret_matches",
           "verify"]

SCHEMA_VERSION = 1
NAME_MAX = 40  # characters in a display name
SETUP_MAX = 2000  # characters in a setup's URL state (the page's own memo keeps none longer)
REPORT_MAX_BYTES = 16_384  # a report's JSON body; twelve missions with long setups fit in a third of it
_MISSION_IDS = {m.id: n for n, m in enumerate(MISSIONS, 1)}
# Letters that draw nothing (fillers and blanks the Unicode tables do not call spaces): read as spaces in a name.
_BLANKS = dict.fromkeys(map(ord, "\u115f\u1160\u17b4\u17b5\u2800\u3164\uffa0"), " ")
_FULL = "database or disk is full"  # SQLite's words for SQLITE_FULL

SCHEMA = """
CREATE TABLE IF NOT EXISTS room (
    id TEXT NOT NULL,
    began REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS participants (
    id TEXT PRIMARY KEY,
    secret_sha256 TEXT NOT NULL,
    name TEXT NOT NULL,
    joined REAL NOT NULL,
    seen REAL NOT NULL,
    current TEXT,              -- the mission the page shows now, or NULL for free play
    current_since REAL,        -- when the page went to that mission
    seq INTEGER NOT NULL DEFAULT 0  -- the last report's sequence number
);
CREATE TABLE IF NOT EXISTS progress (
    participant TEXT NOT NULL REFERENCES participants(id) ON DELETE CASCADE,
    mission TEXT NOT NULL,
    stars INTEGER NOT NULL,
    setup TEXT,                -- the URL state that earned the stars (NULL while none)
    replicas INTEGER,          -- of that setup
    p99_ms REAL,               -- of that setup, as the server scored it
    opened REAL NOT NULL,
    passed REAL,               -- when the first star came
    PRIMARY KEY (participant, mission)
);
CREATE TABLE IF NOT EXISTS reports (
    participant TEXT NOT NULL,
    seq INTEGER NOT NULL,
    at REAL NOT NULL,
    body TEXT NOT NULL,
    PRIMARY KEY (participant, seq)
);
CREATE TABLE IF NOT EXISTS broadcasts (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    mission TEXT NOT NULL,
    at REAL NOT NULL
);
"""


class RoomError(ValueError):
    """A request the room refuses; `status` is the HTTP answer, the message says what is wrong."""

    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.status = status


@dataclass(frozen=True, slots=True)
class Progress:
    """One mission in a report: the player's best stars and the setup that earned them."""

    stars: int
    setup: str | None  # None while the mission has no star


@dataclass(frozen=True, slots=True)
class Report:
    """What a participant's page sends: everything it knows, so that any one report can stand alone."""

    seq: int  # grows with every report of this participant; a report at or below the last stored is refused
    current: str | None  # the mission shown now; None in free play
    missions: Mapping[str, Progress]


@dataclass(frozen=True, slots=True)
class Verified:
    """A setup scored on a mission by the server."""

    stars: int
    replicas: int
    p99_ms: float


def mission_number(mission_id: str) -> int:
    """The mission's place in the list, as the page numbers it (1 for the first)."""
    return _MISSION_IDS[mission_id]


def new_secret() -> str:
    return secrets.token_urlsafe(24)


def read_name(raw: Any) -> str:
    """A display name: text, spaces collapsed, 1 to NAME_MAX characters, no control characters, something visible."""
    if not isinstance(raw, str):
        raise RoomError("name: give your name as text")
    name = " ".join(raw.translate(_BLANKS).split())
    if len(name) > NAME_MAX:
        raise RoomError(f"name: at most {NAME_MAX} characters, please")
    if any(unicodedata.category(c) in ("Cc", "Cf", "Cs", "Co", "Cn") for c in name):
        raise RoomError("name: use letters, digits and punctuation only")
    if not any(unicodedata.category(c)[0] in "LNPS" for c in name):  # nothing but spaces and accents
        raise RoomError("name: type a name for the room to see")
    return name


def name_key(name: str) -> str:
    """What two names that look the same have in common: letters folded for case and width, blanks dropped."""
    return " ".join(unicodedata.normalize("NFKC", name.translate(_BLANKS)).casefold().split())


def read_report(data: Any) -> Report:
    """A report from parsed JSON: `{"seq": n, "current": id|null, "missions": {id: {"stars": n, "setup": hash}}}`."""
    if not isinstance(data, dict):
        raise RoomError("a report is a JSON object")
    seq = data.get("seq")
    if not isinstance(seq, int) or isinstance(seq, bool) or not 0 < seq < 2**53:
        raise RoomError("seq: a positive whole number, larger than the last report's")
    current = data.get("current")
    if current is not None and not isinstance(current, str):
        raise RoomError("current: the id of the mission shown, or null in free play")
    if current is not None and current not in _MISSION_IDS:
        raise RoomError(f"current: no mission {current[:40]!r}")
    raw = data.get("missions", {})
    if not isinstance(raw, dict):
        raise RoomError("missions: an object of mission id -> {stars, setup}")
    missions: dict[str, Progress] = {}
    for mission_id, entry in raw.items():
        if mission_id not in _MISSION_IDS:
            raise RoomError(f"missions: no mission {mission_id[:40]!r}")
        if not isinstance(entry, dict):
            raise RoomError(f"missions.{mission_id}: an object with stars and setup")
        stars, setup = entry.get("stars"), entry.get("setup")
        if not isinstance(stars, int) or isinstance(stars, bool) or not 0 <= stars <= 3:
            raise RoomError(f"missions.{mission_id}.stars: 0, 1, 2 or 3")
        if stars and not isinstance(setup, str):
            raise RoomError(f"missions.{mission_id}.setup: the URL state that earned the stars")
        if setup is not None and (not isinstance(setup, str) or len(setup) > SETUP_MAX):
            raise RoomError(f"missions.{mission_id}.setup: a URL state of at most {SETUP_MAX} characters")
        missions[mission_id] = Progress(stars, setup if stars else None)
    return Report(seq, current, missions)


def _setup(mission_id: str, setup: str) -> tuple[Mission, Any]:
    """The mission and the scenario of `setup` (a URL state); RoomError if the page would not write it."""
    from lab.page.urlstate import read_hash

    hashed = read_hash(setup)
    if hashed.notices or set(hashed.page) - {"mission", "unlock"}:
        raise RoomError(f"missions.{mission_id}.setup: not a setup the page writes ({setup[:60]!r})")
    mission = find_mission(mission_id, MISSIONS)
    if mission is None:
        raise RoomError(f"missions: no mission {mission_id[:40]!r}")
    return mission, hashed.scenario


def precheck(mission_id: str, setup: str, stars: int) -> None:
    """RoomError (422) if `setup` cannot earn `stars` on the mission, known without running it (and 400 if the
    page would not write it): what the room refuses before it spends a simulation on a claim."""
    mission, scenario = _setup(mission_id, setup)
    reason = unearnable(mission, scenario, stars)
    if reason is not None:
        raise RoomError(f"missions.{mission_id}: that setup cannot earn {stars} star(s): {reason}", 422)


@functools.lru_cache(maxsize=4096)
def verify(mission_id: str, setup: str, site: str | None = None) -> Verified:
    """Score `setup` (a URL state) on the mission with the page's own code, on the mission's traffic.

    Within the page's budget of requests (over it: RoomError 422, as the page itself would not run it). A
    trace mission replays the slice the built `site` holds (else the traces' folder, lab.common.tracemission);
    RoomError 503 if neither has it. RoomError 400 if the setup does not parse.
    """
    from lab.page.view import budget, run
    from model import TooManyRequests

    mission, scenario = _setup(mission_id, setup)
    try:
        result = _traced(mission, scenario, site) if mission.trace else run(scenario)
    except TooManyRequests as exc:
        raise RoomError(f"missions.{mission_id}.setup: that setup sends more than {exc.limit:,} requests, more than "
                        f"the page runs ({budget(scenario):,})", 422) from None
    return Verified(score(mission, scenario, result).stars, len(result.replicas), result.ttft_p99_ms)


def _traced(mission: Mission, scenario: Any, site: str | None) -> Any:
    """`scenario` replayed on the first `trace_requests` requests of the mission's trace, as the page plays it."""
    import itertools

    from lab.common.tracemission import mission_lines
    from lab.common.traces import CommandError
    from lab.page.tracepage import mission_file
    from model import ScenarioError, TraceError, replay

    shipped = Path(site) / mission_file(mission) if site else None
    if shipped is not None and shipped.is_file():
        def lines() -> Any:
            with open(shipped, "rb") as f:
                yield from itertools.islice(f, mission.trace_requests)
    else:
        try:
            lines = mission_lines(mission)
        except CommandError as exc:
            raise RoomError(f"missions.{mission.id}: the room cannot check this mission's stars: {exc}", 503) from None
    try:
        return replay(scenario, lines)
    except (TraceError, ScenarioError) as exc:
        raise RoomError(f"missions.{mission.id}.setup: that setup cannot replay the mission's trace: {exc}", 422) \
            from None


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def secret_matches(stored_sha256: str | None, secret: str) -> bool:
    """Whether `secret` hashes to what is stored (in constant time)."""
    return stored_sha256 is not None and hmac.compare_digest(stored_sha256, _sha256(secret))


class Store:
    """The room's database. Not thread-safe: one thread owns it (see lab/server/serve.py)."""

    def __init__(self, folder: Path, clock: Callable[[], float] = time.time) -> None:
        self.path = Path(folder) / "room.sqlite3"
        self.clock = clock
        try:
            os.makedirs(folder, exist_ok=True)
            self.db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
            self.db.execute("PRAGMA journal_mode=WAL")
            self.db.execute("PRAGMA synchronous=FULL")
            self.db.execute("PRAGMA foreign_keys=ON")
            self.db.execute("PRAGMA busy_timeout=5000")
            version = self.db.execute("PRAGMA user_version").fetchone()[0]
            if version > SCHEMA_VERSION:
                raise RoomError(f"{self.path}: made by a newer prefix-lab (schema {version}); use a new --data folder")
            with self.db:
                self.db.executescript("BEGIN;" + SCHEMA + f"PRAGMA user_version={SCHEMA_VERSION};COMMIT;")
                if self.db.execute("SELECT count(*) FROM room").fetchone()[0] == 0:
                    self.db.execute("INSERT INTO room VALUES (?, ?)", (secrets.token_hex(6), self.clock()))
        except sqlite3.DatabaseError as exc:
            raise RoomError(f"{self.path}: {exc}; pass another --data folder") from None
        except (OSError, ValueError) as exc:  # not a folder, not writable, a NUL in the name
            reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
            raise RoomError(f"cannot use {folder} for the room's data: {reason}") from None

    def close(self) -> None:
        self.db.close()

    def room_id(self) -> str:
        return str(self.db.execute("SELECT id FROM room").fetchone()[0])

    # -- participants ------------------------------------------------------------------------------

    def join(self, name: str) -> tuple[str, str]:
        """A new participant called `name`: their id and secret (only its hash is kept). RoomError (409) if
        someone in the room has a name that looks the same."""
        pid, secret, now, key = secrets.token_urlsafe(9), new_secret(), self.clock(), name_key(name)
        with self._transaction():
            for (taken,) in self.db.execute("SELECT name FROM participants"):
                if name_key(taken) == key:
                    raise RoomError(f"name: someone in the room is already called {taken}; add an initial or "
                                    "a surname", 409)
            self.db.execute("INSERT INTO participants (id, secret_sha256, name, joined, seen) VALUES (?, ?, ?, ?, ?)",
                            (pid, _sha256(secret), name, now, now))
        return pid, secret

    @contextlib.contextmanager
    def _transaction(self) -> Iterator[None]:
        """One transaction: all of it is stored, or none of it (the connection itself commits every statement).

        A write that the disk or the database refuses becomes a RoomError with status 503.
        """
        try:
            self.db.execute("BEGIN IMMEDIATE")
            try:
                yield
                self.db.execute("COMMIT")
            except BaseException:
                if self.db.in_transaction:
                    with contextlib.suppress(sqlite3.Error):
                        self.db.execute("ROLLBACK")
                raise
        except sqlite3.OperationalError as exc:
            if _FULL in str(exc):
                raise RoomError(f"the room's data folder is full ({self.path.parent}): nothing was stored; free some "
                                "space on the facilitator's machine, and your page sends its progress again", 503) \
                    from None
            raise RoomError(f"the room's database cannot be written now ({exc}); your page sends its progress "
                            "again", 503) from None

    def secret_sha256(self, pid: str) -> str | None:
        """The hash of participant `pid`'s secret, or None if there is no such participant."""
        row = self.db.execute("SELECT secret_sha256 FROM participants WHERE id = ?", (pid,)).fetchone()
        return None if row is None else str(row[0])

    def record(self, pid: str, report: Report, verified: Mapping[str, Verified]) -> None:
        """Store one report of participant `pid` (already checked) in one transaction; a mission's stars count
        only if `verified` has its setup's score (one the room could not check stays opened, without them)."""
        now = self.clock()
        with self._transaction():
            row = self.db.execute("SELECT seq, current FROM participants WHERE id = ?", (pid,)).fetchone()
            if row is None:
                raise RoomError("not a participant of this room: join again", 401)
            if report.seq <= row[0]:
                raise RoomError(f"seq {report.seq} is not after the last report's ({row[0]})", 409)
            self.db.execute("UPDATE participants SET seq = ?, seen = ?, current = ? WHERE id = ?",
                            (report.seq, now, report.current, pid))
            if report.current != row[1]:  # on another mission (or free play) from now on
                self.db.execute("UPDATE participants SET current_since = ? WHERE id = ?", (now, pid))
            opened = dict(report.missions)
            if report.current is not None and report.current not in opened:
                opened[report.current] = Progress(0, None)
            for mission_id, entry in opened.items():
                self.db.execute("INSERT INTO progress (participant, mission, stars, opened) VALUES (?, ?, 0, ?) "
                                "ON CONFLICT DO NOTHING", (pid, mission_id, now))
                if entry.stars and mission_id in verified:
                    v = verified[mission_id]
                    self.db.execute(
                        "UPDATE progress SET stars = ?, setup = ?, replicas = ?, p99_ms = ?, "
                        "passed = coalesce(passed, ?) WHERE participant = ? AND mission = ? AND stars <= ?",
                        (entry.stars, entry.setup, v.replicas, v.p99_ms, now, pid, mission_id, entry.stars))
            self.db.execute("INSERT INTO reports VALUES (?, ?, ?, ?)", (pid, report.seq, now, json.dumps({
                "current": report.current,
                "missions": {k: {"stars": p.stars, "setup": p.setup} for k, p in report.missions.items()}})))

    def last_seq(self, pid: str) -> int:
        row = self.db.execute("SELECT seq FROM participants WHERE id = ?", (pid,)).fetchone()
        return 0 if row is None else int(row[0])

    def has_report(self, pid: str, seq: int) -> bool:
        return self.db.execute("SELECT 1 FROM reports WHERE participant = ? AND seq = ?", (pid, seq)).fetchone() \
            is not None

    # -- the facilitator ---------------------------------------------------------------------------

    def open_for_all(self, mission_id: str) -> dict[str, Any]:
        if mission_id not in _MISSION_IDS:
            raise RoomError(f"mission: no mission {mission_id[:40]!r}")
        with self._transaction():
            self.db.execute("INSERT INTO broadcasts (mission, at) VALUES (?, ?)", (mission_id, self.clock()))
        broadcast = self.broadcast()
        assert broadcast is not None
        return broadcast

    def broadcast(self) -> dict[str, Any] | None:
        """The mission the facilitator opened last: `{id, mission, n, title, at}`, or None."""
        row = self.db.execute("SELECT id, mission, at FROM broadcasts ORDER BY id DESC LIMIT 1").fetchone()
        if row is None:
            return None
        mission = find_mission(row[1], MISSIONS)
        return {"id": row[0], "mission": row[1], "n": _MISSION_IDS.get(row[1], 0),
                "title": mission.title if mission else row[1], "at": row[2]}

    def clear(self) -> None:
        """Forget everyone and everything; the room gets a new id, so pages of the old one ask to join again."""
        with self._transaction():
            for table in ("progress", "reports", "participants", "broadcasts", "room"):
                self.db.execute(f"DELETE FROM {table}")
            self.db.execute("INSERT INTO room VALUES (?, ?)", (secrets.token_hex(6), self.clock()))

    def snapshot(self) -> dict[str, Any]:
        """Everything the facilitator page shows, as JSON-ready data."""
        now = self.clock()
        people = self.db.execute("SELECT id, name, current, current_since, seen, joined FROM participants "
                                 "ORDER BY joined").fetchall()
        rows = self.db.execute("SELECT participant, mission, stars, setup, replicas, p99_ms, opened, passed "
                               "FROM progress").fetchall()
        names = {p[0]: p[1] for p in people}
        stars_of: dict[str, dict[str, int]] = {p[0]: {} for p in people}
        for participant, mission, stars, *_ in rows:
            stars_of[participant][mission] = stars
        missions = []
        for n, m in enumerate(MISSIONS, 1):
            mine = [r for r in rows if r[1] == m.id]
            spread = [sum(1 for r in mine if r[2] == s) for s in range(4)]
            passed = [r for r in mine if r[2] > 0 and r[3] is not None]
            passed.sort(key=lambda r: (r[4], r[5], -r[2], r[7]))
            best = [{"name": names[r[0]], "stars": r[2], "replicas": r[4], "p99_ms": r[5], "setup": r[3]}
                    for r in passed[:3]]
            missions.append({"id": m.id, "n": n, "title": m.title, "opened": len(mine), "passed": len(passed),
                             "stars": spread, "best": best})
        participants, stuck = [], []
        for pid, name, current, since, seen, _ in people:
            on = None
            if current is not None:
                on = {"mission": current, "n": _MISSION_IDS.get(current, 0), "since_s": now - (since or now)}
                if stars_of[pid].get(current, 0) == 0:
                    stuck.append({"name": name, **on})
            participants.append({"name": name, "stars": stars_of[pid], "current": on, "seen_s": now - seen})
        stuck.sort(key=lambda s: -s["since_s"])
        return {"room": self.room_id(), "now": now, "participants": participants, "missions": missions,
                "stuck": stuck, "open": self.broadcast()}

    def export_csv(self) -> str:
        """One line per participant and mission they opened (a participant who opened none: one line)."""
        out = io.StringIO()
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow(["participant", "name", "joined", "mission", "number", "stars", "replicas", "p99_ms",
                         "opened", "passed", "setup"])
        rows = self.db.execute(
            "SELECT p.id, p.name, p.joined, g.mission, g.stars, g.replicas, g.p99_ms, g.opened, g.passed, g.setup "
            "FROM participants p LEFT JOIN progress g ON g.participant = p.id ORDER BY p.joined, g.opened").fetchall()
        for pid, name, joined, mission, stars, replicas, p99, opened, passed, setup in rows:
            writer.writerow([pid, _cell(name), _iso(joined), mission or "", _MISSION_IDS.get(mission or "", ""),
                             "" if stars is None else stars, "" if replicas is None else replicas,
                             "" if p99 is None else f"{p99:.1f}", _iso(opened), _iso(passed), setup or ""])
        return out.getvalue()


_FORMULA = re.compile(r"^[=+\-@\t\r]")


def _cell(text: str) -> str:
    """A name as a spreadsheet cell: one starting like a formula is prefixed with ' so it stays text."""
    return "'" + text if _FORMULA.match(text) else text


def _iso(t: float | None) -> str:
    return "" if t is None else time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))
