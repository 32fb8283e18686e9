"""`prefix-lab serve`: bind the port, build the site if it is missing or stale, then serve it with Tornado.

Static files only, from the site folder and nothing outside it: no directory
listings, nothing under a name starting with a dot, no symlink leading out
(for a gzip twin as for the file itself), `/` serves index.html. Each file
goes out with its proper type (`.wasm` as application/wasm, `.mjs` as
JavaScript), an ETag (a 304 when it matches), `Cache-Control: no-cache`
(revalidate, so a rebuilt site is never stale; a content-hashed name, see
lab/site/assets.py, is `max-age=31536000, immutable`), and its gzip twin when the
browser accepts gzip (`gzip;q=0` refuses it) and the twin is not older than
the file (a hand-edited file goes out as it is).

The site folder is looked up again for every request: `prefix-lab build`
swaps a new build in behind a symlink (see build.py), and each request
reads one whole build, the old or the new.

Every response carries a Content-Security-Policy: the site's own origin
only, `'unsafe-eval'` because BokehJS compiles each widget's CustomJS with
`new Function`, `'wasm-unsafe-eval'` for Pyodide, the sha256 of the page's
inline scripts (recorded in build.json by the build), and `frame-ancestors
'none'` except on embed.html, which articles frame. No `Server` header.

Workshop limits (`Limits`), so that no one client can take the server from
the others: a request's headers must arrive within `header_timeout_s`, which
is also how long an idle keep-alive connection is kept; a file being sent
must make progress (its next 64 KiB taken by the reader) within
`write_timeout_s`, or the connection is closed (a stream of server-sent
events is not a file: the room's heartbeat finds its dead readers); at most
`max_connections` connections at once and `max_per_address` from one client
address (more are answered 503 and closed at once); a URL over
`max_url_bytes` is answered 414, headers over `max_header_bytes` 431, a body
over `max_body_bytes` 413 (what was sent is read and dropped, up to a few
MiB, so the client reads the answer instead of a reset) and a chunked body
411 (the lab takes only bodies of a stated length).

Open files: a file response holds two descriptors (its socket and the file),
so the connection cap must fit the process's limit of open files. The server
raises its soft limit as far as the hard limit allows toward what
`max_connections` needs; if that is not enough, it serves fewer connections
at once (`connection_budget`) and says so. Should descriptors run out
anyway, accepting pauses for a moment instead of failing in a loop.

Each file's digest (its ETag) is worked out once per version of the file
(its inode, size and modification time), not on every request: the builds
swap in as whole new folders, so that is once per build.

With `room_data` (`prefix-lab serve --room`), the workshop room's routes
(lab/server/roomserve.py) go before the site's, under /room/; the site's files are
served exactly as without it.
"""

import asyncio
import errno
import json
import logging
import mimetypes
import os
import socket
import stat
import time
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import tornado.httpserver
import tornado.httputil
import tornado.ioloop
import tornado.iostream
import tornado.netutil
import tornado.web

from lab.site.assets import is_hashed
from lab.site.build import build_site, site_is_current

if TYPE_CHECKING:
    from lab.server.roomserve import RoomServer

__all__ = ["Limits", "ServeError", "SiteHandler", "accepts_gzip", "connection_budget", "content_security_policy",
           "make_app", "make_server", "serve"]

TYPES = {
    ".wasm": "application/wasm",
    ".mjs": "text/javascript",
    ".js": "text/javascript",
    ".whl": "application/zip",
    ".zip": "application/zip",
    ".json": "application/json",
    ".svg": "image/svg+xml",
    ".css": "text/css",
    ".html": "text/html",
}
EMBEDDABLE = {"embed.html"}  # pages other sites may put in a frame


class ServeError(RuntimeError):
    """The lab cannot be served as asked; the message says why and what to do."""


@dataclass(frozen=True, slots=True)
class Limits:
    """What one server allows, sized for a workshop room of about 100 people.

    A page load makes about 25 requests over at most 6 connections per browser
    (Chromium's limit per origin, an event stream included): 100 people hold at
    most 600, and 700 leaves room for a second tab or device while staying
    under the usual limit of 1,024 open files per process.
    """

    header_timeout_s: float = 10.0  # for a request's headers to arrive; also how long an idle connection stays
    write_timeout_s: float = 10.0  # for a reader to take the next 64 KiB of a file; longer, and it is cut off
    max_connections: int = 700  # open at once; more are answered 503 and closed (fewer if open files run short)
    max_per_address: int = 48  # open at once from one client address: eight browsers behind one router
    max_url_bytes: int = 8_192  # longer request targets get 414
    max_header_bytes: int = 16_384  # longer header sections get 431 (Tornado drops anything over 64 KiB unread)
    max_body_bytes: int = 1 << 20  # longer request bodies get 413 (the room's reports are at most 16 KiB)


RESERVED_FILES = 64  # descriptors kept for the server itself: its sockets, the room's database, the scorers' pipes


def connection_budget(soft: int, hard: int, wanted: int, reserve: int = RESERVED_FILES) -> tuple[int, int]:
    """(the soft limit of open files to ask for, the connections it allows) for `wanted` connections.

    Each connection may hold two descriptors (a socket and the file it sends); `reserve` are the server's own.
    The soft limit goes up toward what is needed as far as `hard` allows (-1: no limit), never down.
    """
    need = 2 * wanted + reserve
    if soft < 0:
        return soft, wanted
    if soft < need:
        soft = need if hard < 0 else max(soft, min(need, hard))
    return soft, max(1, min(wanted, (soft - reserve) // 2))


def _fit_open_files(wanted: int) -> tuple[int, int, int]:
    """Raise this process's soft limit of open files for `wanted` connections if it can: (the connections it
    allows, the soft limit before, after; -1 for no limit)."""
    try:
        import resource
    except ImportError:  # no such limit here
        return wanted, -1, -1
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    infinite = resource.RLIM_INFINITY
    before = -1 if soft == infinite else soft
    asked, cap = connection_budget(before, -1 if hard == infinite else hard, wanted)
    if asked != before:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (asked, hard))
        except (ValueError, OSError):
            asked, cap = connection_budget(before, before, wanted)
    return cap, before, asked


def accepts_gzip(header: str) -> bool:
    """Whether an Accept-Encoding value allows gzip (`gzip;q=0` and `*;q=0` do not)."""
    weights: dict[str, float] = {}
    for part in header.split(","):
        name, *params = part.split(";")
        weight = 1.0
        for param in params:
            key, _, value = param.partition("=")
            if key.strip().lower() == "q":
                try:
                    weight = float(value)
                except ValueError:
                    weight = 0.0
        weights.setdefault(name.strip().lower(), weight)
    for name in ("gzip", "x-gzip"):
        if name in weights:
            return weights[name] > 0
    return weights.get("*", 0.0) > 0


def content_security_policy(script_hashes: list[str], framed: bool) -> str:
    """The policy for a page whose inline scripts have these hashes; `framed`: other sites may frame it."""
    script = " ".join(["'self'", "'unsafe-eval'", "'wasm-unsafe-eval'", *script_hashes])
    rules = [
        "default-src 'self'",
        f"script-src {script}",
        "style-src 'self' 'unsafe-inline'",
        "img-src 'self' data: blob:",  # Bokeh's icons are data: URLs in its CSS
        "font-src 'self' data:",
        "connect-src 'self'",
        "worker-src 'self' blob:",
        "object-src 'none'",
        "base-uri 'self'",
        "form-action 'self'",
    ]
    if not framed:
        rules.append("frame-ancestors 'none'")
    return "; ".join(rules)


class _Site:
    """The served folder, looked up per request, and the inline-script hashes of its current build."""

    DIGESTS_KEPT = 4096  # files' digests remembered (a build has a few hundred files)

    def __init__(self, path: Path, limits: Limits) -> None:
        self.path = os.path.abspath(path)
        self.limits = limits
        self._hashes: tuple[tuple[str, int], dict[str, list[str]]] | None = None  # (build.json's key, hashes)
        # (path, inode, size, mtime) -> the file's digest: one per version of a file, so one per build
        self.digests: OrderedDict[tuple[str, int, int, int], str | None] = OrderedDict()

    def root(self) -> str:
        return os.path.realpath(self.path)

    def script_hashes(self, root: str, page: str) -> list[str]:
        manifest = os.path.join(root, "build.json")
        try:
            key = (manifest, os.stat(manifest).st_mtime_ns)
            if self._hashes is None or self._hashes[0] != key:
                with open(manifest, encoding="utf-8") as f:
                    recorded = json.load(f).get("inline_scripts", {})
                self._hashes = (key, recorded if isinstance(recorded, dict) else {})
            found = self._hashes[1].get(page, [])
        except (OSError, ValueError, AttributeError):
            return []
        return [h for h in found if isinstance(h, str)] if isinstance(found, list) else []


class SiteHandler(tornado.web.StaticFileHandler):
    """Tornado's static handler, plus content types, checked gzip twins, security headers, no-cache."""

    # Tornado passes a route's keyword arguments to initialize(); this route passes the site, not a path.
    def initialize(self, site: _Site, default_filename: str | None = None) -> None:  # type: ignore[override]
        self.site = site
        super().initialize(site.root(), default_filename)  # this request reads this build, even if one swaps in
        self._plain_path: str | None = None  # the file asked for, when its .gz twin is sent

    def set_default_headers(self) -> None:  # every response, errors included
        self.clear_header("Server")
        self.set_header("X-Content-Type-Options", "nosniff")
        self.set_header("Referrer-Policy", "no-referrer")
        self.set_header("Content-Security-Policy", content_security_policy([], framed=False))

    def compute_etag(self) -> str | None:
        """The file's digest as Tornado would give it, worked out once per version of the file."""
        path = self.absolute_path
        assert path is not None
        st = self._stat()
        key = (path, st.st_ino, st.st_size, st.st_mtime_ns)
        digests = self.site.digests
        if key in digests:
            digests.move_to_end(key)
        else:
            try:
                digests[key] = self.get_content_version(path)
            except (OSError, ValueError):  # gone, or too large to digest (Tornado's own bound)
                digests[key] = None
            while len(digests) > self.site.DIGESTS_KEPT:
                digests.popitem(last=False)
        digest = digests[key]
        return f'"{digest}"' if digest else None

    def flush(self, include_footers: bool = False) -> "asyncio.Future[None]":
        """Send what is written (now, in order); a reader that takes none of it within `write_timeout_s` is cut
        off, which frees its connection and the file it held."""
        sent = super().flush(include_footers)
        sent.add_done_callback(_quiet)
        waiting = asyncio.ensure_future(self._taken(sent))
        waiting.add_done_callback(_quiet)
        return waiting

    async def _taken(self, sent: "asyncio.Future[None]") -> None:
        try:
            await asyncio.wait_for(asyncio.shield(sent), self.site.limits.write_timeout_s)
        except TimeoutError:
            stream = getattr(self.request.connection, "stream", None)
            if stream is not None:
                stream.close()
            raise tornado.iostream.StreamClosedError() from None

    def parse_url_path(self, url_path: str) -> str:
        if "\x00" in url_path:
            raise tornado.web.HTTPError(400, "a NUL byte in the path")
        if any(part.startswith(".") for part in url_path.split("/")):
            raise tornado.web.HTTPError(404)  # dot-files and dot-folders are never served
        return super().parse_url_path(url_path)

    def validate_absolute_path(self, root: str, absolute_path: str) -> str | None:
        path = super().validate_absolute_path(root, absolute_path)  # inside root; a folder -> its index
        if path is None:
            return None
        real_root = os.path.join(os.path.realpath(root), "")
        real = os.path.realpath(path)
        if not real.startswith(real_root):  # Tornado before 6.6 follows symlinks anywhere
            raise tornado.web.HTTPError(403)
        if _hidden(real, real_root):  # a symlink to a dot-file or into a dot-folder
            raise tornado.web.HTTPError(404)
        twin = self._gzip_twin(path, real_root)
        if twin is not None:
            self._plain_path = path
            self._stat_result = os.stat(twin)  # size and time are the twin's
            return twin
        return path

    def _gzip_twin(self, path: str, real_root: str) -> str | None:
        """`path`.gz if the browser takes gzip and the twin is a regular file inside the site, not older."""
        if path.endswith(".gz") or not accepts_gzip(self.request.headers.get("Accept-Encoding", "")):
            return None
        twin = path + ".gz"
        try:
            twin_stat, plain_stat = os.stat(twin), os.stat(path)
        except OSError:
            return None
        real = os.path.realpath(twin)
        if (not stat.S_ISREG(twin_stat.st_mode) or twin_stat.st_mtime_ns < plain_stat.st_mtime_ns
                or not real.startswith(real_root) or _hidden(real, real_root)):
            return None
        return twin

    def get_content_type(self) -> str:
        path = self._plain_path or self.absolute_path or ""
        ext = os.path.splitext(path)[1].lower()
        if ext in TYPES:
            kind = TYPES[ext]
        else:
            kind = mimetypes.guess_type(path)[0] or "application/octet-stream"
        return kind + "; charset=utf-8" if kind.startswith("text/") or kind.endswith("json") else kind

    def set_extra_headers(self, path: str) -> None:
        page = os.path.relpath(self._plain_path or self.absolute_path or "", self.root).replace(os.sep, "/")
        # A content-hashed name never changes its bytes (lab/site/assets.py): kept for good. Anything else is revalidated.
        self.set_header("Cache-Control", "public, max-age=31536000, immutable" if is_hashed(page) else "no-cache")
        self.set_header("Vary", "Accept-Encoding")
        if self._plain_path is not None:
            self.set_header("Content-Encoding", "gzip")
        if page.endswith(".html"):
            framed = page in EMBEDDABLE
            self.set_header("Content-Security-Policy",
                            content_security_policy(self.site.script_hashes(self.root, page), framed))
            if not framed:
                self.set_header("X-Frame-Options", "DENY")


def _hidden(real: str, real_root: str) -> bool:
    """Whether a real path inside the real root has a part that starts with a dot."""
    return any(part.startswith(".") for part in real[len(real_root):].split(os.sep))


def _quiet(future: "asyncio.Future[None]") -> None:
    """Take a write's outcome, so that a reader gone away is not logged as an error no one retrieved."""
    if not future.cancelled():
        future.exception()


def make_app(site: Path, room: "RoomServer | None" = None, limits: Limits = Limits()) -> tornado.web.Application:
    """The site's files; with a room (`prefix-lab serve --room`), its routes under /room/ first."""
    from lab.server.roomserve import room_routes

    rooms = room_routes(room) if room is not None else []
    return tornado.web.Application(
        [*rooms, (r"/(.*)", SiteHandler, {"site": _Site(site, limits), "default_filename": "index.html"})],
        compress_response=False,  # the .gz twins are already compressed
        static_hash_cache=False,
        log_function=_log_request,
    )


def _log_request(handler: tornado.web.RequestHandler) -> None:
    """Tornado's access log line, with the value of any `token` parameter hidden (the facilitator's is secret)."""
    from tornado.log import access_log

    from lab.server.roomserve import hidden_token

    status = handler.get_status()
    log = access_log.info if status < 400 else access_log.warning if status < 500 else access_log.error
    request = handler.request
    log("%d %s %s (%s) %.2fms", status, request.method, hidden_token(request.uri or ""), request.remote_ip,
        1000.0 * request.request_time())


class _Refusal(tornado.httputil.HTTPMessageDelegate):
    """Answers 411, 413, 414 or 431 instead of handing an over-long request to the application."""

    REASONS = {411: "Length Required", 413: "Content Too Large", 414: "URI Too Long",
               431: "Request Header Fields Too Large"}
    SAYS = {411: "send the body with a Content-Length", 413: "the body is too large"}

    def __init__(self, inner: tornado.httputil.HTTPMessageDelegate, conn: tornado.httputil.HTTPConnection,
                 limits: Limits) -> None:
        self.inner, self.conn, self.limits = inner, conn, limits
        self.refused = False

    def headers_received(self, start_line: Any, headers: tornado.httputil.HTTPHeaders) -> Any:
        status, declared = None, 0
        if len(getattr(start_line, "path", "")) > self.limits.max_url_bytes:
            status = 414
        elif sum(len(k) + len(v) + 4 for k, v in headers.get_all()) > self.limits.max_header_bytes:
            status = 431
        elif "chunked" in headers.get("Transfer-Encoding", "").lower():
            status = 411
        else:
            length = headers.get("Content-Length", "0").strip()
            declared = int(length) if length.isdigit() and len(length) < 20 else 0  # Tornado refuses the rest
            if declared > self.limits.max_body_bytes:
                status = 413
        if status is None:
            return self.inner.headers_received(start_line, headers)
        self.refused = True
        body = f"{status} {self.REASONS[status]}: {self.SAYS.get(status, 'too long')}\n".encode()
        head = tornado.httputil.HTTPHeaders({"Content-Type": "text/plain; charset=utf-8",
                                             "Content-Length": str(len(body))})
        if status in (411, 413):  # a body may be on its way: answer, read what was sent, then close
            head["Connection"] = "close"
            stream = self.conn.detach()  # type: ignore[attr-defined]
            reply = tornado.httputil.ResponseStartLine("HTTP/1.1", status, self.REASONS[status])
            lines = [f"{reply.version} {reply.code} {reply.reason}"] + [f"{k}: {v}" for k, v in head.get_all()]
            asyncio.ensure_future(_answer_and_drain(stream, ("\r\n".join(lines) + "\r\n\r\n").encode() + body,
                                                    declared or LINGER_BYTES, self.limits.header_timeout_s))
            return None
        self.conn.write_headers(
            tornado.httputil.ResponseStartLine("HTTP/1.1", status, self.REASONS[status]), head, body)
        self.conn.finish()
        return None

    def data_received(self, chunk: bytes) -> Any:
        return None if self.refused else self.inner.data_received(chunk)

    def finish(self) -> None:
        if not self.refused:
            self.inner.finish()

    def on_connection_close(self) -> None:
        if not self.refused:
            self.inner.on_connection_close()


LINGER_BYTES = 8 << 20  # of a refused body, read and dropped before closing (beyond that, the client gets a reset)


async def _answer_and_drain(stream: tornado.iostream.IOStream, reply: bytes, declared: int, timeout_s: float) -> None:
    """Write `reply`, then read and drop up to `declared` bytes (at most LINGER_BYTES) within `timeout_s`, then
    close: closing with unread bytes would make the client's kernel drop the answer for a reset."""
    deadline = time.monotonic() + timeout_s
    left = min(declared, LINGER_BYTES)
    try:
        await stream.write(reply)
        while left > 0:
            chunk = await asyncio.wait_for(stream.read_bytes(min(left, 65536), partial=True),
                                           max(0.0, deadline - time.monotonic()))
            left -= len(chunk)
    except (tornado.iostream.StreamClosedError, TimeoutError, OSError):
        pass
    finally:
        stream.close()


class _Limited(tornado.httputil.HTTPServerConnectionDelegate):
    """The application behind the URL, header and body size checks."""

    def __init__(self, app: tornado.web.Application, limits: Limits) -> None:
        self.app, self.limits = app, limits

    def start_request(self, server_conn: object, request_conn: tornado.httputil.HTTPConnection) -> Any:
        return _Refusal(self.app.start_request(server_conn, request_conn), request_conn, self.limits)

    def on_close(self, server_conn: object) -> None:
        self.app.on_close(server_conn)


BUSY = (b"HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: 24\r\n"
        b"Retry-After: 5\r\nConnection: close\r\n\r\ntoo many connections now\n")
_OUT_OF = (errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM)  # accept() failing for want of resources
PAUSE_S = 0.25  # accepting waits this long when descriptors have run out
log = logging.getLogger("tornado.general")


class _CappedServer(tornado.httpserver.HTTPServer):
    """An HTTPServer that answers 503 and closes a connection beyond `max_connections`, or beyond
    `max_per_address` from its client's address; and pauses accepting when descriptors run out."""

    def initialize(self, *args: Any, max_connections: int = 700, max_per_address: int = 48,
                   **kwargs: Any) -> None:
        super().initialize(*args, **kwargs)
        self.max_connections, self.max_per_address = max_connections, max_per_address
        self._open: dict[str, list[tornado.iostream.IOStream]] = {}  # address -> its connections (some closed)
        self._count = 0  # streams in `_open`, closed ones not yet dropped
        self._paused_said = 0.0  # when the last "out of descriptors" warning was logged
        self.open_files = (-1, -1)  # the soft limit of open files before and after make_server (-1: no limit)

    def handle_stream(self, stream: tornado.iostream.IOStream, address: tuple) -> None:
        ip = str(address[0]) if isinstance(address, tuple) and address else ""
        if len(self._open.get(ip, ())) >= self.max_per_address:  # the closed are dropped only when a cap is reached
            self._drop_closed(ip)
        if self._count >= self.max_connections:
            for other in list(self._open):
                self._drop_closed(other)
        mine = self._open.setdefault(ip, [])
        if len(mine) >= self.max_per_address or self._count >= self.max_connections:
            _refuse(stream)
            return
        mine.append(stream)
        self._count += 1
        super().handle_stream(stream, address)

    def _drop_closed(self, ip: str) -> None:
        streams = self._open.get(ip, [])
        alive = [s for s in streams if not s.closed()]
        self._count -= len(streams) - len(alive)
        if alive:
            self._open[ip] = alive
        else:
            self._open.pop(ip, None)

    def add_sockets(self, sockets: Any) -> None:
        """Tornado's, with an accept handler that waits a moment when descriptors run out instead of failing."""
        for sock in sockets:
            self._sockets[sock.fileno()] = sock
            self._handlers[sock.fileno()] = self._accepting(sock)

    def _accepting(self, sock: socket.socket) -> Any:
        loop = tornado.ioloop.IOLoop.current()
        removed = [False]

        def accept(fd: Any, events: int) -> None:
            for _ in range(128):  # as Tornado: a bounded batch, so that other work is not starved
                if removed[0]:
                    return
                try:
                    connection, address = sock.accept()
                except BlockingIOError:
                    return
                except ConnectionAbortedError:
                    continue
                except OSError as exc:
                    if exc.errno not in _OUT_OF:
                        raise
                    self._pause(sock, loop, removed)
                    return
                self._handle_connection(connection, address)

        def remove() -> None:
            if not removed[0]:
                loop.remove_handler(sock)
            removed[0] = True

        loop.add_handler(sock, accept, tornado.ioloop.IOLoop.READ)
        return remove

    def _pause(self, sock: socket.socket, loop: Any, removed: list[bool]) -> None:
        """No descriptor left to accept with: stop listening for PAUSE_S (a warning at most once a minute)."""
        now = time.monotonic()
        if now - self._paused_said > 60:
            self._paused_said = now
            log.warning("out of open files: not accepting connections for a moment (%d open)", self._count)
        loop.remove_handler(sock)

        def resume() -> None:
            if not removed[0] and sock.fileno() in self._handlers:
                self._handlers[sock.fileno()] = self._accepting(sock)
        loop.call_later(PAUSE_S, resume)


def _refuse(stream: tornado.iostream.IOStream) -> None:
    """Answer 503 and close; at once when the answer went out whole (it nearly always does)."""
    written = stream.write(BUSY)
    if not stream.writing():
        written.add_done_callback(_quiet)
        stream.close()
    else:
        written.add_done_callback(lambda done: _close(stream, done))


def _close(stream: tornado.iostream.IOStream, written: "asyncio.Future[None]") -> None:
    if not written.cancelled():
        written.exception()  # a client already gone is no error
    stream.close()


def make_server(site: Path, limits: Limits = Limits(), room: "RoomServer | None" = None) -> "_CappedServer":
    """The HTTP server for `site` with these limits, and a workshop room if given (add sockets to start it).

    Raises the soft limit of open files toward what `limits.max_connections` needs; where it cannot, the server
    takes fewer connections at once (its `max_connections`).
    """
    cap, before, after = _fit_open_files(limits.max_connections)
    server = _CappedServer(
        _Limited(make_app(site, room, limits), limits),
        max_connections=cap,
        max_per_address=limits.max_per_address,
        idle_connection_timeout=limits.header_timeout_s,  # Tornado's header timeout is this one too
        body_timeout=limits.header_timeout_s,
        max_header_size=65_536,
        max_body_size=limits.max_body_bytes,
        max_buffer_size=max(1 << 20, limits.max_body_bytes),
    )
    server.open_files = (before, after)
    return server


def serve(site: Path, host: str = "127.0.0.1", port: int = 8000, rebuild: bool = False,
          limits: Limits = Limits(), room_data: Path | None = None) -> None:
    """Bind the port, build if needed, then serve until interrupted; with `room_data`, a workshop room too.

    Raises ServeError (bad port, port taken, an unusable room folder) or BuildError (the site cannot be built).
    """
    if not 0 <= port < 65536:
        raise ServeError(f"--port {port}: use a port from 1 to 65535 (0 picks a free one)")
    try:  # first, so that a port in use fails before any build
        sockets = tornado.netutil.bind_sockets(port, address=host, family=socket.AF_UNSPEC)
    except (OSError, ValueError) as exc:  # in use, not ours, or not an address (UnicodeError is a ValueError)
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise ServeError(f"cannot listen on {host}:{port}: {reason}") from None
    room = None
    try:
        if rebuild or not site_is_current(site):
            print(f"building the lab into {site} ...", flush=True)
            build_site(site)
        bound = sockets[0].getsockname()[1]
        if room_data is not None:
            room = _open_room(room_data, host, bound, site)
    except BaseException:
        for sock in sockets:
            sock.close()
        raise
    shown = "127.0.0.1" if host in ("0.0.0.0", "") else host
    print(f"prefix-lab is at http://{shown}:{bound}/  (embed: http://{shown}:{bound}/embed.html)", flush=True)
    if host in ("0.0.0.0", ""):
        print("listening on every address: people in the room can open this machine's address on that port",
              flush=True)
    if room is not None:
        print(f"workshop room: participants join at {room.join_url}", flush=True)
        print(f"facilitator page (keep this address to yourself): {room.join_url.removesuffix('join')}"
              f"facilitator?token={room.token}", flush=True)
        print(f"the room's data is in {room_data}", flush=True)
        if host.startswith("127.") or host in ("localhost", "::1"):
            print("only this machine can join: add --host 0.0.0.0 to let the room's network in", flush=True)

    async def main() -> None:
        server = make_server(site, limits, room)
        server.add_sockets(sockets)
        before, after = server.open_files
        if server.max_connections < limits.max_connections:
            print(f"open files: this machine allows {after:,}, enough for {server.max_connections:,} "
                  f"connections at once (not {limits.max_connections:,}); raise `ulimit -n` for more", flush=True)
        elif after > before >= 0:
            print(f"open files: raised the limit from {before:,} to {after:,} for {limits.max_connections:,} "
                  f"connections at once ({limits.max_per_address} from one address)", flush=True)
        await asyncio.Event().wait()

    try:
        asyncio.run(main())
    except KeyboardInterrupt:
        pass
    finally:
        if room is not None:
            room.close()


def _open_room(data: Path, host: str, port: int, site: Path | None = None) -> "RoomServer":
    """The room on `data`, with a new facilitator token; its join address uses this machine's address on the
    room's network when listening on every address."""
    import secrets

    from lab.server.room import RoomError
    from lab.server.roomserve import RoomServer

    address = _lan_address() if host in ("0.0.0.0", "", "::") else host
    shown = f"[{address}]" if ":" in address else address
    try:
        return RoomServer(data, secrets.token_urlsafe(18), f"http://{shown}:{port}/room/join", site=site)
    except RoomError as exc:
        raise ServeError(str(exc)) from None


def _lan_address() -> str:
    """This machine's address on its default route (no packet is sent), else 127.0.0.1."""
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
            probe.connect(("10.254.254.254", 9))
            return str(probe.getsockname()[0])
    except OSError:
        return "127.0.0.1"
