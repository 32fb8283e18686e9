"""What the build puts into the page templates besides Panel's roots: the site's own words and links.

`static/site.toml` is the one file an author or a host edits: the page's
title and tagline, the companion article, related reading, the "All labs"
and catalog links, the references and the footer line. `load_site()` reads
and checks it (every link http or https, every field the right type);
`page_variables(view)` gives the templates that, the glossary, and the first
view's chart captions and verdict chip, so the page's first paint has them.

Build time only (CPython): it reads a file.
"""

import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lab.page.glossary import GLOSSARY, explain
from lab.page.view import METRICS


class SiteFileError(ValueError):
    """static/site.toml cannot be used; the message names the file and the field."""

__all__ = ["SITE_FILE", "Link", "Site", "SiteFileError", "load_site", "page_variables"]

SITE_FILE = Path(__file__).resolve().parents[2] / "static" / "site.toml"


@dataclass(frozen=True, slots=True)
class Link:
    title: str
    url: str
    note: str = ""  # a few words after the link


@dataclass(frozen=True, slots=True)
class Site:
    title: str
    tagline: str
    footer: str  # one line at the foot of the page; empty: none
    article: Link | None  # the companion article
    related: tuple[Link, ...]
    all_labs_url: str
    catalog_url: str
    references: tuple[Link, ...]


def load_site(path: Path = SITE_FILE) -> Site:
    """The site file, checked; SiteFileError naming the file and the field if something is wrong."""
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise SiteFileError(f"{path}: {exc}") from exc
    where = str(path)
    article = _link(data.get("article") or {}, f"{where}: [article]", optional=True)
    return Site(
        title=_text(data, "title", where) or "prefix-lab",
        tagline=_text(data, "tagline", where),
        footer=_text(data, "footer", where),
        article=article,
        related=tuple(_links(data, "related", where)),
        all_labs_url=_url(_text(data, "all_labs_url", where), f"{where}: all_labs_url"),
        catalog_url=_url(_text(data, "catalog_url", where), f"{where}: catalog_url"),
        references=tuple(_links(data, "references", where)),
    )


def _text(data: dict, key: str, where: str) -> str:
    value = data.get(key, "")
    if not isinstance(value, str):
        raise SiteFileError(f"{where}: {key} should be text in quotes, not {value!r}")
    return value.strip()


def _url(url: str, where: str) -> str:
    if url and not url.startswith(("https://", "http://")):
        raise SiteFileError(f"{where}: {url!r} is not an http(s) address")
    return url


def _link(data: Any, where: str, optional: bool = False) -> Link | None:
    if not isinstance(data, dict):
        raise SiteFileError(f"{where} should be a table with title and url")
    title, url = _text(data, "title", where), _url(_text(data, "url", where), where)
    if not url and optional:
        return None
    if not title or not url:
        raise SiteFileError(f"{where}: a link needs both a title and a url")
    return Link(title, url, _text(data, "note", where))


def _links(data: dict, key: str, where: str) -> list[Link]:
    items = data.get(key, [])
    if not isinstance(items, list):
        raise SiteFileError(f"{where}: {key} should be a list of [[{key}]] tables")
    links = [_link(item, f"{where}: [[{key}]] #{n}") for n, item in enumerate(items, 1)]
    return [link for link in links if link is not None]


def page_variables(view: dict, path: Path = SITE_FILE) -> dict[str, Any]:
    """Template variables: `site`, `glossary` (term, text), `metric_help` by result key, and `dom`, the first view's
    DOM patches (chart captions, the verdict chip), so the first paint shows them."""
    return {
        "site": load_site(path),
        "glossary": [(e.term, e.text) for e in GLOSSARY],
        "metric_help": {key: explain(key) for key, _, _ in METRICS},
        "dom": view["patches"]["dom"],
    }
