"""The snapshot the build ships and the worker's checks of it before it is restored, run under Node.js.

The worker (static/worker.js, as the build wrote it) uses the snapshot only if its bytes are the ones the build
made: the size it was told, page maps that account for the file, a snapshot of the size the build sized the heap
for, the sha256 in its name, and pages the runtime already holds that are the ones in this runtime's memory. Each
way of failing is fed here to the worker's own functions (worker_snapshot.mjs runs their text under Node), one
process for all of them, and must be refused with its own reason; the bytes as shipped pass, and pages packed by
the build's writer (lab/site/snapshot.py's pack) are laid into a heap exactly as they were. That a refused
snapshot leads to a normal boot with the same numbers is checked once in a browser (tests/browser/test_boot_page.py).
"""

import hashlib
import json
import random
import re
import shutil
import struct
import subprocess
from pathlib import Path

from helpers import ROOT

from lab.site import snapshot as snapshots

HERE = Path(__file__).resolve().parent


def test_the_build_ships_a_snapshot_stamped_with_its_wheel(server):
    built = json.loads((server["site"] / "build.json").read_text())
    assert built["snapshot"]["kind"] == "snapshot", built["snapshot"]
    assert built["snapshot"]["zeroed"] > 1_000_000, "the heap's free chunks were not zeroed (scripts/snapshot.mjs)"
    assert built["stdlib"]["kind"] == "pyc" and 100 < built["stdlib"]["modules"] < 300
    worker = (server["site"] / built["assets"]["worker.js"]).read_text()
    assert f'const SNAPSHOT = "./{built["assets"]["snapshot"]}";' in worker
    shipped = (server["site"] / built["assets"]["snapshot"]).read_bytes()
    assert f"const SNAPSHOT_BYTES = {len(shipped)};" in worker and built["snapshot"]["file"] == len(shipped)
    # in page-map form, without the pages of zeros (about half the heap) nor those the runtime holds already
    length, _, _ = struct.unpack_from("<III", shipped, len(snapshots.MAGIC))
    assert f"const SNAPSHOT_IMAGE_BYTES = {length};" in worker and built["snapshot"]["bytes"] == length
    assert length <= 30 * 2**20 + 4096 and len(shipped) < 0.5 * length
    first_page = shipped[len(snapshots.MAGIC) + 12 + 2 * -(-length // 4096 // 8):]
    assert first_page[:4] == struct.pack("<I", 1886286592)  # Pyodide's own header: its magic number


# -- ways to spoil a snapshot in page-map form (each keeps the file's size unless it says otherwise) ----------

def _cut(data):
    del data[len(data) // 3:]


def _other_bytes(data):
    """Bytes of the stored pages changed near the end, where a restore itself may well succeed: only the sha256
    tells."""
    for offset in range(len(data) - 2**20, len(data), 4096):
        data[offset] ^= 0x5A


def _map_off_by_a_page(data):
    """A page of zeros marked as stored: the maps no longer account for the file's bytes."""
    length, size, _ = struct.unpack_from("<III", data, len(snapshots.MAGIC))
    start = len(snapshots.MAGIC) + 12
    maps = -(-length // size // 8)
    stored, held = data[start:start + maps], data[start + maps:start + 2 * maps]
    zero = next(i for i in range(maps * 8) if not (stored[i // 8] | held[i // 8]) >> (i % 8) & 1)
    data[start + zero // 8] |= 1 << (zero % 8)


def _other_runtime(data):
    """A checksum of the pages the runtime holds that the runtime's memory will not give."""
    at = len(snapshots.MAGIC) + 8
    struct.pack_into("<I", data, at, struct.unpack_from("<I", data, at)[0] ^ 1)


def _bigger_heap(data):
    """A file that says it holds a snapshot bigger than the one the build sized the worker's heap for."""
    struct.pack_into("<I", data, len(snapshots.MAGIC), snapshots.HEAP_BYTES + 65_536)


def _not_a_page_map(data):
    data[:len(snapshots.MAGIC)] = b"\x00" * len(snapshots.MAGIC)


def _run(cases, tmp_path):
    """What the worker's checks say of each case: [{ok, error, header?, heap?}]."""
    node = shutil.which("node")
    assert node, "Node.js is needed for this test (the project's setup installs it with the npm packages)"
    listed = tmp_path / "cases.json"
    listed.write_text(json.dumps(cases))
    done = subprocess.run([node, str(HERE / "worker_snapshot.mjs"), cases[0].pop("worker"), str(listed)],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    return [json.loads(line) for line in done.stdout.splitlines()]


def _named(tmp_path, label, data):
    """`data` written under a name that holds the start of its own sha256, as the build names the snapshot."""
    path = tmp_path / f"{label}.{hashlib.sha256(data).hexdigest()[:16]}.bin"
    path.write_bytes(bytes(data))
    return path


def test_the_workers_checks_pass_the_shipped_snapshot_and_refuse_each_damaged_one_with_its_reason(server, tmp_path):
    built = json.loads((server["site"] / "build.json").read_text())
    worker = server["site"] / built["assets"]["worker.js"]
    text = worker.read_text()
    name = re.search(r'const SNAPSHOT = "(\./[^"]+)";', text).group(1)
    sizes = {"bytes": int(re.search(r"const SNAPSHOT_BYTES = (\d+);", text).group(1)),
             "imageBytes": int(re.search(r"const SNAPSHOT_IMAGE_BYTES = (\d+);", text).group(1))}
    shipped = (server["site"] / built["assets"]["snapshot"]).read_bytes()
    # (spoiling, the reason the worker must give; None: the bytes pass). Served under the shipped name unless the
    # case renames it for its own sha256, so that the check it is meant for is the one that finds it.
    spoilings = {
        "as shipped": (None, None, False),
        "cut short": (_cut, f"the snapshot is damaged ({len(shipped) // 3} bytes, not {len(shipped)})", False),
        "the right size, other bytes": (_other_bytes, "its sha256 is not its name's", False),
        "a page map that does not match the file": (_map_off_by_a_page, "its page maps account for", False),
        "a heap bigger than the build said": (_bigger_heap,
                                              f"it holds a snapshot of {snapshots.HEAP_BYTES + 65_536} bytes", False),
        "not in page-map form": (_not_a_page_map, "not in page-map form", False),
        "other bytes under their own name": (_other_bytes, None, True),  # only the name's sha256 told
    }
    cases = []
    for spoil, _, renamed in spoilings.values():
        data = bytearray(shipped)
        if spoil:
            spoil(data)
        if renamed:
            path = _named(tmp_path, "renamed", data)
            cases.append({"file": str(path), "name": "./" + path.name, **sizes})
        else:
            path = tmp_path / f"case-{len(cases)}.bin"
            path.write_bytes(bytes(data))
            cases.append({"file": str(path), "name": name, **sizes})
    cases[0]["worker"] = str(worker)
    said = dict(zip(spoilings, _run(cases, tmp_path), strict=True))
    for label, (_, reason, _) in spoilings.items():
        if reason is None:
            assert said[label] == {"ok": True, "error": None}, (label, said[label])
        else:
            assert not said[label]["ok"] and reason in said[label]["error"], (label, said[label])


def _synthetic(rng):
    """A small snapshot as Pyodide's restore reads it (its magic number, then the header's length; the heap after
    the header) and the runtime's memory before a restore, which holds some of its pages already."""
    head, pages = 512, 12
    length = pages * snapshots.PAGE - 1000  # the last page short
    heap = bytearray(rng.randbytes(length - head))  # the runtime's memory, heap offsets from 0
    image = bytearray(struct.pack("<II", 1886286592, head) + rng.randbytes(head - 8)) + bytearray(length - head)
    for i in range(1, pages):
        page = slice(i * snapshots.PAGE, min((i + 1) * snapshots.PAGE, length))
        kind = i % 4
        if kind == 0:
            image[page] = bytes(page.stop - page.start)  # zeros
        elif kind == 1 and page.stop - page.start == snapshots.PAGE:
            image[page] = heap[page.start - head:page.stop - head]  # as the runtime holds it
        else:
            image[page] = rng.randbytes(page.stop - page.start)
    image[head:snapshots.PAGE] = rng.randbytes(snapshots.PAGE - head)  # the first page holds the header and heap
    return bytes(image), bytes(heap), head


def test_the_worker_lays_in_what_the_build_packed_and_refuses_a_runtime_it_was_not_made_against(tmp_path):
    rng = random.Random(28)
    image, heap, head = _synthetic(rng)
    packed = snapshots.pack(image, (heap,))
    length, _, _ = struct.unpack_from("<III", packed, len(snapshots.MAGIC))
    held = -(-length // snapshots.PAGE // 8)
    assert any(packed[len(snapshots.MAGIC) + 12 + held:len(snapshots.MAGIC) + 12 + 2 * held]), "no page held"
    assert snapshots.unpack(packed, heap) == image  # the build's own reader agrees

    memory = tmp_path / "heap.bin"
    memory.write_bytes(heap)
    other = bytearray(heap)
    first_held = next(i for i in range(1, 12) if i % 4 == 1)
    other[first_held * snapshots.PAGE - head + 100] ^= 1  # one word of a page the runtime holds, not as it was
    other_memory = tmp_path / "other-heap.bin"
    other_memory.write_bytes(bytes(other))
    sizes = {"bytes": len(packed), "imageBytes": length}
    resummed = bytearray(packed)
    _other_runtime(resummed)
    good, other_sum = _named(tmp_path, "synthetic", packed), _named(tmp_path, "resummed", resummed)
    cases = [
        {"file": str(good), "name": "./" + good.name, "heap": str(memory), **sizes},
        {"file": str(good), "name": "./" + good.name, "heap": str(other_memory), **sizes},
        {"file": str(other_sum), "name": "./" + other_sum.name, "heap": str(memory), **sizes},
    ]
    cases[0]["worker"] = str(ROOT / "static" / "worker.js")  # the constants are the cases' own
    laid, *refused = _run(cases, tmp_path)
    assert laid == {"ok": True, "error": None, "header": head, "heap": hashlib.sha256(image[head:]).hexdigest()}
    for said in refused:  # a word of a page the runtime holds changed; the file's checksum of them changed
        assert not said["ok"] and "runtime's memory is not the one the snapshot was made against" in said["error"], said
