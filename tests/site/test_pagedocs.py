"""lab/site/pagedocs.py: the page's one Bokeh document cut into one per root, each whole on its own."""

import json
import re

import pytest
from bokeh.document import Document
from bokeh.embed import file_html
from bokeh.models import ColumnDataSource
from bokeh.plotting import figure
from bokeh.resources import CDN

from lab.site.pagedocs import LAZY_CALL, PageDocsError, split_documents


def page_of(*roots):
    doc = Document()
    for root in roots:
        doc.add_root(root)
    return file_html(doc, CDN), doc


def docs_and_items(html):
    docs = json.loads(re.search(r'<script type="application/json" id="[^"]+">(.*?)</script>', html, re.S).group(1))
    items = json.loads(re.search(r"const render_items = (\[.*?\]);\n", html).group(1))
    return docs, items


def test_roots_sharing_a_source_stay_together_and_every_document_loads_on_its_own():
    shared = ColumnDataSource({"x": [1, 2], "y": [3, 4]}, name="src:shared")
    a, b, c = figure(name="a"), figure(name="b"), figure(name="c")
    a.line("x", "y", source=shared)
    b.scatter("x", "y", source=shared)
    c.line([1, 2], [2, 1])
    html, original = page_of(a, c, b)
    split = split_documents(html, "test.html")
    docs, items = docs_and_items(split)

    assert [item["root_ids"] for item in items] == [[a.id, b.id], [c.id]]  # page order, the shared source's two
    loaded = [Document.from_json(docs[item["docid"]]) for item in items]  # each resolves every model it uses
    assert [[root.name for root in doc.roots] for doc in loaded] == [["a", "b"], ["c"]]
    (source,) = [m for m in loaded[0].models if m.name == "src:shared"]
    assert source.data == {"x": [1, 2], "y": [3, 4]}
    assert not any(m.name == "src:shared" for m in loaded[1].models)
    ids = {m.id for doc in loaded for m in doc.models}
    assert ids == {m.id for m in original.models}  # nothing lost, nothing made up
    assert split.count(LAZY_CALL) == 1 and "root.Bokeh.embed.embed_items(docs_json" not in split


def test_a_page_without_bokehs_embed_call_is_refused_by_name():
    html, _ = page_of(figure())
    with pytest.raises(PageDocsError, match="broken.html: no Bokeh embed call"):
        split_documents(html.replace("root.Bokeh.embed.embed_items(docs_json, render_items);", ""), "broken.html")
