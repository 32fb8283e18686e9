"""The missions, in the order the page lists them. Each starts broken and teaches one thing.

A mission's `id` is permanent: links (`#mission=<id>`) and players' stored
progress (best stars by id) name it, so an id is never reused or renamed.
A mission opens when every mission in its `requires` has a star
(`unlocked`); the order of `MISSIONS` is for display only, so missions can
be reordered or added without anyone losing stars or access.

Thresholds were set by running the model: every broken start scores no
star, and tests/test_missions.py holds a one-star and a three-star setup
for each, so a change to the model that moves a mission out of reach shows.
A mission with a `trace` plays the first `trace_requests` requests of that
public trace instead of the scenario's synthetic traffic (`lab.tracemission`
finds and replays it); its scenario sets only the fleet.
"""

from collections.abc import Iterable, Mapping

from model import Scenario

from .scoring import Mission, Threshold

__all__ = ["MISSIONS", "check_catalog", "find_mission", "unlocked"]


def _s(**text: str) -> Scenario:
    return Scenario().with_text({key.replace("__", "."): value for key, value in text.items()})


def at_most(figure: str, value: float) -> Threshold:
    return Threshold(figure, "<=", value)


def at_least(figure: str, value: float) -> Threshold:
    return Threshold(figure, ">=", value)


MISSIONS: tuple[Mission, ...] = (
    Mission(
        id="cache-on",
        title="Nothing is remembered",
        brief=("Four replicas, and every one of them reads every prompt from the first token, "
               "even the 1,500-token system prompt it read a second ago. Half a second of prefill "
               "for a question of forty words."),
        lesson=("With the cache on, a replica reads only what is new. The same traffic needs fewer "
                "replicas once most of each prompt is already in memory."),
        start=_s(fleet__cache="false"),
        controls=("fleet.cache", "fleet.replicas"),
        goal=(at_most("ttft_p50_ms", 100),),
        two_stars=(at_most("replicas", 3),),
        three_stars=(at_most("replicas", 2),),
    ),
    Mission(
        id="timestamp",
        requires=("cache-on",),
        title="A timestamp at the top",
        brief=("Someone put the current time into the system prompt, 200 tokens in. Every request "
               "now differs from every other right there, and the cache can only ever match the "
               "first 200 tokens."),
        lesson=("A prefix cache matches from the first token until the first difference. Anything "
                "that changes per request belongs at the very end of the prompt, or nowhere."),
        start=_s(dynamic_text="top", router__kind="cache_aware"),
        controls=("dynamic_text",),
        goal=(at_least("hit_rate", 0.5),),
        two_stars=(at_least("hit_rate", 0.9),),
        three_stars=(at_most("ttft_p99_ms", 100),),
    ),
    Mission(
        id="round-robin",
        requires=("timestamp",),
        title="Round robin spreads the memory thin",
        brief=("Eight replicas take turns. Each conversation's history is on whichever replica "
               "served its last turn, and the next turn almost never goes back there."),
        lesson=("Routing by cache keeps a conversation where its history is. The hit rate rises and "
                "the same traffic fits on fewer replicas."),
        start=_s(fleet__replicas="8", router__kind="round_robin"),
        controls=("router.kind", "fleet.replicas"),
        goal=(at_least("hit_rate", 0.85),),
        two_stars=(at_most("replicas", 4),),
        three_stars=(at_most("replicas", 3), at_most("ttft_p99_ms", 300)),
    ),
    Mission(
        id="hot-tenant",
        requires=("round-robin",),
        title="One hot tenant, one hot replica",
        brief=("Traffic is four times heavier and one system prompt is far more popular than the "
               "rest. The cache-aware router never lets go of the replica that holds it, so that "
               "replica queues for seconds while others idle."),
        lesson=("Affinity needs a breaking point. A spill threshold sends a request elsewhere once "
                "the warm replica is too far behind, trading a little hit rate for a much shorter tail."),
        start=_s(fleet__replicas="8", router__kind="cache_aware", router__spill_threshold_s="off",
                 traffic__session_rate="8", duration_s="120"),
        controls=("router.spill_threshold_s",),
        goal=(at_most("ttft_p99_ms", 800),),
        two_stars=(at_most("ttft_p99_ms", 500),),
        three_stars=(at_most("ttft_p99_ms", 400), at_least("hit_rate", 0.82)),
    ),
    Mission(
        id="surge-memory",
        requires=("hot-tenant",),
        title="A surge of new tenants",
        brief=("From 40 s to 140 s, sessions come from forty system prompts instead of six. Half a "
               "gigabyte of prefix memory per replica cannot hold them, and the cache keeps evicting "
               "what it is about to need."),
        lesson=("A cache only helps if the working set fits. Memory per replica and the number of "
                "replicas both add room; the cheapest fleet is the one that just holds it."),
        start=_s(router__kind="cache_aware", fleet__memory_gb="0.5", events="surge@40+100"),
        controls=("fleet.memory_gb", "fleet.replicas"),
        goal=(at_least("hit_rate", 0.8),),
        two_stars=(at_most("fleet_memory_gb", 12),),
        three_stars=(at_most("ttft_p99_ms", 400),),
    ),
    Mission(
        id="burst",
        requires=("surge-memory",),
        title="A burst with the fewest replicas",
        brief=("At 60 s, arrivals jump to five times the usual rate for thirty seconds. Two replicas "
               "behind a least-loaded router fall seconds behind."),
        lesson=("A cache makes each request cheaper, so the same replicas absorb more of a burst; "
                "a spill threshold keeps the burst from piling onto the warmest replica."),
        start=_s(fleet__replicas="2", router__kind="least_loaded", events="burst@60+30x5"),
        controls=("fleet.replicas", "router.kind", "router.spill_threshold_s"),
        goal=(at_most("ttft_p99_ms", 1000),),
        two_stars=(at_most("replicas", 3),),
        three_stars=(at_most("ttft_p99_ms", 650),),
    ),
    Mission(
        id="consistent-hash",
        requires=("burst",),
        title="Pinned to a hash",
        brief=("Consistent hashing sends each system prompt to one replica, always. That keeps the "
               "cache warm, but it never looks at load: at this rate the most popular prompt's "
               "replica drowns."),
        lesson=("A hash knows where a prefix lives but not how busy that replica is. Cache-aware "
                "routing with a spill threshold uses both."),
        start=_s(router__kind="consistent_hash", traffic__session_rate="5"),
        controls=("router.kind", "router.spill_threshold_s"),
        goal=(at_most("ttft_p99_ms", 1000),),
        two_stars=(at_most("ttft_p99_ms", 700), at_least("hit_rate", 0.69)),
        three_stars=(at_most("ttft_p99_ms", 600),),
    ),
    Mission(
        id="monday",
        requires=("consistent-hash",),
        title="Monday morning",
        brief=("Everything at once: a timestamp at the top of the prompt, round-robin routing, one "
               "gigabyte of prefix memory per replica, six replicas, and a burst at 90 s. Fix the "
               "prompt, the router and the memory, then give back replicas."),
        lesson=("Prompt layout, routing and memory multiply: each fix only pays in full once the "
                "others are in place."),
        start=_s(router__kind="round_robin", dynamic_text="top", fleet__replicas="6", fleet__memory_gb="1",
                 events="burst@90+30x3"),
        controls=("dynamic_text", "router.kind", "router.spill_threshold_s", "fleet.replicas", "fleet.memory_gb",
                  "fleet.cache"),
        goal=(at_least("hit_rate", 0.75), at_most("ttft_p99_ms", 600)),
        two_stars=(at_most("replicas", 4),),
        three_stars=(at_most("fleet_memory_gb", 16), at_most("ttft_p99_ms", 450)),
    ),
    Mission(
        id="bounded-hash",
        requires=("consistent-hash",),
        title="A hot prompt, a ring and a bound",
        brief=("A hash ring pins each system prompt to one replica, and one prompt is far hotter than "
               "the rest. Its replica drowns while the others idle. This ring can refuse: no replica "
               "takes more than a multiple of a fair share, and the overflow walks on to the next "
               "replica on the ring. Right now the multiple is so loose it never bites."),
        lesson=("A load bound on a hash ring keeps most of the affinity and cuts the tail: only the "
                "overflow of a hot prompt moves, and it always moves to the same next replica."),
        start=_s(router__kind="bounded_hash", router__load_factor="3", traffic__session_rate="5",
                 traffic__zipf_s="1.5"),
        controls=("router.load_factor",),
        goal=(at_most("ttft_p99_ms", 1500),),
        two_stars=(at_most("ttft_p99_ms", 1100), at_least("hit_rate", 0.6)),
        three_stars=(at_most("ttft_p99_ms", 850),),
    ),
    Mission(
        id="stale-router",
        requires=("bounded-hash",),
        title="The router remembers too much",
        brief=("This router does not read the replicas' caches: it remembers what it sent where, and "
               "it never forgets. During a surge of new tenants the caches evict old prompts every few "
               "seconds, and the router keeps sending requests after prefixes that are long gone."),
        lesson=("A router's memory should fade about as fast as the caches forget: too long and it "
                "chases evicted prefixes, too short and it forgets what is still there."),
        start=_s(router__kind="cache_aware", router__view="approximate", router__view_ttl_s="off",
                 fleet__memory_gb="1", events="surge@40+100", traffic__session_rate="3"),
        controls=("router.view_ttl_s",),
        goal=(at_most("router_overestimate", 0.45),),
        two_stars=(at_least("hit_rate", 0.435),),
        three_stars=(at_most("ttft_p99_ms", 800),),
    ),
    Mission(
        id="warm-or-idle",
        requires=("stale-router",),
        title="Warm but busy, or idle and cold",
        brief=("Agents send 30,000-token prompts that repeat almost all of their last call, on a 14B "
               "model on H100s. The cache-aware router follows the cache until a replica is a second "
               "behind, then sends the call to an idle replica that must compute all of it again: "
               "two seconds of prefill to save one second of queue."),
        lesson=("Compare finishing times, not queues: a warm replica with a queue often answers first, and "
                "copying the KV from a peer can beat computing it again."),
        start=_s(traffic__kind="agent", traffic__agent_rate="0.3", hardware__preset="article_14b_h100",
                 fleet__memory_gb="16", router__kind="cache_aware"),
        controls=("router.kind", "router.spill_threshold_s", "fleet.fetch", "fleet.replicas"),
        goal=(at_least("hit_rate", 0.88), at_most("ttft_p99_ms", 2300)),
        two_stars=(at_most("ttft_p99_ms", 1750),),
        three_stars=(at_most("replicas", 5),),
    ),
    Mission(
        id="fan-out",
        requires=("warm-or-idle",),
        title="Eight calls, one cold prefix",
        brief=("Every fifth step an agent sends eight sub-calls at once, all starting with the same "
               "4,000 new tokens. They reach the replicas before any of them has computed that prefix, "
               "so up to eight replicas compute it side by side and the tail waits."),
        lesson=("Sub-calls that share a new prefix race for the cache: send one first and the rest at its "
                "first token, and they all read what it wrote."),
        start=_s(traffic__kind="agent", traffic__agent_fanout="8", hardware__preset="article_14b_h100",
                 fleet__memory_gb="16", router__kind="cache_aware"),
        controls=("traffic.agent_warm_first", "router.kind", "fleet.replicas"),
        goal=(at_least("hit_rate", 0.9), at_most("ttft_p99_ms", 2000)),
        two_stars=(at_most("ttft_p99_ms", 1500),),
        three_stars=(at_most("replicas", 3),),
    ),
    Mission(
        id="real-traffic",
        requires=("round-robin",),
        title="Real traffic, fewest replicas",
        brief=("Ten minutes of a real chat service: 1,750 requests from Mooncake's public conversation trace, "
               "8,000 tokens at the median and up to 123,000, most of them a conversation sent again with one "
               "more turn. Eight replicas take turns; each has 256 GB of prefix memory and prefills 50,000 "
               "tokens a second. The slowest one request in a hundred still waits more than two seconds."),
        lesson=("A conversation's history sits on the replica that served its last turn. Routers that follow "
                "the cache send the next turn there and skip a quarter of all prompt tokens; routers that only "
                "balance load recompute them, and even sixteen such replicas miss the target that four "
                "cache-aware ones meet."),
        start=_s(router__kind="round_robin", fleet__replicas="8", fleet__memory_gb="256",
                 fleet__prefill_tokens_per_s="50000"),
        controls=("fleet.replicas", "router.kind", "router.spill_threshold_s"),
        goal=(at_most("ttft_p99_ms", 1950),),
        two_stars=(at_most("replicas", 6),),
        three_stars=(at_most("replicas", 4),),
        trace="conversation_trace.jsonl",  # its first ten minutes
        trace_requests=1750,
    ),
    Mission(
        id="split-decode",
        requires=("fan-out",),
        title="Answers that freeze mid-sentence",
        brief=("Serving mode: four replicas, each decoding answers while it prefills new prompts in chunks of "
               "2,048 tokens. On this GPU such a chunk takes 145 ms, and every answer decoding on that "
               "replica waits for it. More than half of the answers stop for longer than 100 ms at least once."),
        lesson=("Prefill wants the GPU's arithmetic and decode its memory bandwidth; on one replica the prefill "
                "sets the pace of every answer. Replicas that only decode never wait for a prefill, and a few "
                "that only prefill can feed them: fewer GPUs meet both targets than any co-located fleet."),
        start=_s(fleet__decode="true", hardware__preset="article_14b_h100"),
        controls=("fleet.replicas", "fleet.prefill_replicas", "fleet.decode_replicas"),
        goal=(at_least("ttft_slo_met", 0.99), at_least("tbt_slo_met", 0.99)),
        two_stars=(at_most("gpus", 5),),
        three_stars=(at_most("gpus", 3),),
    ),
)


def find_mission(mission_id: str, missions: Iterable[Mission] = MISSIONS) -> Mission | None:
    return next((m for m in missions if m.id == mission_id), None)


def unlocked(progress: Mapping[str, int], missions: Iterable[Mission] = MISSIONS) -> frozenset[str]:
    """Ids of the missions whose prerequisites all have at least one star (ids not in `missions` count too)."""
    return frozenset(m.id for m in missions if all(progress.get(r, 0) >= 1 for r in m.requires))


def check_catalog(missions: Iterable[Mission] = MISSIONS) -> None:
    """ValueError unless ids are unique, prerequisites name missions of the catalog, and none depends on itself."""
    by_id: dict[str, Mission] = {}
    for m in missions:
        if m.id in by_id:
            raise ValueError(f"mission id {m.id!r} is used twice")
        by_id[m.id] = m
    for m in by_id.values():
        unknown = [r for r in m.requires if r not in by_id]
        if unknown:
            raise ValueError(f"mission {m.id!r} requires unknown mission(s) {', '.join(unknown)}")
    done: set[str] = set()
    while len(done) < len(by_id):  # peel off missions whose prerequisites are all peeled: what is left is a cycle
        ready = {i for i, m in by_id.items() if i not in done and set(m.requires) <= done}
        if not ready:
            raise ValueError(f"missions {', '.join(sorted(set(by_id) - done))} require each other in a cycle")
        done |= ready
