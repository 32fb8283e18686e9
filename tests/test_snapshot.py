"""The build's snapshot step (lab/snapshot.py) refuses what would not restore, and says why in one line."""

import shutil

import pytest

from lab import snapshot
from lab.build import pyodide_dir

FAKE = """
import { writeFileSync } from "node:fs";
const [, , , , out, rest] = process.argv.slice(1);
writeFileSync(out, Buffer.alloc(%d));
writeFileSync(rest, "");
process.stdout.write(JSON.stringify({ bytes: %d, rest_modules: 0 }) + "\\n");
"""


@pytest.fixture
def folder(tmp_path, monkeypatch):
    """A Pyodide folder and a wheel to make a snapshot of, and a cache of its own."""
    if shutil.which("node") is None:
        pytest.skip("Node.js is needed")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    pyodide = tmp_path / "pyodide"
    pyodide.mkdir()
    shutil.copyfile(pyodide_dir() / "pyodide.mjs", pyodide / "pyodide.mjs")
    wheel = tmp_path / "x.whl"
    wheel.write_bytes(b"PK")
    return pyodide, wheel


def fake_script(tmp_path, monkeypatch, size):
    script = tmp_path / "fake.mjs"
    script.write_text(FAKE % (size, size))
    monkeypatch.setattr(snapshot, "SCRIPT", script)


def test_a_snapshot_over_pyodides_heap_is_not_shipped(folder, tmp_path, monkeypatch):
    pyodide, wheel = folder
    fake_script(tmp_path, monkeypatch, snapshot.HEAP_BYTES + 65_536)
    target = tmp_path / "snapshot.bin"
    with pytest.raises(snapshot.SnapshotError, match="over Pyodide's fixed heap of 31,457,280"):
        snapshot.write_snapshot(pyodide, wheel, target)
    assert not target.exists() and not (pyodide / snapshot.REST_ZIP).exists()


def test_a_snapshot_within_the_heap_is_written_with_its_gzip_twin_and_cached(folder, tmp_path, monkeypatch):
    pyodide, wheel = folder
    fake_script(tmp_path, monkeypatch, 1_000)
    target = tmp_path / "snapshot.bin"
    assert snapshot.write_snapshot(pyodide, wheel, target) == {"bytes": 1_000, "rest_modules": 0}
    assert target.stat().st_size == 1_000 and (tmp_path / "snapshot.bin.gz").is_file()
    target.unlink()
    monkeypatch.setattr(snapshot.shutil, "which", lambda name: None)  # no Node now: only the cache can answer
    assert snapshot.write_snapshot(pyodide, wheel, target)["bytes"] == 1_000 and target.stat().st_size == 1_000


def test_a_failing_script_is_one_line_naming_the_step(folder, tmp_path, monkeypatch):
    pyodide, wheel = folder
    script = tmp_path / "fail.mjs"
    script.write_text('process.stderr.write("Traceback...\\nImportError: no module named lab\\n"); process.exit(1);')
    monkeypatch.setattr(snapshot, "SCRIPT", script)
    with pytest.raises(snapshot.SnapshotError, match=r"^making the snapshot failed: ImportError: no module named lab$"):
        snapshot.write_snapshot(pyodide, wheel, tmp_path / "snapshot.bin")
