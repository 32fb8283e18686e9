"""The documentation site: it builds with `mkdocs build --strict` (every link and anchor checked, nothing printed),
the README stays a short door into it, and the built site carries it with its inline scripts hashed for the CSP."""

import json
import os
import re
import subprocess
import sys

from helpers import ROOT

from lab.site.build import inline_script_hashes


def test_the_docs_build_strictly_and_quietly(tmp_path):
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}  # Material's notice about its own future (lab/site/docsite.py)
    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--quiet",
                           "--config-file", str(ROOT / "mkdocs.yml"), "--site-dir", str(tmp_path / "out")],
                          cwd=ROOT, env=env, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr + done.stdout
    assert done.stderr.strip() == "" and done.stdout.strip() == ""
    pages = {p.relative_to(tmp_path / "out").as_posix() for p in (tmp_path / "out").rglob("*.html")}
    assert {"index.html", "missions.html", "embedding.html", "workshop.html", "cli.html", "model.html",
            "internals/layout.html"} <= pages


def test_every_docs_page_is_in_the_nav():
    nav = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    for page in (ROOT / "docs").rglob("*.md"):
        assert f" {page.relative_to(ROOT / 'docs').as_posix()}\n" in nav, page


def test_the_readme_is_short_and_its_links_into_the_docs_exist():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(readme.splitlines()) <= 150
    linked = re.findall(r"\]\((docs/[^)#\s]+)", readme)
    assert len(linked) >= 8  # a link per reader's page at least
    for target in linked:
        assert (ROOT / target).is_file(), target


def test_the_cli_page_shows_every_verb():
    from lab.cli.main import parser

    page = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    verbs = next(a for a in parser()._actions if a.choices and "run" in a.choices).choices
    for verb in verbs:
        assert f"prefix-lab {verb}" in page, verb


def test_the_built_site_ships_the_docs_with_their_inline_scripts_hashed(server):
    site = server["site"]
    built = json.loads((site / "build.json").read_text(encoding="utf-8"))
    pages = sorted(p.relative_to(site).as_posix() for p in (site / "docs").rglob("*.html"))
    assert "docs/index.html" in pages and "docs/internals/layout.html" in pages
    assert not (site / "docs" / "sitemap.xml").exists()
    for name in pages:
        hashes = inline_script_hashes((site / name).read_text(encoding="utf-8"))
        assert hashes and built["inline_scripts"][name] == hashes, name
        assert name in built["files"]


def test_the_layout_page_names_every_package_and_module_there_is():
    """docs/internals/layout.md keeps up with the tree: a package or module it does not list, or one it lists that
    is gone, fails here (its tables are one row a module, under a heading per package)."""
    page = (ROOT / "docs" / "internals" / "layout.md").read_text(encoding="utf-8")
    listed: dict[str, set[str]] = {}
    package = None
    for line in page.splitlines():
        if m := re.fullmatch(r"### `([\w/]+)/`", line):
            package = listed.setdefault(m.group(1), set())
        elif package is not None and (m := re.match(r"\| `(\w+)` \|", line)):
            package.add(m.group(1))
    there = {}
    for top in ("model", "missions", "lab"):
        for init in (ROOT / top).rglob("__init__.py"):
            folder = init.parent
            there[folder.relative_to(ROOT).as_posix()] = {p.stem for p in folder.glob("*.py") if p.stem != "__init__"}
    assert listed == there
