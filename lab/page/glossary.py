"""The words the page uses, each explained once.

`GLOSSARY` holds one `Entry` per thing a newcomer may not know: a control
(named by its scenario key), a headline number (by its result key), a router
(by its `router.kind` value) or a plain term. The tip on each headline
number and the page's "Words used here" list read its full `text`
(`explain(name)`); the help line under each control reads its `brief`
(`brief(name)`), short enough to sit under a slider; the router's line
follows the menu's choice. A word is explained the same way everywhere.

Standard library only: this runs in the browser too.
"""

from dataclasses import dataclass

from model import ROUTERS

__all__ = ["GLOSSARY", "Entry", "brief", "explain", "term"]


@dataclass(frozen=True, slots=True)
class Entry:
    name: str  # scenario key, result key, router kind, or a term of its own
    term: str  # the word as the page writes it
    text: str  # one or two short sentences, for someone new to serving LLMs
    brief: str = ""  # a few words for beside a control; the text if empty


GLOSSARY: tuple[Entry, ...] = (
    # headline numbers
    Entry("hit_rate", "Hit rate", "Of all the prompt tokens sent, the share a replica already held in its prefix "
          "cache, so it skipped their prefill."),
    Entry("ttft", "TTFT", "Time to first token: from a request's arrival until its answer can start. Here that is "
          "time in the queue plus prefill (decode is not modelled)."),
    Entry("ttft_p50_ms", "TTFT p50", "The median time to first token: half of the requests waited less than this."),
    Entry("ttft_p99_ms", "TTFT p99", "The tail: one request in a hundred waited longer than this for its first token."),
    Entry("throughput_rps", "Throughput", "Requests answered per second over the run."),
    Entry("session", "Session and request", "A session is one chat. Each of its turns is one request, whose prompt "
          "repeats the system prompt and the whole conversation so far; a session sends about four."),
    Entry("backlog", "Backlog", "Seconds of prefill work waiting in a replica's queue."),
    # controls
    Entry("fleet.cache", "Prefix cache", "Keeps the KV of prompts a replica has read, so a prompt that starts the "
          "same way skips that part of prefill.",
          brief="Reuses the KV of prompt starts a replica has already read."),
    Entry("fleet.memory_gb", "Prefix memory", "Memory per replica for the prefix cache; 1 GB holds 8,192 tokens. When "
          "full, the least recently used branch tips are dropped.",
          brief="Cache room per replica; 1 GB holds 8,192 tokens."),
    Entry("fleet.replicas", "Replicas", "Copies of the model behind the router, each with its own GPU and its own "
          "prefix cache.",
          brief="Copies of the model, each with its own GPU and cache."),
    Entry("router.kind", "Router", "Chooses the replica for each request."),
    Entry("router.spill_threshold_s", "Spill threshold", "Cache-aware routing follows the longest cached match unless "
          "that replica's backlog is this many seconds above the least busy one's; then the request spills there.",
          brief="Seconds the cached replica may fall behind the least busy one before requests go elsewhere."),
    Entry("dynamic_text", "Dynamic text", "Text that differs per request, such as a timestamp. At the top it sits 200 "
          "tokens into the system prompt and nothing after it can match; at the bottom only the last bit differs.",
          brief="Per-request text, like a timestamp; at the top, nothing after token 200 can match."),
    Entry("traffic.session_rate", "New sessions per second", "How many chats start each second; each sends about "
          "four requests.",
          brief="Chats starting each second; each sends about four requests."),
    Entry("seed", "Seed", "Fixes every random choice: the same seed replays exactly the same traffic.",
          brief="Same seed, same traffic."),
    Entry("router.view", "What the router knows", "Real routers rarely read the replicas' caches. With 'its own memory' "
          "the router remembers which prompts it sent where, and never learns what a replica evicted.",
          brief="The caches themselves, or the router's memory of what it sent."),
    Entry("router.view_ttl_s", "Router forgets after", "How long the router remembers a prompt it sent. Too long and it "
          "chases prefixes the cache has evicted; too short and it forgets what is still there.",
          brief="How long the router's memory of a prompt lasts."),
    Entry("router.load_factor", "Load bound", "Bounded-load hashing: no replica may hold more than this many times a "
          "fair share of the requests in flight; the rest walk on along the ring.",
          brief="Times a fair share a replica may hold before requests walk on."),
    Entry("router.load_multiple", "Reroute past", "Prefix + load fallback: follow the cache unless that replica holds "
          "more than this many times the median number of requests.",
          brief="Times the median load before the cache is given up."),
    Entry("router.cache_threshold", "Match threshold", "SGLang router: follow the best match only if it covers more "
          "than this share of the prompt (its own tree's match); otherwise take the least busy replica.",
          brief="Share of the prompt a match must cover to be followed."),
    Entry("router.balance_abs_threshold", "Imbalance spread", "SGLang router: the fleet counts as lopsided when the "
          "busiest replica holds this many more requests than the idlest (and the ratio below holds too).",
          brief="Requests more on the busiest replica than on the idlest."),
    Entry("router.balance_rel_threshold", "Imbalance ratio", "SGLang router: lopsided also needs the busiest "
          "replica's requests to exceed the idlest's times this.",
          brief="And the busiest above the idlest times this."),
    Entry("fleet.decode", "Serving mode", "Decodes every answer in a continuous batch on real GPU figures, with one KV "
          "memory shared by running requests and the cache; the next turn waits for the answer.",
          brief="Decode in batches on real GPU figures; memory shared with running requests."),
    Entry("hardware.preset", "Model and GPU", "The model and GPU whose published figures turn tokens into seconds and "
          "bytes: the article's spec-sheet arithmetic, or (Llama, CodeLlama, Qwen) a GPU fitted to measured kernel "
          "timings; the lab's own preset is the seed's 10,000 tokens a second.",
          brief="Whose figures turn tokens into seconds and bytes."),
    Entry("traffic.kind", "Traffic", "Chats (the seed's sessions of short turns), agent runs (long prompts of tool "
          "definitions and results, each call repeating almost all of the one before), or a fixed number of users, "
          "each sending its next request only once its answer is out.",
          brief="Chat sessions, agents whose every call repeats the last one, or users who wait for answers."),
    Entry("traffic.agent_rate", "Agent runs per second", "How many agent runs start each second; each makes about "
          "twenty calls, a few seconds apart.",
          brief="Agent runs starting each second; each makes about twenty calls."),
    Entry("fleet.fetch", "Fetch over", "Lab mode: a replica missing part of a prompt that a peer holds may copy that "
          "KV over this link instead of recomputing it, when the copy is faster.",
          brief="Copy a peer's KV over this link when that beats recomputing it."),
    Entry("traffic.agent_fanout", "Fan-out", "Every fifth call of an agent run sends this many sub-calls at once, "
          "all sharing one new prefix.",
          brief="Sub-calls sent at once, sharing one new prefix."),
    Entry("traffic.agent_warm_first", "First call first", "Send one sub-call of a fan-out alone and the rest at its "
          "first token, so they find its prefix cached instead of all computing it.",
          brief="One sub-call warms the cache; the rest follow at its first token."),
    Entry("crossover.prompt_tokens", "Prompt", "The length of the prompt both GPUs could serve.",
          brief="Length of the prompt in question."),
    Entry("crossover.new_tokens", "Missing", "The part of the prompt the warm GPU does not hold and must compute.",
          brief="The part the warm GPU must still compute."),
    Entry("crossover.queued", "Queued", "Requests already waiting on the warm GPU; the new one waits for all of them.",
          brief="Requests the warm GPU must finish first."),
    Entry("crossover.queued_tokens", "Queued size", "Uncached tokens each queued request makes the warm GPU compute.",
          brief="Uncached tokens in each of them."),
    Entry("transfer.prompt_tokens", "Prompt", "The length of the prompt whose first token we wait for.",
          brief="Length of the prompt."),
    Entry("transfer.cached_tokens", "Held by a peer", "Tokens of the prompt another GPU holds: their KV can be copied "
          "instead of recomputed.",
          brief="The part whose KV another GPU holds."),
    Entry("transfer.rdma_gbps", "RDMA", "A GPU-to-GPU network link between machines, in gigabits a second.",
          brief="Network between machines, gigabits a second."),
    Entry("transfer.host_gb_s", "Host memory", "KV kept in the machine's own memory, read back over PCIe.",
          brief="The machine's memory over PCIe, GB a second."),
    Entry("transfer.nvme_gb_s", "NVMe", "KV kept on a local solid-state drive.",
          brief="A local solid-state drive, GB a second."),
    Entry("money.calls", "Calls", "Calls an agent run makes to an API, each prompt repeating the one before.",
          brief="API calls in one agent run."),
    Entry("money.gap_s", "Gap", "Seconds between one call and the next (tools running, a person reading).",
          brief="Seconds between one call and the next."),
    Entry("money.lifetime_s", "Lifetime", "How long a cached prompt lives after its last use; a longer gap throws it "
          "away and the next call pays to write it again.",
          brief="A cached prompt expires this long after its last use."),
    Entry("money.gpu_usd_per_hour", "GPU price", "What one GPU costs an hour, rented or amortised.",
          brief="What one GPU costs an hour."),
    Entry("fleet.prefill_replicas", "Prefill replicas", "Serving mode: replicas that only compute prompts. With "
          "decode replicas too, they replace the replicas above: the router picks one per request, and at the first "
          "token the prompt's KV moves to a decode replica.",
          brief="Only compute prompts; the router sends requests here."),
    Entry("fleet.decode_replicas", "Decode replicas", "Serving mode: replicas that only write answers, one token a "
          "step, taking each prompt's KV from a prefill replica. No prefill ever shares their steps.",
          brief="Only write answers; each takes the least loaded's share."),
    Entry("fleet.handoff", "Handoff", "The link a prompt's KV crosses from its prefill replica to its decode replica; "
          "its speed is the transfer figure's.",
          brief="The link a prompt's KV crosses to its decode replica."),
    Entry("fleet.queue_order", "Queue order", "Which waiting request a replica starts next: the one that came first, "
          "or the one whose prompt its cache holds most of (SGLang's order).",
          brief="First come first served, or most cached first."),
    Entry("fleet.queue_guard_s", "Starvation guard", "Longest prefix first: a request that has waited this long goes "
          "ahead of every request that came after it.",
          brief="After this wait a request goes ahead of later ones."),
    Entry("slo.ttft_ms", "TTFT target", "The wait for a first token a request should not exceed; the result counts "
          "the share of requests within it.",
          brief="Longest acceptable wait for the first token."),
    Entry("slo.tbt_ms", "TBT target", "The longest pause between two tokens of an answer; an answer that stops for "
          "longer even once has missed it.",
          brief="Longest acceptable pause between two tokens."),
    Entry("fleet.token_budget", "Token budget", "Serving mode: the most tokens one step of a replica computes, its "
          "decodes and the chunk of a prompt beside them; a long prompt is computed a budget at a time.",
          brief="Most tokens one step computes; prompts go in chunks of it."),
    Entry("roofline.batch", "Decode batch", "Sequences decoding together: one step reads every weight once and does "
          "one token of arithmetic for each of them.",
          brief="Sequences sharing one decode step."),
    Entry("roofline.prefill_tokens", "Prefill", "Tokens computed in one prefill pass over the weights.",
          brief="Tokens in one prefill."),
    Entry("router_overestimate", "Router's wrong guesses", "With its own memory for a view: the share of the cached "
          "tokens the router counted on that the replica it chose no longer held."),
    Entry("duration_s", "Run length", "Seconds during which new chats arrive; the run ends when the last "
          "request is served."),
    Entry("events", "Events", "A timestamp injected at the top of every prompt from a time on, a tenant surge (forty "
          "system prompts instead of six) or a burst (arrivals several times faster) for a while."),
) + tuple(Entry(key, p.label, p.help, brief=p.brief) for key, p in ROUTERS.items())  # routers, by router.kind

_BY_NAME = {e.name: e for e in GLOSSARY}
_ALIASES = {"replica_count": "fleet.replicas"}  # the headline's replica count is the control's number


def explain(name: str) -> str:
    """The explanation of `name` (a key, a result key, a router kind or a term); empty if there is none."""
    entry = _BY_NAME.get(_ALIASES.get(name, name))
    return entry.text if entry else ""


def brief(name: str) -> str:
    """The few words beside a control for `name`: its brief, else its explanation."""
    entry = _BY_NAME.get(_ALIASES.get(name, name))
    return (entry.brief or entry.text) if entry else ""


def term(name: str) -> str:
    """The word the page uses for `name`."""
    entry = _BY_NAME.get(_ALIASES.get(name, name))
    return entry.term if entry else name
