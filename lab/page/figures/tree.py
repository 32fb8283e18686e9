"""The radix tree of one replica at a chosen moment, drawn as an icicle.

Standard library, `model` only: this runs in the browser too.
"""

import math
from collections.abc import Mapping
from typing import Any, NamedTuple

from lab.page.figures.base import Context, Figure, fleet_key, replica_name
from lab.page.figures.fleetview import PALETTE, replica_colour
from lab.page.store import STORE
from model import Scenario, TreeSnapshot, tree_at

TREE_DEPTH = 12  # levels drawn; a deeper subtree is one block at the last level


TREE_SHARE = 0.01  # a branch under this share of the tree's tokens is merged with its small siblings


TREE_LABEL_SHARE = 0.016  # a block carries its name if at least this share of the axis per character


TREE_COLOURS = {"pinned": PALETTE[3], "hit": PALETTE[0], "cold": "#c8ccd0", "evicted": "#ffffff"}


TREE_STATES = {"pinned": "pinned by a queued or running request", "hit": "hit recently", "cold": "cold"}


TREE_WIDGETS = ("tree:replica", "tree:at")  # the tree's widgets: they set page keys, not scenario keys


def tree_key(scenario: Scenario, at: float | None) -> tuple:
    """The store's key of a run's trees at a moment (None: the run's end)."""
    return (fleet_key(scenario), at)


def tree_page(page: Mapping[str, str], controls: Mapping[str, Any]) -> dict[str, str]:
    """The page keys after the tree's widgets changed (`tree:replica` "replica 2", `tree:at` seconds)."""
    out = dict(page)
    chosen = controls.get("tree:replica")
    if isinstance(chosen, str) and chosen.rsplit(" ", 1)[-1].isdigit():
        out["tree_replica"] = chosen.rsplit(" ", 1)[-1]
    at = controls.get("tree:at")
    if isinstance(at, (int, float)) and not isinstance(at, bool) and math.isfinite(at) and at >= 0:
        out["tree_at"] = f"{round(at, 3):g}"
    return out


def tree_choice(c: Context) -> tuple[int, float | None, float]:
    """The replica and moment the page asks for (clamped to this run), and the slider's end."""
    r = c.result
    end = max(c.scenario.duration_s, r.makespan_s)
    step = r.series.bin_s
    end = math.ceil(end / step - 1e-9) * step
    replicas = max(1, c.scenario.fleet.replicas)
    text = c.page.get("tree_replica", "")
    replica = min(int(text), replicas - 1) if text.isdigit() else 0
    at: float | None = None
    try:
        at = min(float(c.page["tree_at"]), end) if "tree_at" in c.page else None
    except ValueError:
        at = None
    if at is not None and (not math.isfinite(at) or at < 0):
        at = None
    return replica, at, round(end, 6)


def tree_snapshot(c: Context) -> TreeSnapshot | None:
    """The chosen replica's tree at the chosen moment; None when the page replays a trace."""
    if "trace" in c.page:
        return None
    replica, at, _ = tree_choice(c)
    snaps = STORE.trees.remember(tree_key(c.scenario, at), lambda: tree_at(c.scenario, at))
    return snaps[replica] if replica < len(snaps) else None


def tree_name(key: Any) -> str:
    """What a node's first key stands for, in words."""
    if isinstance(key, tuple) and len(key) >= 2:
        kind = key[0]
        if kind == "sys":
            return f"system prompt {key[1]}" + (" (after the cut)" if len(key) > 2 and key[2] else "")
        if kind == "user" and len(key) > 2:
            return f"session {key[1]}, turn {key[2] + 1}"
        if kind == "answer" and len(key) > 2:
            return f"session {key[1]}, answer {key[2] + 1}"
        if kind == "dyn":
            return "dynamic text"
    text = str(key)
    return text if len(text) <= 24 else text[:23] + "…"


class _Block(NamedTuple):
    depth: int
    x0: float
    tokens: int  # the subtree's
    name: str
    state: str
    new: bool
    branches: int  # nodes it stands for


def tree_blocks(snap: TreeSnapshot) -> list[_Block]:
    """The icicle: each drawn block's level, left edge and width in tokens (its whole subtree's)."""
    nodes = snap.nodes
    below = [n.tokens for n in nodes]
    for i in range(len(nodes) - 1, -1, -1):  # parents come first: sum children into parents going back
        if nodes[i].parent >= 0:
            below[nodes[i].parent] += below[i]
    children: dict[int, list[int]] = {}
    for i, n in enumerate(nodes):
        children.setdefault(n.parent, []).append(i)
    recent = snap.at_s - snap.recent_s

    def state(i: int) -> str:
        n = nodes[i]
        return "pinned" if n.pinned else "hit" if n.last_hit_s >= recent else "cold"

    def subtree(i: int) -> list[int]:
        out, stack = [], [i]
        while stack:
            j = stack.pop()
            out.append(j)
            stack.extend(children.get(j, ()))
        return out

    def merged(ids: list[int], depth: int, x0: float, name: str) -> _Block:
        every = [j for i in ids for j in subtree(i)]
        weight: dict[str, int] = {}
        for j in every:
            weight[state(j)] = weight.get(state(j), 0) + nodes[j].tokens
        top = "pinned" if weight.get("pinned") else max(weight, key=lambda s: (weight[s], s))
        return _Block(depth, x0, sum(below[i] for i in ids), name, top,
                      all(nodes[j].new for j in every), len(every))

    blocks: list[_Block] = []
    small = TREE_SHARE * max(1, snap.total_tokens)
    stack: list[tuple[int, int, float]] = [(-1, -1, 0.0)]
    while stack:
        parent, depth, x0 = stack.pop()
        kids = sorted(children.get(parent, ()), key=lambda i: (-below[i], i))
        big = [i for i in kids if below[i] >= small]
        rest = [i for i in kids if below[i] < small]
        level = depth + 1
        for i in big:
            if level >= TREE_DEPTH - 1 and children.get(i):
                blocks.append(merged([i], level, x0, f"{tree_name(nodes[i].first_key)} and what follows"))
            else:
                n = nodes[i]
                blocks.append(_Block(level, x0, below[i], tree_name(n.first_key), state(i), n.new, 1))
                stack.append((i, level, x0))
            x0 += below[i]
        if len(rest) == 1 and not children.get(rest[0]):
            n = nodes[rest[0]]
            blocks.append(_Block(level, x0, below[rest[0]], tree_name(n.first_key), state(rest[0]), n.new, 1))
        elif rest:
            blocks.append(merged(rest, level, x0, f"{len(rest)} smaller branches"))
    return blocks


def _tree_data(c: Context) -> dict[str, dict]:
    snap = tree_snapshot(c)
    replica, at, end = tree_choice(c)
    names = [replica_name(i) for i in range(max(1, c.scenario.fleet.replicas))]
    step = c.result.series.bin_s
    widgets: dict[str, dict] = {"tree:replica": {"options": names, "value": names[replica]},
               "tree:at": {"start": 0.0, "end": end, "step": step, "value": end if at is None else at},
               "fig:tree": {"outline_line_color": replica_colour(replica)}}  # framed in its replica's colour
    cols: dict[str, list] = {k: [] for k in ("x", "y", "width", "color", "line", "name", "tokens", "state", "label")}
    gone: dict[str, list] = {"x": [], "width": [], "name": [], "tokens": []}
    if snap is None:
        return {**widgets, "src:tree": {"data": cols}, "src:tree_gone": {"data": gone},
                "src:tree_frame": {"data": {"x_end": [1], "y_start": [1.5]}},
                "xr:tree": {"start": 0, "end": 1}, "yr:tree": {"start": 1.5, "end": -1.6}}
    blocks = tree_blocks(snap)
    for b in blocks:
        cols["x"].append(round(b.x0 + b.tokens / 2, 3))
        cols["y"].append(b.depth)
        cols["width"].append(b.tokens)
        cols["color"].append(TREE_COLOURS[b.state])
        cols["line"].append(PALETTE[2] if b.new else "#ffffff")
        cols["name"].append(b.name)
        cols["tokens"].append(b.tokens)
        cols["state"].append(TREE_STATES[b.state] + ("; new" if b.new else ""))
        short = b.name.replace("system prompt", "prompt")
        cols["label"].append(short if b.tokens >= TREE_LABEL_SHARE * len(short) * max(1, snap.capacity) else "")
    x = 0
    for key, tokens in snap.evicted_by_branch:
        gone["x"].append(round(x + tokens / 2, 3))
        gone["width"].append(tokens)
        gone["name"].append(tree_name(key))
        gone["tokens"].append(tokens)
        x += tokens
    x_end, y_start = max(snap.capacity, x, snap.total_tokens, 1), max(cols["y"], default=0) + 0.6
    return {**widgets, "src:tree": {"data": cols}, "src:tree_gone": {"data": gone},
            "src:tree_frame": {"data": {"x_end": [x_end], "y_start": [y_start]}},  # the ranges, for the first paint
            "xr:tree": {"start": 0, "end": x_end}, "yr:tree": {"start": y_start, "end": -1.6}}


def _tree_caption(c: Context) -> str:
    snap = tree_snapshot(c)
    if snap is None:
        return "The tree is drawn for the lab's own traffic; a replayed trace's tree is not shown."
    if not snap.nodes:
        return (f"At {snap.at_s:,.0f} s replica {snap.replica}'s cache holds nothing"
                + (" (the cache is off)." if not snap.capacity else "."))
    top = sorted((b for b in tree_blocks(snap) if b.depth == 0), key=lambda b: -b.tokens)[:3]
    branches = sum(1 for n in snap.nodes if n.parent < 0)
    biggest = "; ".join(f"{b.name}, {b.tokens:,} tokens" for b in top)
    new = sum(n.tokens for n in snap.nodes if n.new)
    gone = (f" In the {snap.recent_s:g} s before, {new:,} tokens were cached anew and {snap.evicted_tokens:,} evicted"
            + (f", most from {tree_name(snap.evicted_by_branch[0][0])}" if snap.evicted_by_branch else "") + ".")
    return (f"At {snap.at_s:,.0f} s replica {snap.replica}'s radix tree holds {snap.total_tokens:,} of "
            f"{snap.capacity:,} tokens in {len(snap.nodes):,} nodes under {branches:,} branches; "
            f"{snap.pinned_tokens:,} are pinned by queued or running requests. The biggest branches: {biggest}.{gone} "
            "The frame is the replica's colour in the load strip and the table.")


FIGURES = (Figure("tree", "The radix tree of one replica", _tree_data, _tree_caption,
              controls=("fleet.memory_gb", "fleet.replicas", "router.kind", "traffic.session_rate")),)
