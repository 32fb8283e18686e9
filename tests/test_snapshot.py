"""The build's snapshot step (lab/snapshot.py) refuses what would not restore, and says why in one line; the
page-map form it ships the snapshot in gives back the same bytes; lab.wheelzip lets a restored interpreter
import what it had not imported from the wheel read as a zip."""

import importlib
import shutil
import struct
import sys
import zipfile

import pytest

from lab import snapshot, wheelzip
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


def test_a_snapshot_within_the_heap_is_written_in_page_map_form_with_its_gzip_twin_and_cached(folder, tmp_path,
                                                                                             monkeypatch):
    pyodide, wheel = folder
    fake_script(tmp_path, monkeypatch, 10_000)  # three pages of zeros, the last one short
    target = tmp_path / "snapshot.bin"
    packed = snapshot.MAGIC + struct.pack("<II", 10_000, 4096) + b"\x00"  # no page stored
    assert snapshot.write_snapshot(pyodide, wheel, target) == {"bytes": 10_000, "rest_modules": 0, "file": len(packed)}
    assert target.read_bytes() == packed and (tmp_path / "snapshot.bin.gz").is_file()
    target.unlink()
    monkeypatch.setattr(snapshot.shutil, "which", lambda name: None)  # no Node now: only the cache can answer
    assert snapshot.write_snapshot(pyodide, wheel, target)["bytes"] == 10_000 and target.read_bytes() == packed


def test_the_page_map_form_stores_only_pages_that_are_not_all_zeros_and_unpacks_to_the_same_bytes():
    page = snapshot.PAGE
    image = b"head" + bytes(page - 4) + bytes(page) + bytes(page) + b"\x01" * page + bytes(100) + b"tail"
    packed = snapshot.pack(image)
    # pages 0 and 3 stored (bits 0 and 3), pages 1 and 2 not, the short page 4 stored as it is
    assert packed[:17] == snapshot.MAGIC + struct.pack("<II", len(image), page) + bytes([0b11001])
    assert packed[17:] == image[:page] + image[3 * page:]
    assert snapshot.unpack(packed) == image
    assert snapshot.unpack(snapshot.pack(bytes(5 * page))) == bytes(5 * page)


@pytest.mark.parametrize("damage, message", [
    (lambda data: b"PYODIDE!" + data[8:], "not a snapshot in page-map form"),
    (lambda data: data[:16] + bytes([data[16] ^ 0b10]) + data[17:], "the page map accounts for"),  # one more page
    (lambda data: data[:-1], "the page map accounts for"),
])
def test_a_damaged_page_map_form_is_refused(damage, message):
    data = snapshot.pack(b"x" * snapshot.PAGE + bytes(snapshot.PAGE) + b"y" * 10)
    with pytest.raises(ValueError, match=message):
        snapshot.unpack(damage(data))


def test_a_package_imported_from_a_folder_since_gone_imports_the_rest_from_the_wheel_as_a_zip(tmp_path, monkeypatch):
    """What a restored interpreter goes through: its packages were imported from files that are gone."""
    folder = tmp_path / "unpacked"
    (folder / "zzpkg" / "sub").mkdir(parents=True)
    files = {"zzpkg/__init__.py": "", "zzpkg/sub/__init__.py": "", "zzpkg/later.py": "WHERE = 'later'\n",
             "zzpkg/sub/deep.py": "WHERE = 'deep'\n", "zzother/__init__.py": "WHERE = 'other'\n"}
    wheel = tmp_path / "x.whl"
    with zipfile.ZipFile(wheel, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, text in files.items():
            zf.writestr(name, text)
    (folder / "zzpkg" / "__init__.py").write_text("")
    (folder / "zzpkg" / "sub" / "__init__.py").write_text("")
    monkeypatch.syspath_prepend(str(folder))
    monkeypatch.setattr(sys, "path", list(sys.path))  # mount appends the wheel: undone after the test
    for name in ("zzpkg", "zzpkg.sub"):
        importlib.import_module(name)
    shutil.rmtree(folder)
    importlib.invalidate_caches()
    try:
        with pytest.raises(ImportError):
            importlib.import_module("zzpkg.later")
        assert wheelzip.mount(str(wheel), str(folder)) == 2
        assert importlib.import_module("zzpkg.later").WHERE == "later"
        assert importlib.import_module("zzpkg.sub.deep").WHERE == "deep"
        assert importlib.import_module("zzother").WHERE == "other"  # not imported before: found on sys.path
    finally:
        for name in [n for n in sys.modules if n.split(".")[0] in ("zzpkg", "zzother")]:
            del sys.modules[name]


def test_a_failing_script_is_one_line_naming_the_step(folder, tmp_path, monkeypatch):
    pyodide, wheel = folder
    script = tmp_path / "fail.mjs"
    script.write_text('process.stderr.write("Traceback...\\nImportError: no module named lab\\n"); process.exit(1);')
    monkeypatch.setattr(snapshot, "SCRIPT", script)
    with pytest.raises(snapshot.SnapshotError, match=r"^making the snapshot failed: ImportError: no module named lab$"):
        snapshot.write_snapshot(pyodide, wheel, tmp_path / "snapshot.bin")
