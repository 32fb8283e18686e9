"""SGLang's router (sgl-router 0.3.2, `cache_aware`), as its launcher runs it, on what it knows itself."""

from __future__ import annotations

from typing import ClassVar

from model.config import Scenario
from model.routing.sglang import Decision, SGLangRouter
from model.routing.text import CHARS_PER_TOKEN, Renderer
from model.routing.view import Policy, View


class SGLang(Policy, key='sglang', label='SGLang router',
             rule=('balances load when the fleet is lopsided, else follows its own tree of routed text above a match '
                   'threshold, else the least loaded'),
             help=("SGLang's own router (sgl-router 0.3.2, cache-aware), with its launcher's settings. It keeps its "
                   "own tree of the prompt text it sent, never the replicas' caches. When loads are lopsided it "
                   "takes the least busy replica; otherwise it follows its tree to the replica that first got the "
                   "prompt's longest prefix, if that prefix covers enough of the prompt, else the least busy."),
             brief='its own tree of what it sent: the first holder of a prefix, unless loads are lopsided.'):
    """SGLang's router (sgl-router 0.3.2, `cache_aware`), as its launcher runs it, on what it knows itself.

    The rule is `sglang.SGLangRouter`'s: if the fleet is imbalanced (max -
    min in flight > `router.balance_abs_threshold`, 64, and max > min x
    `router.balance_rel_threshold`, 1.5), the fewest in flight; else the
    worker its tree names for the longest routed prefix if the match rate
    exceeds `router.cache_threshold` (0.3); else the fewest in flight.
    Ties go to the lowest index (the router's worker order).

    What it knows is its own: a tree of the prompt text it routed (one for
    the fleet, nodes tagged by replica, cut to `router.max_tree_chars` per
    replica every `router.eviction_interval_s` seconds of simulated time),
    never the replicas' caches, their evictions or the answers; `router.view`
    does not apply. Prompts become text by `text.Renderer` (4 characters a
    token, so character matches stop where segment matches do). Its load is
    the replica's requests in flight: sent and not yet answered in full
    (serving mode counts decoding ones; in lab mode nothing decodes, so a
    request leaves the count when its prefill ends).
    """

    RULE: ClassVar[type[SGLangRouter]] = SGLangRouter  # the real router's rule, on its own state
    own_view: ClassVar[bool] = True  # knows what it routed, not the trees: `router.view` does not apply
    # what its cache branch did, for `explain` ({rate}: the tree's match rate, {named}: the replica the tree named)
    CACHE_WHY: ClassVar[str] = ("Its tree matched {rate:.0%} of the prompt, above its threshold, at a prefix it first "
                                "sent to replica {named}: it went there, however busy.")

    def __init__(self, scenario: Scenario) -> None:
        self.settings = scenario.router
        self.router: SGLangRouter | None = None  # made at the first decision, for the replicas routed between
        self.renderer = Renderer()
        self.text = ""  # the prompt of the decision under way, as text
        self.note_beliefs = False  # set (by `explain`) to keep `beliefs` at every decision
        self.beliefs: list[int] = []  # tokens its tree held for each replica at the last decision
        self.last: Decision | None = None

    def choose(self, view: View) -> int:
        router = self.router
        if router is None:
            r = self.settings
            router = self.router = self.RULE(len(view), r.cache_threshold, r.balance_abs_threshold,
                                             r.balance_rel_threshold, r.eviction_interval_s,
                                             r.max_tree_chars * self.RULE.UNITS_PER_CHAR)
        request = view.request
        text = self.text = self.renderer.prompt(request.keys, request.sizes)
        replicas = view.replicas
        decision = self.last = router.decide(text, [r.in_flight() for r in replicas], view.now)
        if self.note_beliefs:
            self.beliefs = [router.tree.held(text, i) // CHARS_PER_TOKEN for i in range(len(replicas))]
        return decision.worker

    def sent(self, index: int) -> int:
        """Note that this decision's prompt went to replica `index` (its choice, or one forced on it); returns the
        tokens its tree held there, what the router counted on finding."""
        assert self.router is not None, "sent() follows choose()"
        believed = self.router.tree.held(self.text, index) // CHARS_PER_TOKEN
        self.router.routed(self.text, index)
        return believed

    def scores(self, view: View) -> tuple[str, list[float]]:
        """What it compares, per replica (the hindsight explainer's table): its tree's match rate."""
        prompt = max(1, view.request.prompt_tokens)
        return ("its tree's match rate: the replica it names wins above the threshold, unless loads are lopsided",
                [round(self.beliefs[i] / prompt, 6) for i in range(len(view))])


POLICY = SGLang  # what this file adds to the registry (routing/policies/__init__.py)
