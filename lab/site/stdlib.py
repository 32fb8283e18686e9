"""The standard library the site ships: only the modules the page imports, precompiled to `.pyc`.

Pyodide's own `python_stdlib.zip` holds 600-odd `.py` sources (2.5 MB); the
page imports about 150 modules of it, and compiling them at every boot is
about half of the worker's start. `write_stdlib` runs `scripts/pyc_stdlib.mjs`
under Node.js: it boots the pinned Pyodide, unpacks the wheel, drives the view
code through the default setup, every mission, serving mode and an error,
imports every module the project's loaded modules name, and writes a zip of
the standard-library modules then loaded, compiled by Pyodide's own Python
(hash-based pyc, valid without sources). The result is cached by the digest
of its inputs (the wheel, Pyodide's zip and the script), so a rebuild with
unchanged sources costs nothing. Build time only (CPython).
"""

import hashlib
import json
import os
import shutil
import subprocess
from pathlib import Path

__all__ = ["SCRIPT", "StdlibError", "write_stdlib"]

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "pyc_stdlib.mjs"
TIMEOUT_S = 300  # a cold Pyodide boot under Node takes about 5 s; a loaded machine, much longer


class StdlibError(RuntimeError):
    """The trimmed standard library cannot be made; the message says why."""


def cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "prefix-lab"


def write_stdlib(target: Path, pyodide: Path, wheel: Path) -> dict:
    """Write the trimmed, precompiled zip to `target`; return {"modules": n, "python": version}."""
    digest = hashlib.sha256()
    for path in (wheel, pyodide / "python_stdlib.zip", pyodide / "pyodide.asm.wasm", SCRIPT):
        digest.update(hashlib.sha256(path.read_bytes()).digest())
    key = digest.hexdigest()[:24]
    cached, facts = cache_dir() / f"stdlib-{key}.zip", cache_dir() / f"stdlib-{key}.json"
    if cached.is_file() and facts.is_file():
        try:
            summary = json.loads(facts.read_text(encoding="utf-8"))
            shutil.copyfile(cached, target)
            return summary
        except (OSError, ValueError):
            pass  # a damaged cache entry: make it again
    node = shutil.which("node")
    if node is None:
        raise StdlibError("Node.js is needed to precompile the standard library: install it (apt-get install nodejs)")
    try:
        done = subprocess.run([node, str(SCRIPT), str(pyodide), str(wheel), str(target)],
                              capture_output=True, text=True, timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired:
        raise StdlibError(f"precompiling the standard library took over {TIMEOUT_S} s") from None
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no message"])[-1][:300]
        raise StdlibError(f"precompiling the standard library failed: {last}")
    summary = json.loads(done.stdout.strip().splitlines()[-1])
    try:
        cached.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(target, cached)
        facts.write_text(json.dumps(summary), encoding="utf-8")
    except OSError:
        pass  # no cache: the next build makes it again
    return summary
