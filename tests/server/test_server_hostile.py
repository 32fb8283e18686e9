"""The server opened to a workshop room: hostile paths, planted files, slow and greedy clients, headers.

Each test serves a tiny hand-built site from a Tornado server running in a
thread of this process (or, to try a low limit of open files, in a process of
its own), on a port the OS picked. Nothing waits on a clock but the polls for
a slot the server frees, each bounded in count.
"""

import asyncio
import gzip
import http.client
import json
import os
import socket
import subprocess
import sys
import threading
import time
from contextlib import contextmanager

import pytest
import tornado.netutil
from helpers import ROOT
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lab.server.serve import Limits, accepts_gzip, make_server
from lab.site import build

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


# -- one client against the others: slow readers, slowloris, descriptors, digests --------------------------

def _connect(port, local="127.0.0.1", rcvbuf=None):
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    if rcvbuf:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
    sock.bind((local, 0))
    sock.settimeout(10)
    sock.connect(("127.0.0.1", port))
    return sock


def _served_once_free(port, local="127.0.0.3", tries=200):
    """Ask for /app.js until a slot is free (bounded): the answers, last first."""
    answers = []
    for _ in range(tries):
        sock = _connect(port, local)
        try:
            status = _request(sock, close=True)
        except OSError:
            status = b"(dropped)"
        sock.close()
        answers.insert(0, status)
        if status.startswith(b"HTTP/1.1 200"):
            break
        time.sleep(0.05)  # a slot frees when the server gives up on the reader: ask again shortly
    return answers


@pytest.fixture
def big_site(site):
    (site / "big.bin").write_bytes(os.urandom(24 << 20))  # far more than the socket buffers hold
    return site


def test_a_reader_that_stops_reading_a_file_is_cut_and_frees_its_slot(big_site):
    with running(big_site, max_connections=1, write_timeout_s=0.3) as port:
        stuck = _connect(port, rcvbuf=4096)
        stuck.sendall(b"GET /big.bin HTTP/1.1\r\nHost: x\r\n\r\n")  # and never reads a byte
        try:
            answers = _served_once_free(port)
            assert answers[0].startswith(b"HTTP/1.1 200"), answers[:3]  # the slot came back
            stuck.settimeout(5)
            received = 0
            try:
                while chunk := stuck.recv(1 << 20):
                    received += len(chunk)
            except ConnectionResetError:
                pass
            assert received < (24 << 20)  # it was cut, not finished
        finally:
            stuck.close()


def test_one_address_cannot_hold_every_connection(site):
    with running(site, max_connections=6, max_per_address=2) as port:
        held = [_connect(port, "127.0.0.2") for _ in range(2)]
        try:
            for sock in held:
                assert _request(sock).startswith(b"HTTP/1.1 200")  # kept alive, holding two slots
            third = _connect(port, "127.0.0.2")
            assert _request(third).startswith(b"HTTP/1.1 503 ")
            third.close()
            assert _served_once_free(port, "127.0.0.3", tries=1)[0].startswith(b"HTTP/1.1 200")
        finally:
            for sock in held:
                sock.close()


def test_slowloris_from_one_address_leaves_the_others_served(site):
    with running(site, max_connections=4, max_per_address=2) as port:
        slow = [_connect(port, "127.0.0.2") for _ in range(4)]
        try:
            for sock in slow:
                sock.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n")  # headers that never end
            refused = 0
            for sock in slow[2:]:
                try:
                    refused += sock.recv(1024).startswith(b"HTTP/1.1 503 ")
                except ConnectionResetError:
                    refused += 1
            assert refused == 2
            assert _served_once_free(port, "127.0.0.3", tries=1)[0].startswith(b"HTTP/1.1 200")
        finally:
            for sock in slow:
                sock.close()


@pytest.mark.parametrize("soft, hard, wanted, expected", [
    (1024, 1024, 700, (1024, 480)),  # cannot be raised: the cap is sized from the limit
    (1024, 4096, 700, (1464, 700)),  # raised to what 700 connections need
    (1024, 1200, 700, (1200, 568)),  # raised as far as allowed, the cap sized from that
    (100_000, 100_000, 700, (100_000, 700)),
    (80, 80, 700, (80, 8)),
])
def test_the_connection_cap_fits_the_open_file_limit(soft, hard, wanted, expected):
    from lab.server.serve import connection_budget

    assert connection_budget(soft, hard, wanted) == expected


LIMITED_SERVER = """
import asyncio, resource, socket, sys
import tornado.netutil
from pathlib import Path
resource.setrlimit(resource.RLIMIT_NOFILE, (int(sys.argv[2]), int(sys.argv[2])))
from lab.server.serve import Limits, make_server
async def main():
    sockets = tornado.netutil.bind_sockets(0, "127.0.0.1", family=socket.AF_INET)
    server = make_server(Path(sys.argv[1]), Limits(write_timeout_s=60))
    server.add_sockets(sockets)
    print(sockets[0].getsockname()[1], server.max_connections, flush=True)
    await asyncio.Event().wait()
asyncio.run(main())
"""


def test_slow_readers_under_a_low_open_file_limit_get_503s_not_tracebacks(big_site):
    """A file response holds two descriptors: 150 stuck readers would need 300 under a limit of 128."""
    proc = subprocess.Popen([sys.executable, "-c", LIMITED_SERVER, str(big_site), "128"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, cwd=ROOT)
    held = []
    try:
        port, cap = map(int, proc.stdout.readline().split())
        assert 0 < cap <= 32  # (128 - the server's own descriptors) / 2
        for n in range(150):
            try:
                sock = _connect(port, f"127.0.0.{2 + n % 100}", rcvbuf=4096)
                sock.sendall(b"GET /big.bin HTTP/1.1\r\nHost: x\r\n\r\n")
                held.append(sock)
            except OSError:
                pass
        answers = _served_once_free(port, "127.0.1.1", tries=1)
        assert answers[0].startswith((b"HTTP/1.1 200", b"HTTP/1.1 503")), answers  # an answer, not a hang or reset
    finally:
        for sock in held:
            sock.close()
        proc.kill()
        _, err = proc.communicate(timeout=10)
    assert "Too many open files" not in err and "Traceback" not in err, err[-2000:]


def test_a_files_digest_is_worked_out_once_not_on_every_request(site, monkeypatch):
    from lab.server.serve import SiteHandler

    hashed = []
    original = SiteHandler.get_content_version.__func__

    def counting(cls, abspath):
        hashed.append(os.path.basename(abspath))
        return original(cls, abspath)

    monkeypatch.setattr(SiteHandler, "get_content_version", classmethod(counting))
    with running(site) as port:
        tags = {get(port, "/app.js", {"Accept-Encoding": "identity"})[0].getheader("ETag") for _ in range(5)}
        get(port, "/app.js", {"Accept-Encoding": "identity"}, method="HEAD")
        assert len(tags) == 1 and hashed == ["app.js"]
        (site / "app.js").write_text("console.log('rebuilt');\n")  # a new build's file: a new digest
        assert get(port, "/app.js", {"Accept-Encoding": "identity"})[0].getheader("ETag") not in tags
        assert hashed == ["app.js", "app.js"]


def test_a_symlink_to_a_dot_folder_inside_the_site_is_not_served(site):
    (site / ".private").mkdir()
    (site / ".private" / "notes.txt").write_text("secret")
    (site / "open").symlink_to(".private")
    (site / "leak.txt").symlink_to(".private/notes.txt")
    with running(site) as port:
        for path in ("/open/notes.txt", "/leak.txt"):
            response, body = get(port, path)
            assert response.status in (403, 404) and b"secret" not in body, path


def test_a_body_over_the_limit_is_a_413_and_a_chunked_one_a_411(site):
    with running(site) as port, socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        body = b"x" * (2 << 20)
        sock.sendall(b"POST /room/api/report HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                     b"Content-Length: %d\r\n\r\n" % len(body) + body)
        assert raw_reply(sock).startswith(b"HTTP/1.1 413 ")
    with running(site) as port, socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(b"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n")
        assert raw_reply(sock).startswith(b"HTTP/1.1 411 ")


def raw_reply(sock):
    received = b""
    while b"\r\n\r\n" not in received:
        chunk = sock.recv(65536)
        if not chunk:
            break
        received += chunk
    return received


def test_a_client_opening_connection_after_connection_is_never_refused(site):
    """Each closed connection frees its place: one address may open (and close) many more than its cap."""
    with running(site, max_connections=6, max_per_address=2) as port:
        statuses = {get(port, "/app.js")[0].status for _ in range(30)}
    assert statuses == {200}


STARVED_SERVER = """
import asyncio, os, socket, sys
import tornado.netutil
from pathlib import Path
from lab.server.serve import make_server
async def main():
    sockets = tornado.netutil.bind_sockets(0, "127.0.0.1", family=socket.AF_INET)
    server = make_server(Path(sys.argv[1]))
    server.add_sockets(sockets)
    held = []
    try:
        while True:  # every descriptor taken, as by something else in the process
            held.append(os.open(os.devnull, os.O_RDONLY))
    except OSError:
        pass
    def free():
        sys.stdin.readline()
        for fd in held:
            os.close(fd)
        print("freed", flush=True)
    asyncio.get_running_loop().add_reader(sys.stdin, free)
    print(sockets[0].getsockname()[1], flush=True)
    await asyncio.Event().wait()
asyncio.run(main())
"""


def test_when_descriptors_run_out_accepting_waits_instead_of_failing_in_a_loop(site):
    proc = subprocess.Popen([sys.executable, "-c", STARVED_SERVER, str(site)], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            cwd=ROOT,
                            preexec_fn=lambda: __import__("resource").setrlimit(
                                __import__("resource").RLIMIT_NOFILE, (256, 256)))
    try:
        port = int(proc.stdout.readline())
        waiting = _connect(port)  # accepted by the kernel; the server has no descriptor to take it with
        waiting.sendall(b"GET /app.js HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        rejected = [_connect(port) for _ in range(3)]  # more knocking meanwhile
        proc.stdin.write("free\n")
        proc.stdin.flush()
        assert proc.stdout.readline() == "freed\n"
        assert raw_reply(waiting).startswith(b"HTTP/1.1 200 ")  # taken once descriptors came back
        for sock in (waiting, *rejected):
            sock.close()
    finally:
        proc.kill()
        _, err = proc.communicate(timeout=10)
    assert "Traceback" not in err and err.count("out of open files") == 1, err[-2000:]
