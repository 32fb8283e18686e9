"""vLLM's router: SGLang's rule, but equal matches go to the least loaded."""

from __future__ import annotations

from typing import ClassVar

from model.routing.policies.sglang import SGLang
from model.routing.sglang import SGLangRouter, VLLMRouterRule


class VLLMRouter(SGLang, key='vllm_router', label='vLLM router',
                 rule='as the SGLang router, but of the replicas holding the longest match it takes the least loaded',
                 help=("vLLM's router (vllm-router 0.1.17, cache-aware), a fork of SGLang's with the same rule and "
                       "settings but one step: when several replicas hold the longest match equally, it takes the "
                       "least busy of them rather than the first that got it."),
                 brief='as the SGLang router, but equal matches go to the least busy.'):
    """vLLM's router (vllm-router 0.1.17, `cache_aware`): SGLang's rule, but equal matches go to the least loaded.

    A fork of sgl-router, checked against its binary: the same balance test,
    threshold and tree of routed text (the same `router.*` keys), except
    that when several replicas hold the longest match at equal length it
    takes the least loaded of them (ties: lowest index), where sgl-router
    takes the one that first routed that prefix. It matches token ids, not
    characters, which for the lab's text gives the same match rates. Its
    launcher trims its tree every 120 s to 2^25 of its own units (about 8 a
    token, taken as 2 a character); `router.max_tree_chars` is in characters
    for both. The lab's runs never fill a tree that far, so `router.*`'s
    defaults (sgl-router's) decide the same as its own.
    """

    RULE: ClassVar[type[SGLangRouter]] = VLLMRouterRule
    CACHE_WHY: ClassVar[str] = ("Its tree matched {rate:.0%} of the prompt, above its threshold: of the replicas "
                                "holding that much of it, it took the one with the fewest requests in flight.")


POLICY = VLLMRouter  # what this file adds to the registry (model/routing/kinds.py)
