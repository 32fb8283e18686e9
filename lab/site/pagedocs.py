"""The page's Bokeh models as several documents, so that the page draws only what it shows.

Panel's template writes one Bokeh document holding every root of the page:
the controls, the events box and each chart. BokehJS draws a document's
roots all at once, which on the lab page is one task of about 1.4 s before
anything can be touched, most of it for charts below the fold. Here, at build
time, that document is cut into one document per root (roots that share a
model other than a stylesheet stay together: a source two charts draw, for
one), and the page's embed call is pointed at `window.prefixLabEmbed`
(static/bridge.js), which makes every document's models at once and draws
each document when its place on the page comes near the screen. Without
bridge.js the page falls back to Bokeh's own `embed_items`, which draws them
all.

Bokeh's document JSON defines each model where it first appears and refers
to it by `{"id": ...}` after that, so a root cut loose from the others gets
the definitions it only referred to copied into it. A stylesheet is a value
(a URL), so each document may hold its own copy of it.
"""

import json
import re
from typing import Any

__all__ = ["PageDocsError", "split_documents"]

EMBED_CALL = "root.Bokeh.embed.embed_items(docs_json, render_items);"
LAZY_CALL = "(root.prefixLabEmbed || root.Bokeh.embed.embed_items)(docs_json, render_items);"
SHAREABLE = {"ImportedStyleSheet", "InlineStyleSheet", "GlobalImportedStyleSheet", "GlobalInlineStyleSheet"}


class PageDocsError(ValueError):
    """The page does not hold the one document and embed call this module expects."""


def split_documents(html: str, filename: str) -> str:
    """`html` with its one Bokeh document cut into one per group of roots, drawn as they come into view."""
    items = re.search(r"const render_items = (\[.*?\]);\n", html)
    if items is None or html.count(EMBED_CALL) != 1:
        raise PageDocsError(f"{filename}: no Bokeh embed call found where Panel's template puts it")
    (item,) = json.loads(items.group(1))
    data = re.search(r'(<script type="application/json" id="[^"]+">)(.*?)(</script>)', html, flags=re.S)
    if data is None:
        raise PageDocsError(f"{filename}: no Bokeh document data found")
    docs = json.loads(data.group(2))
    doc = docs[item["docid"]]
    roots = doc["roots"]
    definitions: dict[str, dict] = {}
    for root in roots:
        _collect(root, definitions)
    groups = _groups(roots, definitions)
    new_docs, new_items = {}, []
    for n, group in enumerate(groups):
        docid = f"{item['docid']}-{n}"
        seen: set[str] = set()
        new_docs[docid] = {**doc, "roots": [_inline(roots[i], definitions, seen) for i in group]}
        ids = [roots[i]["id"] for i in group]
        new_items.append({"docid": docid, "roots": {rid: item["roots"][rid] for rid in ids}, "root_ids": ids})
    text = json.dumps(new_docs, separators=(",", ":"))
    html = html[:data.start(2)] + text + html[data.end(2):]
    html = html.replace(items.group(0), f"const render_items = {json.dumps(new_items, separators=(',', ':'))};\n")
    return html.replace(EMBED_CALL, LAZY_CALL)


def _collect(value: Any, definitions: dict[str, dict]) -> None:
    """Every model defined in `value`, by id."""
    if isinstance(value, dict):
        if value.get("type") == "object" and "id" in value:
            definitions.setdefault(value["id"], value)
        for item in value.values():
            _collect(item, definitions)
    elif isinstance(value, list):
        for item in value:
            _collect(item, definitions)


def _uses(value: Any, definitions: dict[str, dict], found: dict[str, str]) -> None:
    """Every model `value` defines or refers to, following references: id -> model type."""
    if isinstance(value, dict):
        ref = value.get("id") if (value.get("type") == "object" or value.keys() == {"id"}) else None
        if isinstance(ref, str):
            if ref in found:
                return
            model = definitions.get(ref)
            found[ref] = (model or {}).get("name", "")
            if model is not None and model is not value:
                _uses(model, definitions, found)
        for item in value.values():
            _uses(item, definitions, found)
    elif isinstance(value, list):
        for item in value:
            _uses(item, definitions, found)


def _groups(roots: list[dict], definitions: dict[str, dict]) -> list[list[int]]:
    """Indices of the roots, grouped so that no model but a stylesheet is in two groups; in page order."""
    parent = list(range(len(roots)))

    def top(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    owner: dict[str, int] = {}
    for i, root in enumerate(roots):
        found: dict[str, str] = {}
        _uses(root, definitions, found)
        for ref, kind in found.items():
            if kind in SHAREABLE:
                continue
            if ref in owner:
                parent[top(i)] = top(owner[ref])
            else:
                owner[ref] = i
    groups: dict[int, list[int]] = {}
    for i in range(len(roots)):
        groups.setdefault(top(i), []).append(i)
    return sorted(groups.values())


def _inline(value: Any, definitions: dict[str, dict], seen: set[str]) -> Any:
    """A copy of `value` in which each model is defined where this document first meets it."""
    if isinstance(value, dict):
        ref = value.get("id")
        if value.keys() == {"id"} and isinstance(ref, str) and ref in definitions:
            return value if ref in seen else _inline(definitions[ref], definitions, seen)
        if value.get("type") == "object" and isinstance(ref, str):
            if ref in seen:
                return {"id": ref}
            seen.add(ref)
        return {key: _inline(item, definitions, seen) for key, item in value.items()}
    if isinstance(value, list):
        return [_inline(item, definitions, seen) for item in value]
    return value
