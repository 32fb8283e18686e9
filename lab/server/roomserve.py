"""The workshop room on `prefix-lab serve --room`: its HTTP routes, under /room/.

Participants (no token):

    GET  /room/join              the join page: pick a display name
    POST /room/api/join          {"name"} -> {"id", "secret", "name", "room"}; the page keeps them in localStorage
    GET  /room/api/me            who the secret belongs to, and the mission the facilitator opened last
    POST /room/api/report        the page's progress (lab.server.room.read_report), as participant `id`
    GET  /room/api/events        server-sent events: `mission` when the facilitator opens a mission for everyone
    GET  /room/room.js ...       the room's scripts and style, from static/ (not part of the built site)

A participant proves who they are with `Authorization: Bearer <id>.<secret>`;
only a hash of the secret is stored, and a participant can write only their
own row.

The facilitator (the token printed at start, as `?token=` or `Authorization:
Bearer <token>`; without it 401, with a wrong one 403):

    GET  /room/facilitator       the facilitator page, with the join address as a QR code
    GET  /room/api/room          the room as JSON (lab.server.room.Store.snapshot)
    GET  /room/api/stream        server-sent events: `room` with the same JSON whenever it changed (at most 2/s)
    POST /room/api/open          {"mission"}: open a mission for everyone
    POST /room/api/clear         {"confirm": "clear"}: forget every participant
    GET  /room/api/export.csv    the room as CSV

Limits (`RoomLimits`): request bodies of at most `lab.server.room.REPORT_MAX_BYTES`,
JSON only (`Content-Type: application/json`, which a form on another site
cannot send without asking first); per client address a token bucket for
every API request and a slower one for joins; per participant one for
reports; at most `streams_per_address` open event streams per address.
Beyond a bucket: 429 with Retry-After.

Live updates are server-sent events with a comment line every
`heartbeat_s`: the server's header and idle timeouts (lab/server/serve.py) apply
only while it waits for a request, never to a response being written, so a
stream is never cut by them; the heartbeat finds clients that went away and
keeps Wi-Fi access points and proxies from dropping a quiet connection.

The database runs on one worker thread that owns the connection; a database
that cannot be written (a full disk) is answered 503 with Retry-After, so the
page sends its state again. The setups that claim stars are first checked
for what can be known without running them (`lab.server.room.precheck`), then
scored in worker processes (lab/server/roomscore.py: in turn between client
addresses, each in a time box, with quotas), so neither stops the event loop
serving the site and no address makes another's report wait behind its own
setups. Each setup's score is remembered (`scored`), refusals too. A report
whose setup could not be scored in its time box is stored with that
mission's stars not counted, and the answer says so (`unchecked`).

Nothing written to the server's log carries the facilitator's token: the
access log and error lines show `token=[hidden]` (lab/server/serve.py).
"""

import asyncio
import html
import io
import json
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import unquote

import tornado.iostream
import tornado.web

from lab.server.room import (
    NAME_MAX,
    REPORT_MAX_BYTES,
    RoomError,
    Store,
    Verified,
    precheck,
    read_name,
    read_report,
    secret_matches,
)
from lab.server.roomscore import ScoreLimits, Scorer, Unchecked

__all__ = ["RoomLimits", "RoomServer", "hidden_token", "room_routes"]

STATIC = Path(__file__).resolve().parents[2] / "static"
FILES = {"room.js": "text/javascript", "room-join.js": "text/javascript",
         "room-facilitator.js": "text/javascript", "room.css": "text/css"}
T = TypeVar("T")
# The room's pages have no inline script and compile nothing: stricter than the lab's own policy (lab/server/serve.py).
POLICY = ("default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
          "object-src 'none'; base-uri 'self'; form-action 'self'; frame-ancestors 'none'")


@dataclass(frozen=True, slots=True)
class RoomLimits:
    """How much one client may ask of the room. Rates are per second, bursts are what a quiet client saved up."""

    api_rate: float = 20.0  # API requests per client address
    api_burst: float = 60.0
    join_rate: float = 0.2  # joins per client address: one every 5 s once the burst is spent
    join_burst: float = 10.0
    report_rate: float = 2.0  # reports per participant (the page sends at most one every half second)
    report_burst: float = 20.0
    streams_per_address: int = 8  # event streams open at once from one address
    heartbeat_s: float = 5.0  # a comment line on every event stream this often
    push_every_s: float = 0.5  # the facilitator's stream gets a new snapshot at most this often


class _Buckets:
    """Token buckets by key: `take(key)` is False when the key has spent its burst."""

    def __init__(self, rate: float, burst: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.rate, self.burst, self.clock = rate, burst, clock
        self.tokens: dict[str, tuple[float, float]] = {}  # key -> (tokens, when counted)

    def take(self, key: str) -> bool:
        now = self.clock()
        tokens, then = self.tokens.get(key, (self.burst, now))
        tokens = min(self.burst, tokens + (now - then) * self.rate)
        if len(self.tokens) > 50_000:  # a flood of keys: forget the full buckets
            self.tokens = {k: v for k, v in self.tokens.items() if v[0] < self.burst}
        if tokens < 1:
            self.tokens[key] = (tokens, now)
            return False
        self.tokens[key] = (tokens - 1, now)
        return True


class RoomServer:
    """The room's state in the server: the store (on its own thread), the token, the limits, the open streams."""

    def __init__(self, data: Path, token: str, join_url: str, limits: RoomLimits = RoomLimits(),
                 site: Path | None = None, scoring: ScoreLimits | None = None) -> None:
        self.token, self.join_url, self.limits = token, join_url, limits
        self._db = ThreadPoolExecutor(1, thread_name_prefix="room-db")
        self.scorer = Scorer(site, scoring or ScoreLimits())  # its workers start with the first setup to score
        self.store = self._db.submit(Store, data).result()  # raises RoomError for an unusable folder
        self.api = _Buckets(limits.api_rate, limits.api_burst)
        self.joins = _Buckets(limits.join_rate, limits.join_burst)
        self.reports = _Buckets(limits.report_rate, limits.report_burst)
        self.participant_streams: set[asyncio.Queue] = set()
        self.facilitator_streams: set[asyncio.Queue] = set()
        self.streams_by_address: dict[str, int] = {}
        self._push_due = False
        # Kept in memory, so that a report needs one trip to the database's thread, not three:
        self.secrets: dict[str, str | None] = {}  # participant id -> sha256 of their secret (None: no such one)
        # (mission id, setup) -> its score, or why it was refused or left unchecked
        self.scored: dict[tuple[str, str], Verified | RoomError] = {}
        self.prechecked: dict[tuple[str, str, int], RoomError | None] = {}  # (mission, setup, stars) -> refusal

    async def db(self, fn: Callable[..., T], *args: Any) -> T:
        """Run `fn(*args)` on the database's thread."""
        return await asyncio.wrap_future(self._db.submit(fn, *args))

    async def verify(self, address: str, pid: str, mission_id: str, setup: str, stars: int) -> Verified:
        """The setup's score on the mission, computed once (by the scorer) and then remembered, as are refusals.

        Raises RoomError: 400 or 422 for a setup that cannot earn `stars` (turned down before it runs when that
        shows without running it), `Unchecked` if it could not be scored, 429 or 503 if it cannot be taken now.
        """
        key = (mission_id, setup)
        claim = (mission_id, setup, stars)
        if claim not in self.prechecked:
            try:
                precheck(mission_id, setup, stars)
                self.prechecked[claim] = None
            except RoomError as exc:
                self.prechecked[claim] = _again(exc)  # kept without the frames it was raised in
            if len(self.prechecked) > 16_384:
                self.prechecked.clear()
        refused = self.prechecked.get(claim)
        if refused is not None:
            raise _again(refused)
        known = self.scored.get(key)
        if known is None:
            try:
                known = await self.scorer.score(address, pid, mission_id, setup)
            except Unchecked as exc:
                known = _again(exc)
            except RoomError as exc:
                if exc.status in (429, 503):
                    raise  # not a property of the setup: the page sends it again later
                known = _again(exc)
            if len(self.scored) > 4096:
                self.scored.clear()
            self.scored[key] = known
        if isinstance(known, RoomError):
            raise _again(known)
        return known

    async def is_participant(self, pid: str, secret: str) -> bool:
        if pid not in self.secrets:
            if len(self.secrets) > 100_000:  # ids made up by a client: do not keep them all
                self.secrets.clear()
            self.secrets[pid] = await self.db(self.store.secret_sha256, pid)
        return secret_matches(self.secrets[pid], secret)

    async def clear(self) -> None:
        await self.db(self.store.clear)
        self.secrets.clear()

    def close(self) -> None:
        self.scorer.close()
        self._db.submit(self.store.close).result()
        self._db.shutdown()

    # -- live updates ------------------------------------------------------------------------------

    def changed(self) -> None:
        """The room changed: the facilitator's streams get a snapshot soon (one for many changes)."""
        if self._push_due or not self.facilitator_streams:
            return
        self._push_due = True
        asyncio.get_running_loop().call_later(self.limits.push_every_s, lambda: asyncio.ensure_future(self._push()))

    async def _push(self) -> None:
        self._push_due = False
        snapshot = await self.db(self.store.snapshot)
        for queue in self.facilitator_streams:
            _offer(queue, ("room", snapshot))

    def announce(self, broadcast: dict[str, Any] | None) -> None:
        for queue in self.participant_streams:
            _offer(queue, ("mission", broadcast))


def _offer(queue: asyncio.Queue, item: Any) -> None:
    """Put `item` on a stream's queue, dropping the oldest waiting one if it is full (a slow reader)."""
    if queue.full():
        queue.get_nowait()
    queue.put_nowait(item)


# -- handlers ----------------------------------------------------------------------------------------

class _Room(tornado.web.RequestHandler):
    """Security headers, JSON errors, limits and the two kinds of credentials."""

    def initialize(self, room: RoomServer) -> None:  # type: ignore[override]
        self.room = room

    def set_default_headers(self) -> None:
        self.clear_header("Server")
        self.set_header("X-Content-Type-Options", "nosniff")
        self.set_header("Referrer-Policy", "no-referrer")
        self.set_header("X-Frame-Options", "DENY")
        self.set_header("Cache-Control", "no-store")
        self.set_header("Content-Security-Policy", POLICY)

    def write_error(self, status_code: int, **kwargs: Any) -> None:
        exc = kwargs.get("exc_info", (None, None))[1]
        message = exc.message if isinstance(exc, _Refused) else self._reason
        if isinstance(exc, _Refused) and exc.retry_after_s is not None:
            self.set_header("Retry-After", str(max(1, round(exc.retry_after_s))))
        self.set_header("Content-Type", "application/json; charset=utf-8")
        self.finish(json.dumps({"error": message}))

    def log_exception(self, typ: Any, value: Any, tb: Any) -> None:
        if not isinstance(value, _Refused):  # refusals are no server error
            super().log_exception(typ, value, tb)

    def _request_summary(self) -> str:  # in Tornado's warnings and errors: never the token
        return f"{self.request.method} {hidden_token(self.request.uri or '')} ({self.request.remote_ip})"

    def refuse(self, status: int, message: str) -> "_Refused":
        return _Refused(status, message)

    def refused(self, exc: RoomError) -> "_Refused":
        """The answer to a RoomError: its status and message, and when to try again for a 429 or 503."""
        retry = getattr(exc, "retry_after_s", None)
        return _Refused(exc.status, str(exc), 5.0 if retry is None and exc.status == 503 else retry)

    def limit(self, buckets: _Buckets, key: str, what: str) -> None:
        if not buckets.take(key):
            self.set_header("Retry-After", str(max(1, round(1 / buckets.rate))))
            raise self.refuse(429, f"too many {what} from you; wait a moment")

    def prepare(self) -> None:
        if self.request.path.startswith("/room/api/"):
            self.limit(self.room.api, self.request.remote_ip or "", "requests")

    def facilitator(self) -> None:
        """Refuse (401 without a token, 403 with a wrong one) unless the request carries the facilitator's token."""
        import hmac

        given = self.get_query_argument("token", "") or _bearer(self.request.headers.get("Authorization", ""))
        if not given:
            raise self.refuse(401, "the facilitator's token is missing: use the address prefix-lab serve printed")
        if not hmac.compare_digest(given.encode(), self.room.token.encode()):
            raise self.refuse(403, "wrong token: use the facilitator address prefix-lab serve printed")

    async def participant(self) -> str:
        """The participant's id, if the request carries their secret; else 401."""
        pid, _, secret = _bearer(self.request.headers.get("Authorization", "")).partition(".")
        if not pid or not secret or not await self.room.is_participant(pid, secret):
            raise self.refuse(401, "not a participant of this room: join first")
        return pid

    def body(self) -> Any:
        if len(self.request.body) > REPORT_MAX_BYTES:
            raise self.refuse(413, f"the request is over {REPORT_MAX_BYTES:,} bytes")
        kind = self.request.headers.get("Content-Type", "").split(";")[0].strip().lower()
        if kind != "application/json":
            raise self.refuse(415, "send JSON, with Content-Type: application/json")
        try:
            return json.loads(self.request.body)
        except (ValueError, RecursionError):
            raise self.refuse(400, "the body is not JSON") from None

    def reply(self, data: Any) -> None:
        self.set_header("Content-Type", "application/json; charset=utf-8")
        self.finish(json.dumps(data))


class _Refused(tornado.web.HTTPError):
    """A request the room will not do; `message` says why, in the JSON answer, and `retry_after_s` when to ask
    again (a Retry-After header), if it is worth asking again."""

    def __init__(self, status: int, message: str, retry_after_s: float | None = None) -> None:
        super().__init__(status)
        self.message, self.retry_after_s = message, retry_after_s


def _again(exc: RoomError) -> RoomError:
    """A fresh copy of a remembered refusal: raising the same one again and again would grow its traceback."""
    return Unchecked(str(exc)) if isinstance(exc, Unchecked) else RoomError(str(exc), exc.status)


def hidden_token(uri: str) -> str:
    """`uri` with the value of every `token` query parameter (however it is spelled) as `[hidden]`."""
    path, mark, query = uri.partition("?")
    if not mark:
        return uri
    parts = []
    for part in query.split("&"):
        name, eq, _ = part.partition("=")
        parts.append(f"{name}=[hidden]" if eq and unquote(name).strip() == "token" else part)
    return path + "?" + "&".join(parts)


def _bearer(header: str) -> str:
    scheme, _, value = header.partition(" ")
    return value.strip() if scheme.lower() == "bearer" else ""


class _Page(_Room):
    def page(self, title: str, body: str, script: str) -> None:
        self.set_header("Content-Type", "text/html; charset=utf-8")
        self.finish(f'<!doctype html><html lang="en"><head><meta charset="utf-8">'
                    f'<meta name="viewport" content="width=device-width, initial-scale=1">'
                    f'<title>{html.escape(title)}</title><link rel="icon" href="../favicon.svg" type="image/svg+xml">'
                    f'<link rel="stylesheet" href="room.css"></head><body class="room-page">{body}'
                    f'<script type="module" src="{script}"></script></body></html>')


class JoinPage(_Page):
    def get(self) -> None:
        self.page("Join the room: prefix-lab", (
            '<main class="join"><h1>Join the workshop</h1>'
            '<p>Pick a name the facilitator will see next to your progress. No account, no e-mail: the name and '
            'a secret that proves it is you stay in this browser.</p>'
            '<form id="join"><label for="name">Your name</label> '
            f'<input id="name" name="name" maxlength="{NAME_MAX}" autocomplete="nickname" required autofocus> '
            '<button type="submit">Join</button></form>'
            '<p id="join-status" role="status" aria-live="polite"></p></main>'), "room-join.js")


class FacilitatorPage(_Page):
    def get(self) -> None:
        self.facilitator()
        self.page("Facilitator: prefix-lab room", (
            '<main class="facilitator"><header><h1>The room</h1>'
            f'<figure class="qr">{_qr_svg(self.room.join_url)}<figcaption>Join at <a href="{html.escape(self.room.join_url)}">'
            f'{html.escape(self.room.join_url)}</a></figcaption></figure>'
            '<p id="room-status" role="status" aria-live="polite">Connecting…</p></header>'
            '<section aria-labelledby="t-missions"><h2 id="t-missions">Missions</h2>'
            '<table id="missions"><thead><tr><th scope="col">Mission</th><th scope="col">Opened</th>'
            '<th scope="col">Passed</th><th scope="col">Stars 0 / 1 / 2 / 3</th><th scope="col">Best setups '
            '(fewest replicas, then lowest TTFT p99)</th><th scope="col">For everyone</th></tr></thead>'
            '<tbody></tbody></table><p id="opened" class="hint"></p></section>'
            '<section aria-labelledby="t-stuck"><h2 id="t-stuck">On one mission longest without passing</h2>'
            '<ol id="stuck"></ol></section>'
            '<section aria-labelledby="t-people"><h2 id="t-people">Participants</h2>'
            '<table id="people"><thead></thead><tbody></tbody></table></section>'
            '<section aria-labelledby="t-data"><h2 id="t-data">The room\'s data</h2>'
            '<p><a id="export" href="api/export.csv" download="room.csv">Export as CSV</a></p>'
            '<form id="clear"><label for="confirm">To forget every participant and their progress, type '
            '<code>clear</code>:</label> <input id="confirm" autocomplete="off"> '
            '<button type="submit" class="danger">Clear the room</button></form></section></main>'),
            "room-facilitator.js")


def _qr_svg(text: str) -> str:
    import segno

    out = io.BytesIO()
    segno.make(text, error="m").save(out, kind="svg", scale=6, border=2, xmldecl=False, svgns=True,
                                      title=f"QR code: {text}", svgclass="qr-code")
    return out.getvalue().decode()


class RoomFile(_Room):
    def get(self, name: str) -> None:
        if name not in FILES:
            raise self.refuse(404, "no such file")
        self.set_header("Content-Type", FILES[name] + "; charset=utf-8")
        self.set_header("Cache-Control", "no-cache")
        self.finish((STATIC / name).read_bytes())


class Join(_Room):
    async def post(self) -> None:
        self.limit(self.room.joins, self.request.remote_ip or "", "joins")
        data = self.body()
        try:
            name = read_name(data.get("name") if isinstance(data, dict) else None)
            pid, secret = await self.room.db(self.room.store.join, name)
        except RoomError as exc:
            raise self.refused(exc) from None
        room_id = await self.room.db(self.room.store.room_id)
        self.room.changed()
        self.reply({"id": pid, "secret": secret, "name": name, "room": room_id})


class Me(_Room):
    async def get(self) -> None:
        pid = await self.participant()
        store = self.room.store
        self.reply({"id": pid, "room": await self.room.db(store.room_id), "seq": await self.room.db(store.last_seq, pid),
                    "open": await self.room.db(store.broadcast)})


class Report(_Room):
    async def post(self) -> None:
        pid = await self.participant()
        self.limit(self.room.reports, pid, "reports")
        try:
            report = read_report(self.body())
            verified, unchecked = {}, {}
            for mission_id, entry in report.missions.items():
                if entry.stars and entry.setup is not None:
                    try:
                        v = await self.room.verify(self.request.remote_ip or "", pid, mission_id, entry.setup,
                                                   entry.stars)
                    except Unchecked as exc:
                        unchecked[mission_id] = str(exc)
                        continue
                    if v.stars < entry.stars:
                        raise RoomError(f"missions.{mission_id}: that setup earns {v.stars} star(s), not "
                                        f"{entry.stars}", 422)
                    verified[mission_id] = v
            await self.room.db(self.room.store.record, pid, report, verified)
        except RoomError as exc:
            if exc.status == 409:
                self.set_status(409)
                self.reply({"error": str(exc), "seq": await self.room.db(self.room.store.last_seq, pid)})
                return
            raise self.refused(exc) from None
        self.room.changed()
        self.reply({"seq": report.seq, **({"unchecked": unchecked} if unchecked else {})})


class _Stream(_Room):
    """A server-sent event stream: a first event, then what is queued, and a heartbeat comment in between."""

    queue: asyncio.Queue | None = None

    async def stream(self, streams: set[asyncio.Queue], first: tuple[str, Any]) -> None:
        address = self.request.remote_ip or ""
        room = self.room
        if room.streams_by_address.get(address, 0) >= room.limits.streams_per_address:
            raise self.refuse(429, "too many live connections from your address")
        room.streams_by_address[address] = room.streams_by_address.get(address, 0) + 1
        self.queue = asyncio.Queue(maxsize=4)
        self.queue.put_nowait(first)
        streams.add(self.queue)
        self.set_header("Content-Type", "text/event-stream; charset=utf-8")
        self.write("retry: 2000\n\n")  # the browser reconnects after 2 s if the stream breaks
        try:
            while True:
                try:
                    item = await asyncio.wait_for(self.queue.get(), room.limits.heartbeat_s)
                except TimeoutError:
                    item = ("", None)
                if item is None:  # the connection closed
                    break
                event, data = item
                self.write(f"event: {event}\ndata: {json.dumps(data)}\n\n" if event else ": heartbeat\n\n")
                await self.flush()
        except tornado.iostream.StreamClosedError:
            pass
        finally:
            streams.discard(self.queue)
            room.streams_by_address[address] -= 1
            if not room.streams_by_address[address]:
                del room.streams_by_address[address]

    def on_connection_close(self) -> None:
        if self.queue is not None:
            _offer(self.queue, None)


class ParticipantEvents(_Stream):
    async def get(self) -> None:
        await self.stream(self.room.participant_streams, ("mission", await self.room.db(self.room.store.broadcast)))


class FacilitatorEvents(_Stream):
    async def get(self) -> None:
        self.facilitator()
        await self.stream(self.room.facilitator_streams, ("room", await self.room.db(self.room.store.snapshot)))


class Snapshot(_Room):
    async def get(self) -> None:
        self.facilitator()
        self.reply(await self.room.db(self.room.store.snapshot))


class OpenForAll(_Room):
    async def post(self) -> None:
        self.facilitator()
        data = self.body()
        mission = data.get("mission") if isinstance(data, dict) else None
        if not isinstance(mission, str):
            raise self.refuse(400, 'send {"mission": "<mission id>"}')
        try:
            broadcast = await self.room.db(self.room.store.open_for_all, mission)
        except RoomError as exc:
            raise self.refused(exc) from None
        self.room.announce(broadcast)
        self.room.changed()
        self.reply(broadcast)


class Clear(_Room):
    async def post(self) -> None:
        self.facilitator()
        data = self.body()
        if not isinstance(data, dict) or data.get("confirm") != "clear":
            raise self.refuse(400, 'clearing the room needs {"confirm": "clear"}')
        try:
            await self.room.clear()
        except RoomError as exc:
            raise self.refused(exc) from None
        self.room.announce(None)
        self.room.changed()
        self.reply({"cleared": True})


class Export(_Room):
    async def get(self) -> None:
        self.facilitator()
        self.set_header("Content-Type", "text/csv; charset=utf-8")
        self.set_header("Content-Disposition", 'attachment; filename="room.csv"')
        self.finish(await self.room.db(self.room.store.export_csv))


def room_routes(room: RoomServer) -> list[tuple[str, type, dict[str, Any]]]:
    """The room's routes, to go before the site's catch-all route."""
    args = {"room": room}
    return [
        (r"/room/join", JoinPage, args),
        (r"/room/facilitator", FacilitatorPage, args),
        (r"/room/api/join", Join, args),
        (r"/room/api/me", Me, args),
        (r"/room/api/report", Report, args),
        (r"/room/api/events", ParticipantEvents, args),
        (r"/room/api/room", Snapshot, args),
        (r"/room/api/stream", FacilitatorEvents, args),
        (r"/room/api/open", OpenForAll, args),
        (r"/room/api/clear", Clear, args),
        (r"/room/api/export\.csv", Export, args),
        (r"/room/([a-z-]+\.(?:js|css))", RoomFile, args),
    ]

