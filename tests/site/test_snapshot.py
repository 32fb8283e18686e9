"""The build's snapshot step (lab/site/snapshot.py) refuses what would not restore, and says why in one line; the
page-map form it ships the snapshot in gives back the same bytes; lab.page.wheelzip lets a restored interpreter
import what it had not imported from the wheel read as a zip."""

import importlib
import shutil
import struct
import sys
import zipfile

import pytest

from lab.page import wheelzip
from lab.site import snapshot
from lab.site.build import pyodide_dir

FAKE = """
import { writeFileSync } from "node:fs";
const [, , , , out, rest] = process.argv.slice(1);
writeFileSync(out, Buffer.alloc(%d));
writeFileSync(out + ".runtime", "");
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
    packed = snapshot.MAGIC + struct.pack("<III", 10_000, 4096, 2166136261) + b"\x00\x00"  # no page stored or held
    assert snapshot.write_snapshot(pyodide, wheel, target) == {"bytes": 10_000, "rest_modules": 0, "file": len(packed)}
    assert target.read_bytes() == packed and (tmp_path / "snapshot.bin.gz").is_file()
    assert not (tmp_path / "snapshot.bin.runtime").exists()
    target.unlink()
    monkeypatch.setattr(snapshot.shutil, "which", lambda name: None)  # no Node now: only the cache can answer
    assert snapshot.write_snapshot(pyodide, wheel, target)["bytes"] == 10_000 and target.read_bytes() == packed


PAGE = snapshot.PAGE
HEAD = 16  # a Pyodide header of 16 bytes: the heap starts there


def image_of(*pages: bytes) -> bytes:
    """A snapshot of these pages whose second uint32 (Pyodide's header length) is HEAD."""
    data = b"".join(pages)
    return data[:4] + struct.pack("<I", HEAD) + data[8:]


def test_the_page_map_form_stores_only_pages_neither_zeros_nor_held_by_the_runtime_and_unpacks_to_the_same_bytes():
    image = image_of(b"h" * PAGE, bytes(PAGE), b"s" * PAGE, b"r" * PAGE, b"t" * 100)
    runtime = bytearray(len(image))  # the runtime's memory before a restore: heap offsets, HEAD bytes behind
    runtime[3 * PAGE - HEAD:4 * PAGE - HEAD] = b"r" * PAGE  # holds page 3 already
    runtime[2 * PAGE - HEAD:3 * PAGE - HEAD] = b"x" * PAGE  # not page 2
    other = bytearray(runtime)
    other[3 * PAGE - HEAD] = ord("?")  # a second capture that differs: page 3 is not held
    packed = snapshot.pack(image, (bytes(runtime),))
    fields = struct.pack("<III", len(image), PAGE, snapshot.runtime_sum([b"r" * PAGE]))
    # pages 0, 2 and the short page 4 stored (bits 0, 2, 4); page 3 held (bit 3); page 1 is zeros
    assert packed[:22] == snapshot.MAGIC + fields + bytes([0b10101, 0b01000])
    assert packed[22:] == image[:PAGE] + image[2 * PAGE:3 * PAGE] + image[4 * PAGE:]
    assert snapshot.unpack(packed, bytes(runtime)) == image
    assert snapshot.pack(image, (bytes(runtime), bytes(other)))[21] == 0  # held in one capture only: stored
    assert snapshot.unpack(snapshot.pack(image)) == image  # no runtime given: nothing held
    with pytest.raises(ValueError, match="the runtime's memory is not the one the snapshot was made against"):
        snapshot.unpack(packed, bytes(other))


def test_the_runtime_sum_is_fnv_1a_over_little_endian_words():
    assert snapshot.runtime_sum([]) == 2166136261
    assert snapshot.runtime_sum([b"\x01\x00\x00\x00"]) == (2166136261 ^ 1) * 16777619 % 2**32
    assert snapshot.runtime_sum([b"ab" * 2, b"cd" * 2]) == snapshot.runtime_sum([b"abab" + b"cdcd"])


@pytest.mark.parametrize("damage, message", [
    (lambda data: b"PYODIDE!" + data[8:], "not a snapshot in page-map form"),
    (lambda data: data[:20] + bytes([data[20] ^ 0b10]) + data[21:], "the page map accounts for"),  # one more page
    (lambda data: data[:-1], "the page map accounts for"),
])
def test_a_damaged_page_map_form_is_refused(damage, message):
    data = snapshot.pack(image_of(b"x" * PAGE, bytes(PAGE), b"y" * 10))
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
        (tmp_path / "garbage.whl").write_bytes(b"PK\x03\x04 not a wheel" * 50)
        with pytest.raises(zipfile.BadZipFile, match="not a zip file"):
            wheelzip.mount(str(tmp_path / "garbage.whl"), str(folder))
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
