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
public trace instead of the scenario's synthetic traffic (`lab.common.tracemission`
finds and replays it); its scenario sets only the fleet.
"""

from collections.abc import Iterable, Mapping

from model import Scenario

from .grid import block
from .scoring import Mission, Prediction, Threshold

__all__ = ["MISSIONS", "check_catalog", "find_mission", "unlocked"]


def _s(**text: str) -> Scenario:
    return Scenario().with_text({key.replace("__", "."): value for key, value in text.items()})


# The routers a sweep tries besides the cache-aware one (whose spill threshold it sweeps apart, as SPILLS).
ROUTERS = "round_robin,least_loaded,power_of_two,consistent_hash,prefix_load_aware,cost"
SPILLS = "off,0.1,0.2,0.5,1"


def share(question: str, figure: str = "hit_rate") -> Prediction:
    """A prediction of a share (a hit rate), on a slider of whole per cent."""
    return Prediction(figure, question, 0.0, 1.0, 0.01)


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
        grid=(block(fleet__cache="false,true", fleet__replicas="1,2,3,4,5,6,7,8"),),
        tradeoff=("replicas", "ttft_p50_ms"),
        hints=("The Prefix cache checkbox decides whether a replica keeps what it has already read.",
               "Once prompts are cached, each request costs less: watch Time to first token over time while you "
               "take away Replicas."),
        predict=Prediction("ttft_p50_ms", "With no prefix cache, how long will the median request wait for its "
                           "first token?", 0, 1000, 10),
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
        grid=(block(dynamic_text="none,top,bottom"),),
        tradeoff=("hit_rate", "ttft_p99_ms"),
        hints=("Read the line under Dynamic text in the prompt: how far into the prompt can two requests match?",
               "Watch Prefix cache hit rate over time as you move the Dynamic text.",
               "Per-request text that still differs costs a little on every request: compare the choices of "
               "Dynamic text on Distribution of time to first token."),
        predict=share("With the timestamp this early in the prompt, what share of prompt tokens will the cache "
                      "serve?"),
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
        grid=(block(router__kind="cache_aware," + ROUTERS, fleet__replicas="2,3,4,5,6,8"),),
        hints=("The Router picks the replica for each turn. Does the one in use look at what a replica holds?",
               "Prefix cache hit rate over time shows how often a turn finds its conversation's history.",
               "Once the hit rate is high, take away Replicas one at a time and watch Distribution of time to "
               "first token."),
        predict=share("With eight replicas taking turns, what share of prompt tokens will the cache serve?"),
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
        grid=(block(router__spill_threshold_s="off,0,0.1,0.2,0.3,0.5,0.7,1,1.5,2,3"),),
        tradeoff=("ttft_p99_ms", "hit_rate"),
        hints=("How busy each replica was over time shows one replica carrying the hot tenant while others wait.",
               "The Spill threshold says how far behind the warm replica may fall before a request goes elsewhere.",
               "Spilling too eagerly gives away hit rate: keep Prefix cache hit rate over time in view while you "
               "move the Spill threshold."),
        predict=Prediction("ttft_p99_ms", "With the cache-aware router never letting go, how long will the slowest "
                           "request in a hundred wait for its first token?", 0, 5000, 50),
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
        grid=(block(fleet__memory_gb="0.5,1,2,3,4,6,8", fleet__replicas="2,3,4,6,8"),),
        tradeoff=("fleet_memory_gb", "hit_rate"),
        hints=("KV memory of the fleet over time shows the cache full during the surge: what does it throw away?",
               "Prefix memory per replica and Replicas both make room; the second star counts the whole fleet's "
               "memory.",
               "Find the least Prefix memory that keeps Prefix cache hit rate over time up through the surge, then "
               "look at the tail in Distribution of time to first token."),
        predict=share("With half a gigabyte per replica during the surge, what share of prompt tokens will the "
                      "cache serve?"),
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
        grid=(block(router__kind="cache_aware", router__spill_threshold_s="off,0.2,0.5,1", fleet__replicas="2,3,4,5,6"),
              block(router__kind="round_robin,least_loaded,prefix_load_aware,cost", fleet__replicas="2,3,4,5,6")),
        hints=("No router saves a fleet this small from the burst: add Replicas and watch how far Time to first "
               "token over time falls behind, and how slowly it catches up.",
               "A request whose prompt is already cached takes less of a replica: look at what the Router weighs.",
               "With a router that follows the cache, the Spill threshold lets the burst overflow the warmest "
               "replica."),
        predict=Prediction("ttft_p99_ms", "With two least-busy replicas in the burst, how long will the slowest "
                           "request in a hundred wait for its first token?", 0, 20000, 250),
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
        grid=(block(router__kind="cache_aware", router__spill_threshold_s=SPILLS),
              block(router__kind=ROUTERS + ",random,bounded_hash,sglang")),
        tradeoff=("ttft_p99_ms", "hit_rate"),
        hints=("How busy each replica was over time shows one replica drowning: the hash never looks at load.",
               "Try a Router that weighs how busy a replica is as well as what it holds.",
               "The Spill threshold sets how far behind a warm replica may fall before its requests go elsewhere."),
        predict=Prediction("ttft_p99_ms", "With every system prompt pinned to its replica, how long will the slowest "
                           "request in a hundred wait for its first token?", 0, 20000, 250),
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
        grid=(block(router__kind="round_robin,least_loaded,cache_aware", dynamic_text="none,top,bottom",
                    fleet__memory_gb="1,4", fleet__replicas="3,4,6"),
              block(fleet__cache="false", router__kind="round_robin,least_loaded,cache_aware",
                    fleet__replicas="3,4,6")),
        hints=("Begin with the prompt: where does the Dynamic text in the prompt sit, and what can match after it?",
               "Then the Router: Prefix cache hit rate over time shows whether turns find their history.",
               "Once both are fixed, see whether Prefix memory per replica holds the working set, and only then "
               "take away Replicas."),
        predict=share("With the timestamp early in the prompt and turns taken in order, what share of prompt tokens "
                      "will the cache serve?"),
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
        grid=(block(router__load_factor="1,1.05,1.1,1.15,1.2,1.25,1.3,1.4,1.5,1.75,2,2.5,3"),),
        tradeoff=("ttft_p99_ms", "hit_rate"),
        hints=("How busy each replica was over time: the hot prompt's replica carries far more than its share.",
               "The Load bound caps what one replica may hold, as a multiple of a fair share; the overflow walks on "
               "along the ring.",
               "A tighter Load bound moves more requests away from the replica that caches their prompt: keep "
               "Prefix cache hit rate over time in view as you tighten it."),
        predict=Prediction("ttft_p99_ms", "With a bound so loose it never refuses, how long will the slowest request "
                           "in a hundred wait for its first token?", 0, 20000, 250),
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
        grid=(block(router__view_ttl_s="off,0,1,2,3,4,5,7,10,15,20,30,60,120"),),
        tradeoff=("router_overestimate", "hit_rate"),
        hints=("The router's wrong guesses are prefixes it counted on that the replica had already evicted.",
               "Router forgets after sets how long the router trusts its memory of a prompt; during the surge the "
               "caches evict far sooner than that.",
               "Forgetting too soon drops prefixes that are still cached: watch Prefix cache hit rate over time as "
               "you shorten it."),
        predict=share("With a router that remembers everything it sent, what share of its guesses will be wrong?",
                      "router_overestimate"),
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
        grid=(block(router__kind="cache_aware", router__spill_threshold_s="0.5,1", fleet__fetch="off,rdma,host",
                    fleet__replicas="3,4,5,6"),
              block(router__kind="least_loaded,cost", fleet__fetch="off,rdma,host", fleet__replicas="3,4,5,6")),
        hints=("At this size no router reaches the tail the stars ask for: add Replicas and watch Distribution of "
               "time to first token.",
               "Fetch a prefix a peer holds over: copying the KV from a warm peer can take less time than computing "
               "it again.",
               "Compare finishing times, not queues: read what each choice of Router weighs before it picks."),
        predict=Prediction("ttft_p99_ms", "With the router spilling to cold replicas, how long will the slowest "
                           "request in a hundred wait for its first token?", 0, 5000, 50),
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
        grid=(block(traffic__agent_warm_first="false,true", router__kind="cache_aware,round_robin,least_loaded,cost",
                    fleet__replicas="2,3,4,5,6"),),
        hints=("Time to first token over time jumps each time a fan-out's sub-calls arrive together.",
               "Send the first sub-call alone, the rest at its first token: the others then read a prefix instead "
               "of racing to compute it.",
               "Once the sub-calls share their prefix, take away Replicas and watch Distribution of time to first "
               "token."),
        predict=Prediction("ttft_p99_ms", "With eight sub-calls racing for one cold prefix, how long will the "
                           "slowest request in a hundred wait for its first token?", 0, 10000, 100),
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
        grid=(block(router__kind="cache_aware", router__spill_threshold_s="off,1,2", fleet__replicas="2,3,4,6,8,16"),
              block(router__kind="round_robin,least_loaded,cost", fleet__replicas="2,3,4,6,8,16")),
        hints=("Prefix cache hit rate over time: when replicas take turns, a conversation's next turn rarely lands "
               "where its history is.",
               "Try a Router that sends each turn to the replica that already holds the conversation.",
               "Once the hit rate climbs, take away Replicas step by step and watch Distribution of time to first "
               "token."),
        predict=share("With eight replicas taking turns on real traffic, what share of prompt tokens will the cache "
                      "serve?"),
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
        grid=(block(fleet__replicas="1,2,3,4,5,6,7,8"),
              block(fleet__prefill_replicas="1,2,3", fleet__decode_replicas="1,2,3,4")),
        tradeoff=("gpus", "tbt_slo_met"),
        hints=("Every prefill chunk holds up each answer decoding beside it: the pauses between tokens are what "
               "miss their target.",
               "GPUs that only decode never share a step with a prefill, and GPUs that only prefill feed them.",
               "Count GPUs, not Replicas: once prefill and decode are apart, spend GPUs where the targets need "
               "them."),
        predict=share("With prefill chunks sharing every replica, what share of answers will never pause longer "
                      "than the TBT target?", "tbt_slo_met"),
    ),
    Mission(
        id="pile-up",
        requires=("stale-router",),
        title="Everyone follows the first",
        brief=("SGLang's own router, with the settings its launcher gives. At this light load no replica is "
               "ever 64 requests ahead of another, so it always follows its tree, and its tree names the replica "
               "that first received each prefix. Every request of the run lands on replica 0; three replicas "
               "sit idle."),
        lesson=("A router that follows the first holder of a prefix needs a load check that bites at the load "
                "it actually sees. At a few requests in flight, an imbalance bound of 64 never fires: the bound "
                "has to sit near the spread a busy replica really reaches."),
        start=_s(router__kind="sglang"),
        controls=("router.balance_abs_threshold", "router.cache_threshold"),
        goal=(at_most("ttft_p99_ms", 1000),),
        two_stars=(at_most("ttft_p99_ms", 600),),
        three_stars=(at_most("ttft_p99_ms", 450), at_least("hit_rate", 0.75)),
        grid=(block(router__balance_abs_threshold="0,1,2,4,8,16,32,64,128",
                    router__cache_threshold="0.3,0.5,0.7,0.9"),),
        tradeoff=("ttft_p99_ms", "hit_rate"),
        hints=("How busy each replica was over time shows one replica doing all the work: every request ties on "
               "load, and the tree always names the same replica.",
               "Lower the Imbalance spread until the load check fires at the few requests a busy replica really "
               "holds.",
               "Watch Prefix cache hit rate over time as you lower the Imbalance spread: with none at all, prompts "
               "scatter away from the replicas that hold their prefixes."),
        predict=Prediction("ttft_p99_ms", "With every request sent to one replica, how long will the slowest "
                           "request in a hundred wait for its first token?", 0, 5000, 50),
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
