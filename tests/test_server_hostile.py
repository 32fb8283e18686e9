"""The server opened to a workshop room: hostile paths, planted files, slow and greedy clients, headers.

Each test serves a tiny hand-built site from a Tornado server running in a
thread of this process, on a port the OS picked; nothing here sleeps.
"""

import asyncio
import gzip
import http.client
import json
import os
import socket
import threading
import time
from contextlib import contextmanager

import pytest
import tornado.netutil
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lab import build
from lab.serve import Limits, accepts_gzip, make_server

BOOT = "document.documentElement.dataset.lab = 'booting';"
PAGE = f"<!doctype html><title>t</title><script>{BOOT}</script><script type=\"application/json\">{{}}</script>"


@pytest.fixture
def site(tmp_path):
    """A tiny site: two pages with one inline script, a script with a gzip twin, build.json."""
    root = tmp_path / "site"
    root.mkdir()
    for name in build.PAGES:
        (root / name).write_text(PAGE)
    (root / "app.js").write_text("console.log('plain');\n" * 100)
    (root / "app.js.gz").write_bytes(gzip.compress((root / "app.js").read_bytes()))
    (root / "build.json").write_text(json.dumps({
        "inline_scripts": {name: build.inline_script_hashes(PAGE) for name in build.PAGES}}))
    return root


@contextmanager
def running(site, **limits):
    """Serve `site` in a background thread; yield the port."""
    sockets = tornado.netutil.bind_sockets(0, "127.0.0.1", family=socket.AF_INET)
    loop = asyncio.new_event_loop()
    started = threading.Event()
    servers = []

    def run():
        asyncio.set_event_loop(loop)

        async def start():
            server = make_server(site, Limits(**limits))
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
    try:
        yield sockets[0].getsockname()[1]
    finally:
        loop.call_soon_threadsafe(loop.stop)
        thread.join(10)


def get(port, path, headers=None, method="GET"):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    conn.request(method, path, headers=headers or {})
    response = conn.getresponse()
    body = response.read()
    conn.close()
    return response, body


def raw(port, data, timeout=10):
    """Send raw bytes; return what comes back until the server closes or `timeout`."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
        sock.sendall(data)
        received = b""
        while b"\r\n\r\n" not in received:
            chunk = sock.recv(65536)
            if not chunk:
                break
            received += chunk
        return received


def test_a_nul_byte_in_the_path_is_a_400(site):
    with running(site) as port:
        response, body = get(port, "/index.html%00")
        assert response.status == 400 and b"Traceback" not in body
        assert get(port, "/index.html")[0].status == 200  # and the server is fine


def test_dot_files_and_dot_folders_are_not_served(site):
    (site / ".secretdir").mkdir()
    (site / ".secretdir" / "file.txt").write_text("secret")
    (site / ".env").write_text("secret")
    with running(site) as port:
        for path in ("/.secretdir/file.txt", "/.env", "/%2esecretdir/file.txt", "/.secretdir/"):
            response, body = get(port, path)
            assert response.status in (403, 404) and b"secret" not in body, path


def test_a_gzip_twin_planted_as_a_symlink_out_of_the_site_is_not_served(site, tmp_path):
    outside = tmp_path / "outside.txt.gz"
    outside.write_bytes(gzip.compress(b"the password file"))
    (site / "evil.txt").write_text("harmless")
    (site / "evil.txt.gz").symlink_to(outside)
    with running(site) as port:
        response, body = get(port, "/evil.txt", {"Accept-Encoding": "gzip"})
        assert response.getheader("Content-Encoding") is None and body == b"harmless"
        assert get(port, "/evil.txt.gz")[0].status == 403  # nor asked for by name


def test_gzip_q0_gets_the_plain_file(site):
    plain = (site / "app.js").read_bytes()
    with running(site) as port:
        for refusal in ("gzip;q=0", "gzip; q=0, identity", "*;q=0", "identity", "br"):
            response, body = get(port, "/app.js", {"Accept-Encoding": refusal})
            assert response.getheader("Content-Encoding") is None and body == plain, refusal
        response, body = get(port, "/app.js", {"Accept-Encoding": "br, gzip;q=0.5"})
        assert response.getheader("Content-Encoding") == "gzip" and gzip.decompress(body) == plain


@pytest.mark.parametrize("header, takes", [
    ("gzip", True), ("gzip, deflate, br", True), ("GZIP;Q=1", True), ("*", True), ("x-gzip", True),
    ("gzip;q=0", False), ("gzip;q=0.000", False), ("*;q=0", False), ("gzip;q=0, *", False),
    ("*, gzip;q=0", False), ("", False), ("identity", False), ("gzip;q=bogus", False),
])
def test_accept_encoding_weights(header, takes):
    assert accepts_gzip(header) is takes


def test_a_hand_edited_file_is_served_instead_of_its_stale_twin(site):
    edited = b"console.log('edited by hand');\n" * 60
    (site / "app.js").write_bytes(edited)
    twin = (site / "app.js.gz").stat()
    os.utime(site / "app.js", ns=(twin.st_atime_ns, twin.st_mtime_ns + 1_000_000_000))  # edited after the build
    with running(site) as port:
        response, body = get(port, "/app.js", {"Accept-Encoding": "gzip"})
        assert response.getheader("Content-Encoding") is None and body == edited


def test_pages_carry_a_content_security_policy_with_their_script_hashes(site):
    digest = build.inline_script_hashes(PAGE)
    assert len(digest) == 1  # the boot script; the JSON block is not run
    with running(site) as port:
        page, _ = get(port, "/")
        policy = page.getheader("Content-Security-Policy")
        assert f"script-src 'self' 'unsafe-eval' 'wasm-unsafe-eval' {digest[0]}" in policy
        for rule in ("default-src 'self'", "style-src 'self' 'unsafe-inline'", "worker-src 'self' blob:",
                     "frame-ancestors 'none'"):
            assert rule in policy
        assert page.getheader("X-Frame-Options") == "DENY"
        assert page.getheader("Referrer-Policy") == "no-referrer"
        embed, _ = get(port, "/embed.html")
        assert "frame-ancestors" not in embed.getheader("Content-Security-Policy")  # articles may frame it
        assert embed.getheader("X-Frame-Options") is None and digest[0] in embed.getheader("Content-Security-Policy")
        script, _ = get(port, "/app.js", {"Accept-Encoding": "gzip"})  # a worker's script sets the worker's policy
        assert "'wasm-unsafe-eval'" in script.getheader("Content-Security-Policy")
        for response in (page, embed, script, get(port, "/missing")[0]):
            assert response.getheader("Server") is None  # no Tornado version advertised


def test_an_over_long_url_is_a_414_and_over_long_headers_a_431(site):
    with running(site) as port:
        long_url = raw(port, b"GET /" + b"a" * 10_000 + b" HTTP/1.1\r\nHost: x\r\n\r\n")
        assert long_url.startswith(b"HTTP/1.1 414 ")
        big_header = raw(port, b"GET / HTTP/1.1\r\nHost: x\r\nX-Big: " + b"b" * 20_000 + b"\r\n\r\n")
        assert big_header.startswith(b"HTTP/1.1 431 ")
        many = b"".join(b"X-%d: %s\r\n" % (i, b"c" * 100) for i in range(300))
        assert raw(port, b"GET / HTTP/1.1\r\nHost: x\r\n" + many + b"\r\n").startswith(b"HTTP/1.1 431 ")
        assert raw(port, b"GET /app.js HTTP/1.1\r\nHost: x\r\n\r\n").startswith(b"HTTP/1.1 200 ")


def test_a_connection_that_never_finishes_its_headers_is_closed(site):
    with running(site, header_timeout_s=0.5) as port, socket.create_connection(("127.0.0.1", port)) as sock:
        sock.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n")
        sock.settimeout(0.1)
        start, closed = time.monotonic(), False
        while not closed and time.monotonic() - start < 5:
            try:
                closed = sock.recv(1024) == b""
            except TimeoutError:
                sock.sendall(b"X")  # slowloris: a byte now and then must not keep it open
            except ConnectionResetError:
                closed = True
        assert closed, "the server kept a connection that never finished its headers"


def _request(sock, close=False):
    sock.sendall(b"GET /app.js HTTP/1.1\r\nHost: x\r\n" + (b"Connection: close\r\n" if close else b"") + b"\r\n")
    reply = sock.makefile("rb")
    status = reply.readline()
    length = 0
    while (line := reply.readline()) not in (b"\r\n", b""):
        if line.lower().startswith(b"content-length:"):
            length = int(line.split(b":")[1])
    reply.read(length)
    return status


def test_connections_beyond_the_cap_are_refused_and_a_freed_slot_serves_again(site):
    with running(site, max_connections=3) as port:
        held = [socket.create_connection(("127.0.0.1", port), timeout=10) for _ in range(3)]
        try:
            for sock in held:
                assert _request(sock).startswith(b"HTTP/1.1 200")  # served, kept alive
            assert raw(port, b"GET /app.js HTTP/1.1\r\nHost: x\r\n\r\n").startswith(b"HTTP/1.1 503 ")
            assert _request(held[0], close=True).startswith(b"HTTP/1.1 200")
            assert held[0].recv(1) == b""  # the server has closed it: a slot is free
            assert get(port, "/app.js")[0].status == 200
        finally:
            for sock in held:
                sock.close()


SEGMENTS = st.sampled_from(["index.html", "app.js", "..", ".", "%2e%2e", "%00", "%ff", "%2f", "\\", "a b",
                            "é", "%c3%a9", "//", ".secretdir", "build.json", "%252e", "~", "?x=1", "#f", "%"])


@settings(max_examples=150, derandomize=True, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(parts=st.lists(SEGMENTS, max_size=6), method=st.sampled_from(["GET", "HEAD", "POST", "OPTIONS"]))
def test_no_path_makes_a_server_error(site, parts, method):
    path = ("/" + "/".join(parts)).encode()
    with running(site) as port:
        reply = raw(port, method.encode() + b" " + path + b" HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    status = int(reply.split(b" ", 2)[1])  # always an answer: never a dropped connection
    assert 200 <= status < 500, (path, reply[:200])
