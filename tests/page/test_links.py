"""Links that last: today's URLs keep giving today's numbers, old names are read with a notice, equal states
give equal URLs, and mission ids stay put.

tests/data/links.json was computed once, before URL schema versions existed, from the page's own view code
(commit 93b4341); each entry is a URL as published (page and hash), the hash the page writes back for it,
its headline data-values and the chosen mission's stars (null: free play). Never regenerate it to make a
test pass: a link that stops giving its numbers is a broken link.
"""

import json

import pytest
from helpers import DATA
from hypothesis import given
from hypothesis import strategies as st

from lab.common.tracemission import mission_sources
from lab.page.urlstate import SCHEMA, Rename, read_hash, write_hash
from lab.page.view import handle
from missions import MISSIONS, find_mission
from model import Scenario

FILES = mission_sources()
LINKS = json.loads((DATA / "links.json").read_text(encoding="utf-8"))
HEADLINE = ("hit_rate", "ttft_p50_ms", "ttft_p99_ms", "throughput_rps", "replica_count")


def shown(view):
    """What a link must keep giving: the hash written back, the headline data-values, the mission's stars."""
    dom = view["patches"]["dom"]
    html = dom["#missions"]["html"]
    stars = int(html.split('data-stars="')[-1][0]) if 'class="verdict' in html else None
    return {"hash": view["hash"], "headline": {k: dom[f'[data-metric="{k}"]']["attrs"]["data-value"] for k in HEADLINE},
            "stars": stars}


@pytest.mark.parametrize("link", LINKS["links"], ids=lambda link: link["url"][:70])
def test_a_link_of_today_still_gives_its_numbers(link):
    view = handle({"hash": link["url"].partition("#")[2]}, FILES)  # a mission's trace, as the page fetches it
    assert shown(view) == {k: link[k] for k in ("hash", "headline", "stars")}


def test_the_committed_links_cover_every_mission_and_the_embed():
    urls = [link["url"] for link in LINKS["links"]]
    assert {m.id for m in MISSIONS} <= {u.split("mission=")[1].split("&")[0] for u in urls if "mission=" in u}
    assert sum(u.startswith("embed.html") for u in urls) >= 3 and sum("events=" in u for u in urls) >= 5


def test_mission_ids_are_never_dropped():
    assert [i for i in LINKS["missions"] if find_mission(i) is None] == []


def test_today_is_schema_1_and_its_hashes_carry_no_version():
    # A hash without `v` is schema 1, which is every link already published; `v` is written only past 1,
    # like any key equal to its default, so today's links and today's written hashes are the same text.
    assert SCHEMA == 1
    s = Scenario().with_text({"fleet.replicas": "8"})
    assert write_hash(s, {"mission": "burst"}) == "fleet.replicas=8&mission=burst"
    assert read_hash("v=1&fleet.replicas=8").scenario == s and read_hash("v=1&fleet.replicas=8").notices == ()
    assert read_hash("fleet.replicas=8").version == 1


GPUS = (Rename(2, "fleet.gpus", "fleet.replicas"),
        Rename(2, "router.kind", "router.kind", values=(("affinity", "cache_aware"),)))


def test_an_old_link_is_read_with_its_keys_and_values_renamed_and_a_notice():
    state = read_hash("fleet.gpus=8&router.kind=affinity&mission=burst", schema=2, renames=GPUS)
    assert state.scenario == Scenario().with_text({"fleet.replicas": "8", "router.kind": "cache_aware"})
    assert state.page == {"mission": "burst"} and state.version == 1
    assert state.notices == ("This link is from an older version of the lab: read fleet.gpus=8 as fleet.replicas=8.",
                             "This link is from an older version of the lab: read router.kind=affinity as "
                             "router.kind=cache_aware.")
    written = write_hash(state.scenario, state.page, schema=2)
    assert written == "v=2&fleet.replicas=8&router.kind=cache_aware&mission=burst"
    again = read_hash(written, schema=2, renames=GPUS)  # a link of the new schema is not renamed again
    assert again.scenario == state.scenario and again.notices == () and again.version == 2
    assert write_hash(Scenario(), schema=2) == ""  # the default state stays an empty hash
    current = read_hash("v=2&fleet.gpus=8", schema=2, renames=GPUS)  # v2 has no fleet.gpus
    assert current.scenario == Scenario() and current.notices == ("Ignored unknown setting 'fleet.gpus'.",)


def test_a_link_from_a_newer_version_or_with_a_bad_version_is_read_with_a_notice():
    newer = read_hash("v=7&fleet.replicas=3&fleet.warp=9")
    assert newer.scenario.fleet.replicas == 3 and newer.version == 7
    assert "newer version of the lab (v7; this is v1)" in newer.notices[0]
    bad = read_hash("v=two&fleet.replicas=3")
    assert bad.scenario.fleet.replicas == 3 and bad.version == 1 and "Ignored v=two" in bad.notices[0]


PAIRS = [("fleet.replicas", "8"), ("router.kind", "cache_aware"), ("dynamic_text", "bottom"), ("seed", "42"),
         ("fleet.memory_gb", "0.5"), ("events", "burst@60+30x3,timestamp@150"), ("router.spill_threshold_s", "off"),
         ("traffic.session_rate", "3"), ("mission", "burst"), ("unlock", "all"), ("fleet.cache", "false")]


@given(st.permutations(PAIRS), st.integers(0, len(PAIRS)))
def test_equal_states_give_equal_urls_whatever_order_a_link_has(pairs, n):
    chosen = pairs[:n]
    state = read_hash("&".join(f"{k}={v}" for k, v in chosen))
    ordered = read_hash("&".join(f"{k}={v}" for k, v in sorted(chosen)))
    assert state.scenario == ordered.scenario and state.page == ordered.page
    text = write_hash(state.scenario, state.page)
    assert text == write_hash(ordered.scenario, ordered.page)
    back = read_hash(text)
    assert (back.scenario, back.page, back.notices) == (state.scenario, state.page, ())
