"""The routers there are: the one list of them, one line each (a leaf: it imports nothing).

Each name is `router.kind`'s value and the file of `model/routing/policies/` that
holds its policy (`POLICY`). The scenario's allowed kinds read this list, so the
scenario's declaration needs no policy; the policies' registry
(`routing.policies.ROUTERS`) imports each file by its name. Adding a router is one
file there and one line here, in the order the page's menu lists them.
"""

__all__ = ["KINDS"]

KINDS = (
    "round_robin",
    "random",
    "least_loaded",
    "consistent_hash",
    "cache_aware",
    "power_of_two",
    "bounded_hash",
    "prefix_load_aware",
    "sglang",
    "vllm_router",
    "cost",
)
