"""The page's own words: the site file an author edits, the glossary every help line reads, the charts' layout."""

import pytest

from lab.page.controls import CONTROLS
from lab.page.glossary import GLOSSARY, brief, explain
from lab.page.view import METRICS, render
from lab.site.drawings import figures
from lab.site.words import SiteFileError, load_site, page_variables
from model import ROUTERS, Scenario


def test_the_default_site_file_points_at_the_seeds_papers_and_documentation():
    site = load_site()
    urls = [r.url for r in site.references]
    assert "https://arxiv.org/abs/2312.07104" in urls and "https://arxiv.org/abs/2309.06180" in urls
    assert any("docs.vllm.ai" in u and "engine_args" in u for u in urls) and any("sglang" in u for u in urls)
    assert site.article is None and site.footer == "" and site.catalog_url == ""  # not known: left for the author


def test_a_site_file_with_a_bad_link_or_field_stops_the_build_naming_it(tmp_path):
    path = tmp_path / "site.toml"
    path.write_text('title = "A lab"\n[article]\ntitle = "The article"\nurl = "javascript:alert(1)"\n')
    with pytest.raises(SiteFileError, match=r"site\.toml: \[article\].*not an http"):
        load_site(path)
    path.write_text('title = 3\n')
    with pytest.raises(SiteFileError, match="title should be text"):
        load_site(path)
    path.write_text('[[related]]\ntitle = "Only a title"\n')
    with pytest.raises(SiteFileError, match=r"\[\[related\]\] #1: a link needs both"):
        load_site(path)
    path.write_text('footer = "Views are the author\'s own."\n[article]\ntitle = "A"\nurl = "https://example.org/a"\n')
    site = load_site(path)
    assert site.footer == "Views are the author's own." and site.article.url == "https://example.org/a"
    assert page_variables(render(Scenario()), path)["site"] == site


def test_every_control_number_and_router_is_explained_in_the_glossary():
    assert all(brief(c.key) for c in CONTROLS)
    assert all(explain(key) for key, _, _ in METRICS)
    assert all(brief(kind) and explain(kind) for kind in ROUTERS)
    names = [e.name for e in GLOSSARY]
    assert len(names) == len(set(names))  # each word explained once
    assert all(len(brief(c.key)) <= 100 for c in CONTROLS)  # short enough to sit under a slider


def test_the_ttft_legend_sits_above_the_plot_not_over_its_lines():
    ttft = figures(render(Scenario()), ("ttft",))["ttft"]
    assert [type(m).__name__ for m in ttft.above] == ["Legend"]
    assert "Legend" not in [type(m).__name__ for m in ttft.center]
