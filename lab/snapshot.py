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

About half of the 30 MiB heap is then pages of zeros, which cost the browser
as much to inflate and copy as any other page. The site ships the snapshot
in a page-map form (`pack`): a short header, one bit per 4 KiB page of
Pyodide's snapshot, and only the pages that are not all zeros, in order.
The worker lays those pages into the restored heap itself and zeroes the
rest. build.json records both sizes (`bytes`, Pyodide's snapshot; `file`,
what is served). `unpack` is the exact inverse, the reference the worker's
reader follows.

Pyodide's snapshot API is experimental (pinned Pyodide 314.0.7): its heap is
fixed at 30 MiB, and a snapshot bigger than that does not restore, so a
bigger one is not shipped. Build time only (CPython); cached by the digest
of its inputs, like lab/stdlib.py.
"""

import gzip
import hashlib
import json
import shutil
import struct
import subprocess
from pathlib import Path

from .stdlib import cache_dir

__all__ = ["HEAP_BYTES", "MAGIC", "PAGE", "REST_ZIP", "SCRIPT", "SnapshotError", "pack", "unpack", "write_snapshot"]

SCRIPT = Path(__file__).resolve().parent.parent / "scripts" / "snapshot.mjs"
REST_ZIP = "python_stdlib_rest.zip"  # in the Pyodide folder, beside python_stdlib.zip
HEAP_BYTES = 30 * 2**20  # Pyodide's fixed heap; the snapshot adds a header of a few hundred bytes
TIMEOUT_S = 300
# The page-map form: MAGIC, then the snapshot's length and the page size (two little-endian uint32), then
# one bit per page (page i is bit i % 8 of byte i // 8; set: stored), then the stored pages in order (the
# last page of the snapshot may be short). static/worker.js reads the same layout.
MAGIC = b"PLSNAPv1"
PAGE = 4096


class SnapshotError(RuntimeError):
    """No snapshot can be made; the message says why (the site then boots Pyodide normally)."""


def pack(snapshot: bytes) -> bytes:
    """The page-map form of `snapshot`: its pages that are not all zeros and a map of which those are."""
    pages = -(-len(snapshot) // PAGE)
    bitmap = bytearray(-(-pages // 8))
    stored = []
    zeros = bytes(PAGE)
    for i in range(pages):
        page = snapshot[i * PAGE:(i + 1) * PAGE]
        if page != zeros[:len(page)]:
            bitmap[i // 8] |= 1 << (i % 8)
            stored.append(page)
    return b"".join([MAGIC, struct.pack("<II", len(snapshot), PAGE), bytes(bitmap), *stored])


def unpack(data: bytes) -> bytes:
    """Pyodide's snapshot from its page-map form; ValueError if `data` is not in that form."""
    head = len(MAGIC) + 8
    if len(data) < head or not data.startswith(MAGIC):
        raise ValueError("not a snapshot in page-map form")
    length, page = struct.unpack_from("<II", data, len(MAGIC))
    if page == 0:
        raise ValueError("a page size of 0")
    pages = -(-length // page)
    bitmap = data[head:head + -(-pages // 8)]
    out = bytearray(length)
    at = head + len(bitmap)
    for i in range(pages):
        if bitmap[i // 8] >> (i % 8) & 1:
            size = min(page, length - i * page)
            out[i * page:i * page + size] = data[at:at + size]
            at += size
    if at != len(data) or len(bitmap) * 8 < pages:
        raise ValueError(f"the page map accounts for {at:,} bytes of {len(data):,}")
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
    packed = pack(target.read_bytes())
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
