"""Pyodide's memory snapshot of the page's interpreter, made at build time for the worker to restore.

Booting Pyodide and importing the view code takes seconds; restoring a
snapshot of the interpreter right after those imports takes well under one.
`write_snapshot` runs `scripts/snapshot.mjs` under Node.js against the site's
own Pyodide folder and wheel (so the snapshot matches the wasm and the wheel
the browser loads), and writes the snapshot and `python_stdlib_rest.zip`, the
standard-library modules the snapshot has not imported. The interpreter is
stamped with the wheel's file name; the worker compares it with the wheel the
page names and boots normally on any mismatch or failure (static/worker.js).

Before saving, the script zeroes the heap's free chunks (what the imports
freed but left in place), which takes the gzipped snapshot from 6.3 MB to
5.7 MB; build.json records how many bytes (`zeroed`).

About half of the 30 MiB heap is then pages of zeros, and another 3 MB are
pages the runtime holds before any snapshot is restored (its static data,
from the wasm), yet the browser would inflate and copy them like any other.
The site ships the snapshot in a page-map form (`pack`): a short header,
two bits per 4 KiB page of Pyodide's snapshot (stored here; or held by the
runtime already; or else all zeros), and the stored pages, in order. The
pages the runtime holds are found by restoring in Node (scripts/snapshot.mjs
captures the runtime's memory at the moment a restore writes it, twice, so
that a page written with something random is never among them); the header
carries a checksum of them (`runtime_sum`), which the worker compares with
its own runtime's memory before trusting it: a mismatch means a normal boot.
The worker lays the stored pages into the heap, zeroes the zero pages and
leaves the rest. build.json records both sizes (`bytes`, Pyodide's
snapshot; `file`, what is served). `unpack` is the exact inverse, the
reference the worker's reader follows.

Pyodide's snapshot API is experimental (pinned Pyodide 314.0.7): its heap is
fixed at 30 MiB, and a snapshot bigger than that does not restore, so a
bigger one is not shipped. Build time only (CPython); cached by the digest
of its inputs, like lab/site/stdlib.py.
"""

import gzip
import hashlib
import json
import shutil
import struct
import subprocess
from pathlib import Path

from lab.site.stdlib import cache_dir

__all__ = ["HEAP_BYTES", "MAGIC", "PAGE", "REST_ZIP", "SCRIPT", "SnapshotError", "pack", "runtime_sum", "unpack",
           "write_snapshot"]

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "snapshot.mjs"
REST_ZIP = "python_stdlib_rest.zip"  # in the Pyodide folder, beside python_stdlib.zip
HEAP_BYTES = 30 * 2**20  # Pyodide's fixed heap; the snapshot adds a header of a few hundred bytes
TIMEOUT_S = 300
# The page-map form: MAGIC; the snapshot's length, the page size and runtime_sum of the pages the runtime
# holds (three little-endian uint32); a map of the stored pages, then a map of the pages the runtime holds
# (one bit per page each: page i is bit i % 8 of byte i // 8; a page in neither is all zeros); then the
# stored pages in order (the last page of the snapshot may be short). static/worker.js reads the same layout.
MAGIC = b"PLSNAPv2"
PAGE = 4096
FIELDS = struct.Struct("<III")


class SnapshotError(RuntimeError):
    """No snapshot can be made; the message says why (the site then boots Pyodide normally)."""


def runtime_sum(pages: list[bytes]) -> int:
    """FNV-1a over 32-bit little-endian words, page after page: the worker computes the same over its runtime's memory."""
    h = 2166136261
    for page in pages:
        for (word,) in struct.iter_unpack("<I", page):
            h = ((h ^ word) * 16777619) & 0xFFFFFFFF
    return h


def _header_bytes(snapshot: bytes | bytearray) -> int:
    """Where the heap starts in Pyodide's snapshot: its header's length, the second uint32."""
    return struct.unpack_from("<I", snapshot, 4)[0] if len(snapshot) >= 8 else 0


def pack(snapshot: bytes, runtime: tuple[bytes, ...] = ()) -> bytes:
    """The page-map form of `snapshot`: its pages that are neither all zeros nor the same in every memory of
    `runtime` (the runtime's memory before a restore, one or more captures, heap offsets from 0)."""
    pages = -(-len(snapshot) // PAGE)
    stored_map, held_map = bytearray(-(-pages // 8)), bytearray(-(-pages // 8))
    stored, held = [], []
    zeros = bytes(PAGE)
    head = _header_bytes(snapshot)
    for i in range(pages):
        page = snapshot[i * PAGE:(i + 1) * PAGE]
        if page == zeros[:len(page)]:
            continue
        at = i * PAGE - head  # the page's place in the heap
        if i and len(page) == PAGE and runtime and all(memory[at:at + PAGE] == page for memory in runtime):
            held_map[i // 8] |= 1 << (i % 8)
            held.append(page)
        else:
            stored_map[i // 8] |= 1 << (i % 8)
            stored.append(page)
    fields = FIELDS.pack(len(snapshot), PAGE, runtime_sum(held))
    return b"".join([MAGIC, fields, bytes(stored_map), bytes(held_map), *stored])


def unpack(data: bytes, runtime: bytes = b"") -> bytes:
    """Pyodide's snapshot from its page-map form, the pages the runtime holds taken from `runtime` (its memory
    before a restore); ValueError if `data` is not in that form or `runtime` is not the memory it was made for."""
    head = len(MAGIC) + FIELDS.size
    if len(data) < head or not data.startswith(MAGIC):
        raise ValueError("not a snapshot in page-map form")
    length, page, checksum = FIELDS.unpack_from(data, len(MAGIC))
    if page < 64 or page % 16:
        raise ValueError(f"a page of {page} bytes")
    pages = -(-length // page)
    size = -(-pages // 8)
    stored_map, held_map = data[head:head + size], data[head + size:head + 2 * size]
    out = bytearray(length)
    at = head + 2 * size
    held = []
    for i in range(pages):
        end = min((i + 1) * page, length)
        if stored_map[i // 8] >> (i % 8) & 1:
            out[i * page:end] = data[at:at + end - i * page].ljust(end - i * page, b"\0")
            at += end - i * page
        elif held_map[i // 8] >> (i % 8) & 1:
            held.append(i)
    if at != len(data):
        raise ValueError(f"the page map accounts for {at:,} bytes of {len(data):,}")
    base = _header_bytes(out)
    pages_held = [runtime[i * page - base:(i + 1) * page - base] for i in held]
    if runtime_sum(pages_held) != checksum or any(len(p) != page for p in pages_held):
        raise ValueError("the runtime's memory is not the one the snapshot was made against")
    for i, content in zip(held, pages_held):
        out[i * page:(i + 1) * page] = content
    return bytes(out)


def write_snapshot(pyodide: Path, wheel: Path, target: Path) -> dict:
    """Write the snapshot in page-map form to `target` (and its gzip twin) and REST_ZIP into `pyodide`; return
    {"bytes": n, "file": n, "rest_modules": n, "zeroed": n} (`bytes`: Pyodide's snapshot; `file`: `target`)."""
    digest = hashlib.sha256(wheel.name.encode())
    for path in (wheel, SCRIPT, Path(__file__), *sorted(p for p in pyodide.iterdir() if p.is_file() and p.name != REST_ZIP)):
        digest.update(hashlib.sha256(path.read_bytes()).digest())
    key = digest.hexdigest()[:24]
    cached = {name: cache_dir() / f"snapshot-{key}.{name}" for name in ("bin", "bin.gz", "zip", "json")}
    twin = target.with_name(target.name + ".gz")  # made here, once: 31 MB at gzip level 9 takes seconds
    if all(path.is_file() for path in cached.values()):
        try:
            summary = json.loads(cached["json"].read_text(encoding="utf-8"))
            shutil.copyfile(cached["bin"], target)
            shutil.copyfile(cached["bin.gz"], twin)
            shutil.copyfile(cached["zip"], pyodide / REST_ZIP)
            return summary
        except (OSError, ValueError):
            pass
    node = shutil.which("node")
    if node is None:
        raise SnapshotError("Node.js is needed to make the snapshot")
    try:
        done = subprocess.run([node, str(SCRIPT), str(pyodide), str(wheel), wheel.name, str(target),
                               str(pyodide / REST_ZIP)], capture_output=True, text=True, timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired:
        raise SnapshotError(f"making the snapshot took over {TIMEOUT_S} s") from None
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no message"])[-1][:300]
        raise SnapshotError(f"making the snapshot failed: {last}")
    summary = json.loads(done.stdout.strip().splitlines()[-1])
    if summary["bytes"] > HEAP_BYTES + 4096:
        target.unlink(missing_ok=True)
        (pyodide / REST_ZIP).unlink(missing_ok=True)
        raise SnapshotError(f"the snapshot is {summary['bytes']:,} bytes, over Pyodide's fixed heap of "
                            f"{HEAP_BYTES:,}, and would not restore")
    captures = target.with_name(target.name + ".runtime")  # the runtime's memory, captured twice
    memory = captures.read_bytes()
    captures.unlink()
    packed = pack(target.read_bytes(), (memory[:len(memory) // 2], memory[len(memory) // 2:]))
    target.write_bytes(packed)
    summary["file"] = len(packed)
    twin.write_bytes(gzip.compress(packed, compresslevel=9, mtime=0))
    try:
        cached["bin"].parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(target, cached["bin"])
        shutil.copyfile(twin, cached["bin.gz"])
        shutil.copyfile(pyodide / REST_ZIP, cached["zip"])
        cached["json"].write_text(json.dumps(summary), encoding="utf-8")
    except OSError:
        pass
    return summary
