"""The view remembers what a URL hash reads as, by its text: the same state as reading it afresh."""

import lab.page.view as view
from lab.page.urlstate import read_hash

HASHES = ["", "fleet.replicas=6", "fleet.replicas=6&seed=3", "fleet.replicas=7", "mission=cache-on&fleet.cache=false",
          "fleet.replicas=99", "nonsense&router.kind=cache_aware", "base=fleet.replicas%3D2"]


def test_a_remembered_hash_reads_as_the_hash_read_afresh_and_another_text_misses_it():
    view._hash_states.cache_clear()
    for _ in range(2):  # the second time from memory
        read = [view._read_hash(text) for text in HASHES]
        assert read == [read_hash(text) for text in HASHES]
    assert len({(r.scenario, tuple(r.page.items()), r.notices) for r in read}) == len(HASHES)


def test_changing_the_page_keys_handed_out_leaves_the_remembered_ones_alone():
    view._hash_states.cache_clear()
    first = view._read_hash("mission=cache-on&fleet.replicas=3")
    first.page["mission"] = "elsewhere"
    first.page["explain"] = "4"
    assert view._read_hash("mission=cache-on&fleet.replicas=3").page == {"mission": "cache-on"}
