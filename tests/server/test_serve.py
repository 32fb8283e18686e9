"""`prefix-lab build` and `prefix-lab serve`: what the site holds and how it is served."""

import gzip
import hashlib
import http.client
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import threading
from pathlib import Path
from urllib.parse import urlparse

import pytest
from helpers import asset

from lab.cli.main import main
from lab.site import build


def get(server, path, headers=None):
    url = urlparse(server["url"])
    conn = http.client.HTTPConnection(url.hostname, url.port, timeout=30)
    conn.request("GET", path, headers=headers or {})
    response = conn.getresponse()
    body = response.read()
    conn.close()
    return response, body


@pytest.mark.parametrize("path, kind", [
    ("/", "text/html; charset=utf-8"),
    ("/embed.html", "text/html; charset=utf-8"),
    ("/pyodide/pyodide.asm.wasm", "application/wasm"),
    ("/pyodide/pyodide.mjs", "text/javascript; charset=utf-8"),
    ("/worker.js", "text/javascript; charset=utf-8"),
    ("/lab.css", "text/css; charset=utf-8"),
    ("/pyodide/python_stdlib.zip", "application/zip"),
])
def test_files_go_out_with_their_types(server, path, kind):
    response, _ = get(server, path if path.endswith(("/", ".html")) else "/" + asset(server["site"], path[1:]))
    assert response.status == 200 and response.getheader("Content-Type") == kind


def test_gzip_twins_are_served_to_browsers_that_accept_them(server):
    wasm = asset(server["site"], "pyodide/pyodide.asm.wasm")
    plain, raw = get(server, "/" + wasm, {"Accept-Encoding": "identity"})
    packed, body = get(server, "/" + wasm, {"Accept-Encoding": "gzip, deflate"})
    assert plain.getheader("Content-Encoding") is None
    assert packed.getheader("Content-Encoding") == "gzip" and packed.getheader("Vary") == "Accept-Encoding"
    assert int(packed.getheader("Content-Length")) == len(body) < len(raw) * 0.5
    assert gzip.decompress(body) == raw == (server["site"] / wasm).read_bytes()
    assert packed.getheader("ETag") != plain.getheader("ETag")


def test_etags_answer_304_and_pages_revalidate(server):
    for path in ("/", "/embed.html", "/build.json", "/favicon.svg"):
        first, _ = get(server, path)
        assert first.getheader("Cache-Control") == "no-cache", path
        again, body = get(server, path, {"If-None-Match": first.getheader("ETag")})
        assert again.status == 304 and body == b"", path


IMMUTABLE = "public, max-age=31536000, immutable"


def test_every_asset_a_page_loads_has_a_content_hashed_name_served_immutable(server):
    site = server["site"]
    built = json.loads((site / "build.json").read_text())
    for plain, hashed in built["assets"].items():  # hashed: the first 16 hex digits of the sha256
        assert hashed != plain and re.search(r"[.-][0-9a-f]{16}[./]", hashed), (plain, hashed)
    for name in built["files"]:
        if name.endswith(".gz"):
            continue
        response, body = get(server, "/" + name, {"Accept-Encoding": "gzip"})
        kept = name.startswith((built["assets"]["pyodide/"], built["assets"]["static/"])) or \
            name in built["assets"].values()
        assert response.getheader("Cache-Control") == (IMMUTABLE if kept else "no-cache"), name
        if kept and "/" not in name:  # a file hashed by itself: its name holds the start of its sha256
            digest = re.search(r"\.([0-9a-f]{16})\.", name).group(1)
            assert hashlib.sha256((site / name).read_bytes()).hexdigest().startswith(digest), name
    for page in ("index.html", "embed.html"):  # everything a page loads from the site is a hashed name
        text = (site / page).read_text()
        loads = re.findall(r"""<(?:script|link)\b[^>]*?(?:src|href)\s*=\s*["']([^"']+)["']""", text)
        assert len(loads) >= 5 and [u for u in loads if not _hashed(u)] == ["favicon.svg"], loads


def _hashed(url):
    from lab.site.assets import is_hashed

    return is_hashed(url.removeprefix("./").split("?")[0])


@pytest.mark.parametrize("path", ["/static/", "/pyodide/", "/wheels/", "/static/js/"])
def test_no_directory_listings(server, path):
    response, body = get(server, "/" + asset(server["site"], path[1:]) if path != "/wheels/" else path)
    assert response.status in (403, 404) and b"pyodide.asm" not in body and b"bokeh.min" not in body


@pytest.mark.parametrize("path", ["/../pyproject.toml", "/%2e%2e/pyproject.toml", "/..%2fpyproject.toml",
                                  "/static/../../README.md", "//etc/passwd", "/build.json.gz"])
def test_nothing_outside_the_site(server, path):
    response, body = get(server, path)
    assert response.status in (400, 403, 404), (path, response.status)
    assert b"[project]" not in body and b"root:" not in body


def test_pages_load_nothing_from_other_origins(server):
    for name in ("index.html", "embed.html"):
        text = (server["site"] / name).read_text()
        without_links = re.sub(r"<a\s[^>]*>", "<a>", text)
        assert not re.findall(r"""(?:src|href)\s*=\s*["'](?:https?:)?//""", without_links), name
        assert "cdn." not in without_links, name
        assert f'defer type="text/javascript" src="./{asset(server["site"], "static/js/bokeh.min.js")}"' in text


def test_the_wheel_is_pure_python_and_reproducible(server, tmp_path):
    import zipfile

    built = json.loads((server["site"] / "build.json").read_text())
    wheel = server["site"] / built["wheel"]
    names = zipfile.ZipFile(wheel).namelist()
    assert "model/engines/lab.py" in names and "lab/page/view.py" in names and "missions/__init__.py" in names
    assert all(n.endswith(".py") or ".dist-info/" in n for n in names)
    again = tmp_path / build._write_wheel(tmp_path / "wheels")
    assert again.read_bytes() == wheel.read_bytes()


def test_serve_knows_when_the_site_is_stale(server, monkeypatch):
    assert build.site_is_current(server["site"])
    monkeypatch.setattr(build, "source_stamp", lambda: "something else")
    assert not build.site_is_current(server["site"])


def test_a_site_with_a_cut_or_missing_file_is_not_current(server, tmp_path):
    copy = tmp_path / "site"
    shutil.copytree(server["site"], copy)
    assert build.site_is_current(copy)
    wasm = copy / asset(copy, "pyodide/pyodide.asm.wasm")
    whole = wasm.read_bytes()
    wasm.write_bytes(whole[: len(whole) // 2])
    assert not build.site_is_current(copy)  # cut
    wasm.write_bytes(whole[:-1] + bytes([whole[-1] ^ 1]))
    assert not build.site_is_current(copy)  # same size, one bit changed
    wasm.write_bytes(whole)
    assert build.site_is_current(copy)
    wasm.with_name(wasm.name + ".gz").unlink()
    assert not build.site_is_current(copy)  # the twin browsers are sent


def _fake_fill(folder, pyodide):
    (folder / "index.html").write_text(f"<p>{folder.name}</p>")
    (folder / "build.json").write_text("{}")


def test_each_build_swaps_in_whole_keeping_the_previous_one(tmp_path, monkeypatch):
    monkeypatch.setattr(build, "_fill", _fake_fill)
    site = tmp_path / "site"
    site.mkdir()
    (site / "build.json").write_text("{}")  # a site built by an older version: a plain folder
    (site / "index.html").write_text("<p>old</p>")
    (tmp_path / "site.backup").mkdir()  # not ours: never removed
    made = []
    for _ in range(3):
        build.build_site(site)
        assert site.is_symlink() and not os.path.isabs(os.readlink(site))
        made.append(os.readlink(site))
        assert (site / "index.html").read_text() == f"<p>{made[-1]}</p>"
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["site", "site.backup", *made[-2:]])


def test_rebuilds_while_serving_never_answer_404(server, tmp_path, monkeypatch):
    """Requests in a loop while the served folder is rebuilt five times: every one gets a whole file.

    The builds copy the session's built site (hard links) instead of rendering
    it again: what is tested is the swap, and a real build costs seconds.
    """
    def fill(folder, pyodide):
        shutil.copytree(server["site"], folder, dirs_exist_ok=True, copy_function=os.link)

    monkeypatch.setattr(build, "_fill", fill)
    site = tmp_path / "site"
    build.build_site(site)
    from test_server_hostile import running

    paths = ["/", "/embed.html", "/build.json"] + ["/" + asset(site, name) for name in
                                                   ("bridge.js", "lab.css", "static/js/bokeh-widgets.min.js")]
    statuses, errors, stop, under_way = [], [], threading.Event(), threading.Event()

    def fetch(port):
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        while not stop.is_set():
            if len(statuses) == 10:
                under_way.set()
            path = paths[len(statuses) % len(paths)]
            try:
                conn.request("GET", path, headers={"Accept-Encoding": "gzip"})
                response = conn.getresponse()
                body = response.read()  # IncompleteRead if the response were cut
                statuses.append(response.status)
                assert len(body) == int(response.getheader("Content-Length"))
            except Exception as exc:  # noqa: BLE001 - any failure counts
                errors.append(f"{path}: {exc!r}")
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)

    with running(site) as port:
        reader = threading.Thread(target=fetch, args=(port,))
        reader.start()
        try:
            assert under_way.wait(30), errors  # the reader is under way before the first swap
            for _ in range(5):
                build.build_site(site)
        finally:
            stop.set()
            reader.join(30)
    print(f"{len(statuses)} requests during 5 rebuilds, {statuses.count(404)} 404s, {len(errors)} errors")
    assert set(statuses) == {200} and not errors, (errors[:3], set(statuses))
    assert build.site_is_current(site)


def test_serve_binds_before_building(tmp_path, capsys):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        assert main(["serve", "--dir", str(tmp_path / "s"), "--port", str(port)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"cannot listen on 127.0.0.1:{port}" in err
    assert not (tmp_path / "s").exists()  # nothing was built for a server that cannot start


def test_serve_with_its_output_on_a_full_disk_is_one_line(server):
    with open("/dev/full", "w") as full:
        done = subprocess.run([sys.executable, "-m", "lab", "serve", "--dir", str(server["site"]), "--port", "0"],
                              stdout=full, stderr=subprocess.PIPE, text=True, timeout=60)
    assert done.returncode == 2 and done.stderr == "prefix-lab: error: No space left on device\n"


@pytest.mark.parametrize("verb", [["build", "--out"], ["serve", "--port", "0", "--dir"]])
def test_an_unwritable_site_folder_is_one_line(verb, tmp_path, capsys):
    (tmp_path / "a-file").write_text("")
    for folder in ("/proc/nope/site", str(tmp_path / "a-file" / "site")):
        assert main([*verb, folder]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and f"cannot write the site at {folder}" in err, err


def test_build_refuses_to_overwrite_a_folder_that_is_not_a_site(tmp_path, capsys):
    (tmp_path / "notes.txt").write_text("mine")
    assert main(["build", "--out", str(tmp_path)]) == 2
    assert "is not a prefix-lab site" in capsys.readouterr().err
    assert (tmp_path / "notes.txt").read_text() == "mine"


def test_build_into_a_file_is_refused(tmp_path, capsys):
    target = tmp_path / "site"
    target.write_text("not a folder")
    assert main(["build", "--out", str(target)]) == 2
    assert "is a file" in capsys.readouterr().err


def test_a_missing_pyodide_is_named_with_the_fix(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(build, "ROOT", tmp_path)
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("PREFIX_LAB_PYODIDE", raising=False)
    assert main(["build", "--out", str(tmp_path / "site")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "run 'npm ci'" in err


def test_the_lab_modules_import_one_another_without_a_cycle():
    """Imports inside functions count too: serve once imported the CLI's error type from within serve()."""
    import ast
    from graphlib import CycleError, TopologicalSorter

    root = Path(build.__file__).resolve().parents[2]
    graph = {}
    for path in sorted((root / "lab").rglob("*.py")):
        name = ".".join(path.relative_to(root).with_suffix("").parts)
        imported = {node.module for node in ast.walk(ast.parse(path.read_text()))
                    if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module}
        graph[name] = {m for m in imported if m.startswith("lab.") and m.count(".") >= 2}
    try:
        TopologicalSorter(graph).prepare()
    except CycleError as exc:
        pytest.fail(f"import cycle: {exc.args[1]}")
    assert not {m for m in graph["lab.server.serve"] | graph["lab.site.build"] if m.startswith("lab.cli.")}


def test_serve_rejects_a_bad_port_in_one_line(capsys, tmp_path):
    assert main(["serve", "--dir", str(tmp_path / "s"), "--port", "70000"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--port 70000" in err


# BokehJS reads each visual property from CSS (`--bk-line-color` ...) before its model value; static/bridge.js
# answers those reads with the empty string they give on this site (tests/browser/test_page_speed.py).
DEFINED = re.compile(r"--bk-[\w-]+\s*:|setProperty\(\s*[\"'`]--bk-")
SHIPPED = (".css", ".js", ".mjs", ".html")


def test_no_file_the_site_ships_defines_a_bokeh_visual_css_property(server):
    """If one did, the bridge's empty answer would hide it: this is what makes that answer exact."""
    files = [p for p in server["site"].rglob("*") if p.suffix in SHIPPED and p.is_file()]
    assert {"bokeh.min.js", "panel.min.js"} <= {p.name for p in files} and any(p.suffix == ".css" for p in files)
    defining = [p.name for p in files if DEFINED.search(p.read_text(encoding="utf-8", errors="replace"))]
    assert defining == [], f"{defining} define a --bk-* property: drop quickerStyleReads' empty answer in bridge.js"
