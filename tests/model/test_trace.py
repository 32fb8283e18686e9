"""Traces: reading Mooncake lines as a stream, the replay's hit rate against an independent count, and export.

The independent count is a plain per-block LRU written here, one per replica:
a request's cached tokens are its longest prefix of blocks the LRU holds;
then its blocks are touched from the last to the first (so a block is always
at least as recent as the blocks after it, and goes after them) and the
oldest are dropped past the capacity.
"""

import json
import math
import random
from collections import OrderedDict

import pytest
from helpers import TRACES
from hypothesis import given, settings
from hypothesis import strategies as st

from model import Scenario, ScenarioError, TraceError, generate, read_trace, replay, scan_trace, simulate, trace_lines
from model.engines.lab import Run
from model.gpus.profile import profile_of
from model.sources.trace import MAX_LINE_BYTES

CONVERSATION, SYNTHETIC = TRACES / "conversation_trace.jsonl", TRACES / "synthetic_trace.jsonl"
FAST = {"fleet.prefill_tokens_per_s": "10000000"}  # no queues: every request sees every earlier one cached


def line(ts=0, inp=1024, out=10, ids=(1, 2)):
    return json.dumps({"timestamp": ts, "input_length": inp, "output_length": out, "hash_ids": list(ids)})


def text(*lines):
    return "".join(ln + "\n" for ln in lines)


def head(path, n):
    with open(path, "rb") as f:
        return [next(f) for _ in range(n)]


def setup(**text_values):
    return Scenario().with_text({k.replace("__", "."): str(v) for k, v in text_values.items()})


def run(lines, block_tokens=512, speedup=1.0, **keys):
    return replay(setup(**keys), lambda: lines, block_tokens, speedup)


# -- the independent count ------------------------------------------------------------

def lru_cached_tokens(rows, block_tokens, replicas=1, capacity_blocks=None):
    """Cached tokens of each request under round robin over per-block LRUs (None: no limit)."""
    caches = [OrderedDict() for _ in range(replicas)]
    out = []
    for n, row in enumerate(rows):
        cache, ids, prompt = caches[n % replicas], row["hash_ids"], row["input_length"]
        sizes = [block_tokens] * (len(ids) - 1) + [prompt - block_tokens * (len(ids) - 1)]
        matched = 0
        while matched < len(ids) and ids[matched] in cache:
            matched += 1
        out.append(sum(sizes[:matched]))
        for h in reversed(ids):
            cache[h] = True
            cache.move_to_end(h, last=False)  # the front is the most recent
        while capacity_blocks is not None and len(cache) > capacity_blocks:
            cache.popitem(last=True)
    return out


def hit_rate(rows, cached):
    return round(sum(cached) / sum(r["input_length"] for r in rows), 6)


@pytest.mark.parametrize("path", [CONVERSATION, SYNTHETIC], ids=["conversation", "synthetic"])
@pytest.mark.parametrize("replicas", [1, 3])
def test_with_no_memory_limit_the_replay_caches_exactly_what_a_per_block_count_does(path, replicas):
    lines = head(path, 1500)
    rows = [json.loads(x) for x in lines]
    result = run(lines, fleet__replicas=replicas, router__kind="round_robin", fleet__memory_gb="none")
    expected = lru_cached_tokens(rows, 512, replicas)
    assert [r.cached_tokens for r in result.records] == expected
    assert result.hit_rate == hit_rate(rows, expected) > 0.05


def one_block_growth(seed, count, capacity_blocks, block_tokens=4):
    """Hand-made traffic where every prompt is a cached prompt plus at most one new block.

    The radix tree then holds one block per node, and evicting a leaf frees one
    block, as a per-block LRU does: the two must agree exactly, evictions included.
    """
    rng, cache, chains, rows, fresh = random.Random(seed), OrderedDict(), {}, [], 0
    for n in range(count):
        pick = rng.random()
        if not cache or pick < 0.15:
            ids = []
        else:
            ids = list(chains[rng.choice(list(cache))])
        if pick > 0.1 or not ids:  # mostly one new block; sometimes a repeat of a cached prompt
            ids.append(fresh)
            chains[fresh] = tuple(ids)
            fresh += 1
        rows.append({"timestamp": 1000 * n, "input_length": block_tokens * len(ids), "output_length": 5,
                     "hash_ids": ids})
        for h in reversed(ids):
            cache[h] = True
            cache.move_to_end(h, last=False)
        while len(cache) > capacity_blocks:
            cache.popitem(last=True)
    return rows


@pytest.mark.parametrize("capacity", [3, 10, 40])
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_under_memory_pressure_the_replay_evicts_as_a_per_block_lru_does(capacity, seed):
    rows = one_block_growth(seed, 400, capacity)
    lines = [json.dumps(r) + "\n" for r in rows]
    memory_gb = capacity * 4 / 8192  # exact: a power of two divides it
    result = run(lines, block_tokens=4, fleet__replicas=1, fleet__memory_gb=repr(memory_gb), **FAST)
    expected = lru_cached_tokens(rows, 4, 1, capacity)
    assert [r.cached_tokens for r in result.records] == expected
    assert 0 < sum(expected) < sum(r["input_length"] for r in rows)


@pytest.mark.parametrize("path", [CONVERSATION, SYNTHETIC], ids=["conversation", "synthetic"])
def test_on_real_traces_under_pressure_the_replay_stays_within_a_point_of_a_per_block_lru(path):
    """Not exact: the tree evicts a whole leaf run at once (as SGLang does) and counts tokens, not blocks."""
    lines = head(path, 1500)
    rows = [json.loads(x) for x in lines]
    for blocks in (1000, 5000):
        result = run(lines, fleet__replicas=1, fleet__memory_gb=repr(blocks * 512 / 8192), **FAST)
        assert abs(result.hit_rate - hit_rate(rows, lru_cached_tokens(rows, 512, 1, blocks))) <= 0.01


# -- requests as read ---------------------------------------------------------------

def test_a_request_is_its_blocks_the_last_one_short_arriving_at_its_timestamp():
    lines = text(line(ts=5000, inp=1100, out=7, ids=(9, 8, 7)), line(ts=6500, inp=512, out=0, ids=(9,)))
    first, second = read_trace([lines.encode()], speedup=2.0)
    assert first.keys == (9, 8, 7) and first.sizes == (512, 512, 76)
    assert first.prompt_tokens == 1100 and first.answer_tokens == 7 and first.answer_key is None
    assert (first.arrival_s, second.arrival_s) == (0.0, 0.75)  # from the first timestamp, halved
    assert (first.session, first.turn, first.system_prompt, first.user_tokens) == (-1, -1, -1, -1)
    assert first.affinity == "block/8" and second.affinity == "block/9"  # the block covering token 1,024
    assert (first.id, second.id) == (0, 1)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, 400), max_size=6), st.booleans())
def test_chunks_cut_anywhere_read_the_same(cuts, as_text):
    data = ("\ufeff" + text(line(ids=(1, 2)), "", line(ts=3, inp=600, ids=(1, 3))) + line(ts=3, inp=5, ids=(4,)))
    data = data.replace("\n", "\r\n", 1)
    raw = data if as_text else data.encode()
    bounds = [0, *sorted(min(c, len(raw)) for c in cuts), len(raw)]
    chunks = [raw[a:b] for a, b in zip(bounds, bounds[1:])]
    assert list(read_trace(chunks)) == list(read_trace([data]))
    assert [r.keys for r in read_trace(chunks)] == [(1, 2), (1, 3), (4,)]


def test_the_run_takes_each_request_only_when_the_one_before_arrives_and_keeps_no_prompt():
    pulled = []

    def requests():
        for r in read_trace([text(*(line(ts=1000 * i, ids=(1, 2 + i)) for i in range(5)))]):
            pulled.append(r.id)
            yield r

    run_ = Run(setup(duration_s=5, fleet__replicas=1), requests())
    assert pulled == [0]
    run_.step()  # request 0 arrives: request 1 is read
    assert pulled == [0, 1]
    result = run_.finish()
    assert result.requests == 5 and all(s.request.keys == () for s in run_.served)
    assert [r.cached_tokens for r in result.records] == [0, 512, 512, 512, 512]  # block 1 only: answers are not kept


def test_a_replayed_request_caches_its_prompt_but_not_its_answer():
    lines = [line(inp=1024, out=300, ids=(1, 2)) + "\n"] * 2
    result = run(lines, fleet__replicas=1)
    assert [r.cached_tokens for r in result.records] == [0, 1024]
    assert [r.answer_tokens for r in result.records] == [300, 300]


def test_scan_sums_the_trace_and_progress_reports_both_passes():
    lines = [line(ts=1000 * i, ids=(i, 100 + i)) + "\n" for i in range(2500)]
    info = scan_trace(lines)
    assert (info.requests, info.first_ms, info.last_ms, info.blocks) == (2500, 0, 2_499_000, 5000)
    assert info.prompt_tokens == 2500 * 1024 and info.span_s(2.0) == 1249.5005
    seen = []
    result = replay(setup(fleet__replicas=8), lambda: lines, progress=lambda *a: seen.append(a[:2]))
    assert seen == [("checking", 1000), ("checking", 2000), ("checking", 2500),
                    ("replaying", 1000), ("replaying", 2000), ("replaying", 2500)]
    assert result.scenario.duration_s == 2499.001 and sum(result.series.requests) == 2500


# -- bad files: one clear line each -------------------------------------------------

BAD = [
    ("not json", "line 2: not JSON (Expecting value at column 1)"),
    ("[1, 2]", "line 2: expected a JSON object with timestamp, input_length, output_length, hash_ids; got list"),
    ('{"timestamp": 0, "input_length": 5, "hash_ids": [1]}', "line 2: missing field 'output_length'"),
    ('{"input_length": 5, "output_length": 1, "hash_ids": [1]}', "line 2: missing field 'timestamp'"),
    (line(ts=-1), "line 2: timestamp -1 is negative"),
    (line(ts="soon"), 'line 2: timestamp is "soon", not a number of milliseconds'),
    (line(inp=0, ids=()), "line 2: input_length is 0; use a whole number of tokens, 1 or more"),
    (line(out=-3), "line 2: output_length is -3"),
    (line(inp=10, ids=()), "line 2: hash_ids is empty; a prompt has at least one block"),
    (line(ids=(1, "b")), 'line 2: hash_ids[1] is "b", not a whole number'),
    (line(inp=1025, ids=(1, 2)), "line 2: 2 hash_ids, but input_length 1025 makes 3 blocks of 512 tokens"),
    (line(ts=2000) + "\n" + line(ts=1000), "line 3: timestamp 1000 is before line 2's 2000"),
    (line(ts=int("9" * 4001)), "line 2: timestamp 9999999999999999999999999999999999999... is too large"),
    (line(ts=1e300), "line 2: timestamp 1e+300 is too large"),
    (line(ts=600, out=10**7), "line 2: output_length 10000000 is more than 1,000,000"),
    (line(ts=600, inp=10**30, ids=(1,)), "line 2: input_length 1000000000000000000000000000000 is more than 100,000,000"),
]


@pytest.mark.parametrize("bad, message", BAD, ids=[m.split(": ")[1][:30] for _, m in BAD])
def test_a_bad_line_is_named_with_its_number_and_what_is_wrong(bad, message):
    data = text(line(ts=500), bad)
    with pytest.raises(TraceError) as info:
        scan_trace([data.encode()])
    assert str(info.value).startswith(message) and "\n" not in str(info.value)
    with pytest.raises(TraceError):
        list(read_trace([data]))


def test_lines_up_to_the_limit_are_read_and_one_byte_more_is_refused():
    base = line()
    exact = base[:-1] + " " * (MAX_LINE_BYTES - len(base)) + "}"
    assert len(exact.encode()) == MAX_LINE_BYTES
    assert scan_trace([(exact + "\r\n").encode()]).requests == 1  # a carriage return is not part of the line
    over = exact[:-1] + " }"
    for chunks in ([over.encode()], [(over + "\n").encode()], [over[i:i + 4096].encode() for i in range(0, len(over), 4096)]):
        with pytest.raises(TraceError, match=r"^line 1: longer than 1,048,576 bytes"):
            scan_trace(chunks)


def test_empty_and_non_utf8_traces_are_refused():
    with pytest.raises(TraceError, match="^the trace has no requests$"):
        scan_trace([b"\n  \n"])
    with pytest.raises(TraceError, match=r"^line 1: not UTF-8 text"):
        scan_trace([line().encode()[:-2] + b"\xff}\n"])


def test_a_replay_refuses_what_only_shapes_synthetic_traffic_and_spans_too_long():
    lines = [line(ts=0) + "\n", line(ts=10**9) + "\n"]  # 11.6 days
    with pytest.raises(ScenarioError, match="events"):
        replay(setup(events="burst@1+5x2"), lambda: lines[:1])
    with pytest.raises(ScenarioError, match="dynamic_text"):
        replay(setup(dynamic_text="top"), lambda: lines[:1])
    with pytest.raises(ScenarioError, match="use a speedup of 1.65 or more"):
        replay(setup(), lambda: lines)
    assert replay(setup(), lambda: lines, speedup=2).scenario.duration_s == 500_000.0005


def test_serving_mode_replays_a_trace_decoding_its_output_lengths():
    lines = [line(ts=200 * i, inp=1024, out=50 + i, ids=(1, 2 + i % 3)) + "\n" for i in range(40)]
    result = run(lines, fleet__decode="true", fleet__replicas=2, router__kind="cache_aware",
                 hardware__preset="llama8b_h100", fleet__memory_gb="none")
    assert result.mode == "serving" and result.requests == 40 and result.rejected == 0
    assert [r.answer_tokens for r in result.records] == [50 + i for i in range(40)]
    assert all(r.e2e_ms > r.ttft_ms for r in result.records)
    assert result.hit_rate > 0.5  # block 1 always, and the rest once a replica has seen it


# -- memory without a limit ---------------------------------------------------------

def test_memory_takes_any_size_and_none_for_no_limit():
    s = setup(fleet__memory_gb="none")
    assert s.fleet.memory_gb == math.inf and s.to_text()["fleet.memory_gb"] == "none"
    assert s.to_dict()["fleet"]["memory_gb"] is None and Scenario.from_dict(json.loads(json.dumps(s.to_dict()))) == s
    lab, _ = profile_of(s)
    assert lab.tokens_in(setup(fleet__memory_gb=3125).fleet.memory_gb) == 3125 * 8192
    assert lab.tokens_in(s.fleet.memory_gb) >= 2**62
    with pytest.raises(ScenarioError, match="use a number from 0 to 1000000000 or none"):
        setup(fleet__memory_gb=-1)
    result = simulate(setup(fleet__memory_gb="none", duration_s=60))
    assert result.hit_rate > 0 and max(r.cached_tokens for r in result.records) > 0


# -- export ---------------------------------------------------------------------

def test_exported_blocks_are_chained_over_the_token_stream():
    s = setup(fleet__replicas=1, duration_s=120, traffic__session_rate="0.1")
    requests = generate(s)
    rows = [json.loads(x) for x in trace_lines(requests, 16)]
    assert len(rows) == len(requests)
    for r, row in zip(requests, rows):
        assert row["input_length"] == r.prompt_tokens and row["output_length"] == r.answer_tokens
        assert len(row["hash_ids"]) == math.ceil(r.prompt_tokens / 16) and row["timestamp"] == round(r.arrival_s * 1000)
    by_session = {}
    for r, row in zip(requests, rows):
        by_session.setdefault(r.session, []).append((r.prompt_tokens, row["hash_ids"]))
    follow = [turns for turns in by_session.values() if len(turns) > 1]
    assert follow
    for (tokens, first), (_, second), *_ in follow:  # a next turn re-sends the first prompt: its whole blocks
        whole = tokens // 16
        assert second[:whole] == first[:whole]
        if whole < len(first):  # the first prompt's short last block is a different block in the next turn
            assert second[whole] != first[whole]
    firsts = {r.system_prompt: row["hash_ids"][:93] for r, row in zip(requests, rows) if r.turn == 0}
    assert len({tuple(v) for v in firsts.values()}) == len(firsts)  # a system prompt's 1,488 tokens: its own ids


@pytest.mark.parametrize("router", ["least_loaded", "cache_aware"])
def test_single_turn_traffic_replays_to_the_same_cache_hits_at_one_token_blocks(router):
    s = setup(router__kind=router, traffic__turns_mean=1, duration_s=60)
    lines = [x + "\n" for x in trace_lines(generate(s), 1)]
    synthetic, replayed = simulate(s), run(lines, block_tokens=1, router__kind=router)
    assert [r.cached_tokens for r in replayed.records] == [r.cached_tokens for r in synthetic.records]
    assert replayed.hit_rate == synthetic.hit_rate


@pytest.mark.parametrize("router", ["least_loaded", "cache_aware"])
@pytest.mark.parametrize("turns, tolerance", [(4, 0.07), (1, 0.01)])
def test_an_exported_lab_scenario_replays_within_the_stated_tolerance(router, turns, tolerance):
    """At 16-token blocks: blocks lose at most 15 tokens where two prompts part; answers, which the
    synthetic replica caches and a trace cannot name, are lost to cache-following routers in chats."""
    s = setup(router__kind=router, traffic__turns_mean=turns)
    lines = [x + "\n" for x in trace_lines(generate(s), 16)]
    synthetic, replayed = simulate(s), run(lines, block_tokens=16, router__kind=router)
    assert abs(replayed.hit_rate - synthetic.hit_rate) <= tolerance
    assert replayed.requests == synthetic.requests


# -- a replay that streams what it measures ------------------------------------------------

def _synthetic_lines(**keys):
    """A trace of the lab's own traffic (2,000-odd requests, sessions that come back to their replica)."""
    return [ln + "\n" for ln in trace_lines(generate(setup(duration_s=300, traffic__session_rate=2.5, **keys)))]


@pytest.mark.parametrize("keys", [
    {"fleet__replicas": 4},  # a queue on every replica: requests end out of arrival order
    {"fleet__replicas": 1, "fleet__prefill_tokens_per_s": 3000},  # one long queue
    {"fleet__replicas": 8, "router__kind": "cache_aware", "fleet__memory_gb": "none"},
    {"fleet__replicas": 3, "fleet__fetch": "rdma", "router__kind": "round_robin"},
], ids=["four", "one-queued", "no-limit", "fetch"])
def test_a_replay_that_keeps_no_records_measures_exactly_what_one_that_keeps_them_does(keys):
    import dataclasses

    lines = _synthetic_lines()
    scenario = setup(**keys)
    kept = replay(scenario, lambda: lines)
    seen = []
    streamed = replay(scenario, lambda: lines, keep_records=False, on_record=seen.append)
    assert streamed.records == () and len(kept.records) > 2000
    assert tuple(seen) == kept.records  # each record handed over, in arrival order
    assert dataclasses.replace(streamed, records=kept.records) == kept  # every figure, every series, to the bit
