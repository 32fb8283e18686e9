"""`prefix-lab serve`: build the site if it is missing or stale, then serve it with Tornado.

Static files only, from the site folder and nothing outside it: no directory
listings, `/` serves index.html. Each file goes out with its proper type
(`.wasm` as application/wasm, `.mjs` as JavaScript), an ETag (a 304 when it
matches), `Cache-Control: no-cache` (revalidate, so a rebuilt site is never
stale), and its gzip twin when the browser accepts gzip. Listens on
127.0.0.1 unless told otherwise (`--host 0.0.0.0` for a workshop room).
"""

import asyncio
import mimetypes
import os
import socket
from pathlib import Path

import tornado.httpserver
import tornado.netutil
import tornado.web

from .build import BuildError, build_site, site_is_current

__all__ = ["SiteHandler", "make_app", "serve"]

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


class SiteHandler(tornado.web.StaticFileHandler):
    """Tornado's static handler, plus content types, gzip twins and no-cache revalidation."""

    def initialize(self, path: str, default_filename: str | None = None) -> None:
        super().initialize(path, default_filename)
        self._plain_path: str | None = None  # the file asked for, when its .gz twin is sent

    def validate_absolute_path(self, root: str, absolute_path: str) -> str | None:
        path = super().validate_absolute_path(root, absolute_path)  # stays inside root; dirs -> index
        if path is None:
            return None
        if os.path.basename(path).startswith("."):
            raise tornado.web.HTTPError(404)
        twin = path + ".gz"
        accepts = "gzip" in self.request.headers.get("Accept-Encoding", "")
        if accepts and not path.endswith(".gz") and os.path.isfile(twin):
            self._plain_path = path
            if hasattr(self, "_stat_result"):  # newer Tornado stats the file here; size and time are the twin's
                self._stat_result = os.stat(twin)
            return twin
        return path

    def get_content_type(self) -> str:
        path = self._plain_path or self.absolute_path or ""
        ext = os.path.splitext(path)[1].lower()
        if ext in TYPES:
            kind = TYPES[ext]
        else:
            kind = mimetypes.guess_type(path)[0] or "application/octet-stream"
        return kind + "; charset=utf-8" if kind.startswith("text/") or kind.endswith("json") else kind

    def set_extra_headers(self, path: str) -> None:
        self.set_header("Cache-Control", "no-cache")
        self.set_header("Vary", "Accept-Encoding")
        self.set_header("X-Content-Type-Options", "nosniff")
        if self._plain_path is not None:
            self.set_header("Content-Encoding", "gzip")


def make_app(site: Path) -> tornado.web.Application:
    root = str(site.resolve())
    return tornado.web.Application(
        [(r"/(.*)", SiteHandler, {"path": root, "default_filename": "index.html"})],
        compress_response=False,  # the .gz twins are already compressed
        static_hash_cache=False,
    )


def serve(site: Path, host: str = "127.0.0.1", port: int = 8000, rebuild: bool = False) -> None:
    """Build if needed, then serve until interrupted."""
    from .cli import UsageError

    if not 0 <= port < 65536:
        raise UsageError(f"--port {port}: use a port from 1 to 65535 (0 picks a free one)")
    if rebuild or not site_is_current(site):
        try:
            print(f"building the lab into {site} ...", flush=True)
            build_site(site)
        except BuildError as exc:
            raise UsageError(str(exc)) from None
    app = make_app(site)
    try:
        sockets = tornado.netutil.bind_sockets(port, address=host, family=socket.AF_UNSPEC)
    except OSError as exc:  # in use, not ours, or not an address
        raise UsageError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    bound = sockets[0].getsockname()[1]
    shown = "127.0.0.1" if host in ("0.0.0.0", "") else host
    print(f"prefix-lab is at http://{shown}:{bound}/  (embed: http://{shown}:{bound}/embed.html)", flush=True)
    if host in ("0.0.0.0", ""):
        print("listening on every address: people in the room can open this machine's address on that port",
              flush=True)

    async def main() -> None:
        server = tornado.httpserver.HTTPServer(app)
        server.add_sockets(sockets)
        await asyncio.Event().wait()

    try:
        asyncio.run(main())
    except KeyboardInterrupt:
        pass

