"""The documentation site: `docs/` and `mkdocs.yml` built with MkDocs into the lab's site, under `docs/`.

`prefix-lab build` calls `write_docs(site / "docs")`, so the docs ship with
the lab and `prefix-lab serve` serves them at /docs/ like any other file: a
workshop with no internet has them. MkDocs and the Material theme are the
`docs` extra (pyproject.toml), which scripts/setup.sh installs; a build
without them leaves the docs out and says so, as it does for the traces.

MkDocs runs as its own process with `--strict`, so a broken link or anchor
stops the build, and with `--quiet`, so a good build prints nothing. Material
prints a notice about its own end of life on every `mkdocs` command; it says
nothing about this build, so `NO_MKDOCS_2_WARNING` (Material's own switch)
turns it off. The sitemap is removed: it lists URLs only a `site_url` could
give, and a copy on a laptop has none.

The pages' inline scripts (Material writes a few small ones per page) are run
under the site's Content-Security-Policy by their sha256, which the build
records in build.json for each page as it does for index.html
(`inline_script_pages`); no `'unsafe-inline'` is needed.
"""

import os
import subprocess
import sys
from pathlib import Path

__all__ = ["DocsError", "inline_script_pages", "sources", "versions", "write_docs"]

ROOT = Path(__file__).resolve().parents[2]  # the project folder (a clone)
CONFIG = ROOT / "mkdocs.yml"
DOCS = ROOT / "docs"
LEFT_OUT = ("sitemap.xml", "sitemap.xml.gz")


class DocsError(Exception):
    """MkDocs failed: the message holds the end of what it printed."""


def sources() -> list[Path]:
    """Every file the docs are built from, for the build's stamp (a changed page makes the site stale)."""
    if not CONFIG.is_file() or not DOCS.is_dir():
        return []
    return [CONFIG, *sorted(p for p in DOCS.rglob("*") if p.is_file())]


def versions() -> str:
    """MkDocs' and Material's versions, for the build's stamp ('' when they are not installed)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return f"mkdocs {version('mkdocs')} mkdocs-material {version('mkdocs-material')}"
    except PackageNotFoundError:
        return ""


def write_docs(out: Path) -> list[str]:
    """Build the docs into `out` (a folder that must not exist yet); return notes on what was left out.

    Raises DocsError when MkDocs fails (a broken link, a page missing from the nav, a bad config).
    """
    if not sources():
        return [f"left out the docs: {CONFIG.name} or {DOCS.name}/ is not there (build from a clone of the project)"]
    if not versions():
        return ["left out the docs: MkDocs is not installed (pip install -e '.[docs]', which scripts/setup.sh does)"]
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}  # Material's notice about its own future (see above)
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--quiet", "--config-file", str(CONFIG),
         "--site-dir", str(out)],
        cwd=ROOT, env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        said = (done.stderr + done.stdout).strip().splitlines()
        raise DocsError("mkdocs build --strict failed:\n" + "\n".join(said[-20:]))
    for name in LEFT_OUT:
        (out / name).unlink(missing_ok=True)
    return []


def inline_script_pages(site: Path) -> list[str]:
    """The docs' pages in a built site, as paths relative to it (each needs its inline scripts' hashes)."""
    folder = site / "docs"
    if not folder.is_dir():
        return []
    return sorted(p.relative_to(site).as_posix() for p in folder.rglob("*.html"))
