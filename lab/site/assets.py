"""Content-hashed names for the site's assets, so a server can let browsers keep them for good.

A file's name gains the first 16 hex digits of its sha256 (`bridge.js` ->
`bridge.0123456789abcdef.js`); a folder whose files find each other by
fixed names (Pyodide's core, Bokeh and Panel's bundles) gains the digest of
all its files instead (`pyodide` -> `pyodide-0123456789abcdef`). A file that
names another hashed asset is renamed after that name is written into it, so
a change anywhere changes the name of everything that leads to it. The pages
and build.json keep their names: they are what a browser asks for first and
revalidates.

`HASHED` recognises such a path; `lab/server/serve.py` serves every match with
`Cache-Control: max-age=31536000, immutable`.
"""

import hashlib
import os
import re
from pathlib import Path

__all__ = ["HASHED", "hash_file", "hash_folder", "is_hashed"]

DIGITS = 16
# A path segment holding a content hash: `name.<hash>.ext` for a file, `name-<hash>` for a folder.
HASHED = re.compile(r"(?:^|/)[^/]+(?:\.[0-9a-f]{16}\.[^/]+|-[0-9a-f]{16})(?:/|$)")


def is_hashed(path: str) -> bool:
    """Whether a site-relative path (`/`-separated) names a content-hashed file or lies in a hashed folder."""
    return HASHED.search(path) is not None


def hash_file(path: Path) -> Path:
    """Rename `path` to carry its content hash before its last suffix; return the new path."""
    digest = hashlib.sha256(path.read_bytes()).hexdigest()[:DIGITS]
    stem, dot, ext = path.name.rpartition(".")
    renamed = path.with_name(f"{stem}.{digest}.{ext}" if dot else f"{path.name}.{digest}")
    os.replace(path, renamed)
    return renamed


def hash_folder(path: Path) -> Path:
    """Rename the folder `path` to carry the digest of every file in it (names and bytes); return the new path."""
    digest = hashlib.sha256()
    for file in sorted(p for p in path.rglob("*") if p.is_file()):
        digest.update(file.relative_to(path).as_posix().encode() + b"\0")
        digest.update(hashlib.sha256(file.read_bytes()).digest())
    renamed = path.with_name(f"{path.name}-{digest.hexdigest()[:DIGITS]}")
    os.replace(path, renamed)
    return renamed
