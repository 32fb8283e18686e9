"""An article on another origin that embeds the lab, and a proxy that sees every request: for browser tests
and benchmarks of embeds (tests/browser/test_embed_height.py, tests/browser/test_embeds_page.py, bench/bench_embeds.py,
bench/bench_embed_fit.py).

`ArticleServer` serves article pages from its own port on 127.0.0.1, so the article and the lab are on two
origins, as on a real site. `article_html` writes such a page: some prose, then one iframe per embed URL,
with the docs' snippet for several embeds (docs/embedding.md) sizing each frame to the height its embed reports.

`serve_as_built` serves a built site as it is, without rebuilding it (`prefix-lab serve` would rebuild a site
built from other sources, which a benchmark comparing two versions must not).

`RecordingProxy` is an HTTP proxy for a browser context (`proxied_context`). Playwright's routes and request
events miss what a SharedWorker fetches, and the embeds' shared simulator is one, so tests and benchmarks
watch the network here instead: the proxy forwards requests to the origins it is given, refuses any other
(remembered in `foreign`, but for Chromium's own services, which the browser calls on its own), and records
each request's URL, status and bytes (body as sent, compressed).

Nothing here runs in the browser's Pyodide; it imports only the standard library at import time (and
Playwright's objects are passed in).
"""

import html
import http.client
import http.server
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

__all__ = ["CONTENT_HEIGHT", "SNIPPET", "ArticleServer", "Fetch", "RecordingProxy", "article_host", "article_html",
           "frame_fits", "proxied_context", "serve_as_built"]

# Chromium's own services (autofill asks them about the page's forms): reached by the browser, not the page,
# and refused by the proxy like anything else, but not counted against the page.
BROWSER_SERVICES = (".googleapis.com:443", ".gstatic.com:443", ".google.com:443")

# The docs' parent-page snippet (docs/embedding.md) for several embeds: each frame takes the height its own embed reports.
SNIPPET = """addEventListener("message", (e) => {
  if (!e.data || e.data.type !== "prefix-lab:height") return;
  for (const frame of document.querySelectorAll("iframe.prefix-lab"))
    if (frame.contentWindow === e.source) frame.style.height = e.data.height + "px";
});"""

# Where an embed's content ends, in its own frame: the lab's box and the body's margin below it.
CONTENT_HEIGHT = ("Math.ceil(document.querySelector('.lab').getBoundingClientRect().bottom + window.scrollY + "
                  "parseFloat(getComputedStyle(document.body).marginBottom || '0'))")


def article_html(urls: list[str], gap_px: int = 0, frame_px: int = 300) -> str:
    """An article embedding each URL in turn (frames `frame_px` tall until their embeds report), `gap_px` of
    prose before each frame but the first."""
    parts = ["<!doctype html><html lang='en'><meta charset='utf-8'><link rel='icon' href='data:,'><title>An article</title>",
             "<body style='margin: 0 auto; max-width: 760px; font: 16px/1.5 sans-serif'>",
             "<p>Some prose before the lab.</p>"]
    for i, url in enumerate(urls):
        if i and gap_px:
            parts.append(f"<div class='prose' style='height: {gap_px}px'>More prose.</div>")
        parts.append(f"<iframe class='prefix-lab' id='embed-{i}' src='{html.escape(url)}' title='prefix-lab {i}' "
                     f"style='width: 100%; height: {frame_px}px; border: 0'></iframe>")
    parts.append(f"<p>Some prose after the lab.</p><script>{SNIPPET}</script></body></html>")
    return "".join(parts)


class ArticleServer:
    """Serves `pages` ({path: html}, for example "/article.html") on 127.0.0.1 at a free port, in a thread."""

    def __init__(self) -> None:
        self.pages: dict[str, str] = {}
        pages = self.pages

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 (the standard library's name)
                body = pages.get(self.path.split("?")[0], "").encode()
                self.send_response(200 if body else 404)
                self.send_header("Content-Type", "text/html; charset=utf-8")
                self.send_header("Content-Length", str(len(body)))
                self.send_header("Cache-Control", "no-store")
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.origin = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def put(self, path: str, page: str) -> str:
        """Serve `page` at `path`; its URL."""
        self.pages[path] = page
        return self.origin + path

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@dataclass(frozen=True, slots=True)
class Fetch:
    """One request that went through the proxy."""

    url: str
    status: int  # 0: refused (another origin) or the origin did not answer
    bytes: int  # the response body as sent (compressed when it was)


class RecordingProxy:
    """A forwarding HTTP proxy on 127.0.0.1 that lets requests reach `origins` only, recording each.

    `patch`, if set, is `(url, body) -> body or None`: a test's way to change a file on its way (asked for
    uncompressed when a patch is set); None leaves it as it is.
    """

    HOP = {"connection", "keep-alive", "proxy-connection", "transfer-encoding", "te", "trailer", "upgrade",
           "proxy-authorization", "content-length"}

    def __init__(self, origins: list[str]) -> None:
        self.origins = [o.rstrip("/") for o in origins]
        self.fetches: list[Fetch] = []
        self.foreign: list[str] = []
        self.patch: Callable[[str, bytes], bytes | None] | None = None
        self.lock = threading.Lock()
        proxy = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self) -> None:  # noqa: N802
                proxy._forward(self)

            def do_CONNECT(self) -> None:  # noqa: N802 (https: never one of ours)
                proxy._refuse(self, "https://" + self.path)

            def log_message(self, *args: Any) -> None:
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def _refuse(self, handler: http.server.BaseHTTPRequestHandler, url: str) -> None:
        with self.lock:
            if not (url.startswith("https://") and url.endswith(BROWSER_SERVICES)):
                self.foreign.append(url)
            self.fetches.append(Fetch(url, 0, 0))
        handler.send_error(403, "not an origin of this test")

    def _forward(self, handler: http.server.BaseHTTPRequestHandler) -> None:
        url = handler.path
        parts = urlsplit(url)
        if f"{parts.scheme}://{parts.netloc}" not in self.origins:
            self._refuse(handler, url)
            return
        headers = {k: v for k, v in handler.headers.items() if k.lower() not in self.HOP}
        patch = self.patch
        if patch is not None:
            headers = {k: v for k, v in headers.items() if k.lower() != "accept-encoding"}
        conn = http.client.HTTPConnection(parts.hostname or "", parts.port, timeout=120)
        try:
            conn.request("GET", parts.path + (f"?{parts.query}" if parts.query else ""), headers=headers)
            answer = conn.getresponse()
            body = answer.read()
        except OSError:
            with self.lock:
                self.fetches.append(Fetch(url, 0, 0))
            handler.send_error(502, "the origin did not answer")
            return
        finally:
            conn.close()
        with self.lock:
            self.fetches.append(Fetch(url, answer.status, len(body)))
        patched = patch(url, body) if patch is not None and answer.status == 200 else None
        body = body if patched is None else patched
        handler.send_response(answer.status)
        for key, value in answer.getheaders():
            if key.lower() not in self.HOP:
                handler.send_header(key, value)
        handler.send_header("Content-Length", str(len(body)))
        handler.end_headers()
        handler.wfile.write(body)

    def clear(self) -> None:
        with self.lock:
            self.fetches.clear()
            self.foreign.clear()

    def seen(self, part: str) -> list[Fetch]:
        """The requests whose URL holds `part`."""
        with self.lock:
            return [f for f in self.fetches if part in f.url]

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@contextmanager
def article_host(site_origin: str) -> Iterator[tuple[ArticleServer, RecordingProxy]]:
    """An article server and a proxy that lets the browser reach it and `site_origin` (the lab's) only."""
    article = ArticleServer()
    proxy = RecordingProxy([site_origin, article.origin])
    try:
        yield article, proxy
    finally:
        article.close()
        proxy.close()


def proxied_context(browser: Any, proxy: RecordingProxy, **options: Any) -> Any:
    """A new Playwright context whose every request, 127.0.0.1's included, goes through `proxy`."""
    return browser.new_context(proxy={"server": proxy.url, "bypass": "<-loopback>"}, **options)


def frame_fits(host: Any, frame_id: str, content: int, within: int = 2, timeout_ms: int = 10_000) -> bool:
    """Whether the iframe `frame_id` on `host` comes to end within `within` px of `content` (its embed's
    CONTENT_HEIGHT) in `timeout_ms`."""
    try:
        host.wait_for_function(f"Math.abs(document.getElementById({frame_id!r}).getBoundingClientRect().height - "
                               f"{content}) <= {within}", timeout=timeout_ms)
    except Exception as exc:  # Playwright's TimeoutError; the module does not import Playwright
        if type(exc).__name__ == "TimeoutError":
            return False
        raise
    return True


@contextmanager
def serve_as_built(site: Path) -> Iterator[str]:
    """Serve the built `site` as it is (lab/server/serve.py's server, in a thread, on a free port): its URL."""
    import asyncio

    import tornado.netutil

    from .serve import make_server

    sockets = tornado.netutil.bind_sockets(0, address="127.0.0.1")
    port = sockets[0].getsockname()[1]
    loop = asyncio.new_event_loop()
    started = threading.Event()

    def run() -> None:
        asyncio.set_event_loop(loop)

        async def start() -> None:
            make_server(site).add_sockets(sockets)
            started.set()

        loop.run_until_complete(start())
        loop.run_forever()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    started.wait(30)
    try:
        yield f"http://127.0.0.1:{port}/"
    finally:
        loop.call_soon_threadsafe(loop.stop)
        thread.join(10)
