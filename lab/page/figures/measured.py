"""Measured points for the page: a few rows of the shared kernel profiles, for each preset they measure.

A measured preset (`model/gpus/hardware.py`, `gpu` and `shape`) is measured by a
shared Vidur profile of the same GPU whose model has the same shape (hidden,
MLP, heads, KV heads, gated MLP): `llama8b_a100` by the A100's Llama 3 8B
file, say. The page draws a few of that file's rows beside the model's
curves: one layer's non-attention time at a pass of `tokens` (the roofline
turns it into TFLOP/s, the prefill figure into a forward pass: layers ×
layer + the embedding).

The build embeds these points in the wheel it ships (`EMBEDDED`, a module
of plain data written into the wheel only: the profiles never enter the
repository) and the page reads them from there; in CPython (the build's
first paint, the CLI, tests) they are read from `../shared/profiles` when
the module is not there. With no profiles, every preset has none and the
figures say nothing is measured for it.
"""

import functools
from typing import Any

__all__ = ["EMBEDDED", "TOKENS", "points", "points_for", "read_points"]

EMBEDDED = "_measured_points"  # lab/page/figures/<this>.py: written into the page's wheel by the build, never into the repo
TOKENS = tuple(sorted({2**k for k in range(16)} | {3 * 2**k for k in range(15)}))  # the rows kept: 1 to 49,152


def points() -> dict[str, dict[str, Any]]:
    """Measured points by preset name: {"file", "gpu", "shape" (hidden, MLP, heads, KV heads, gated), "tokens": [...],
    "layer_ms": [...] (one layer, attention aside), "emb_ms": [...] (the embedding, once a pass)}."""
    try:
        from lab.page.figures import _measured_points  # type: ignore[attr-defined]
    except ImportError:
        return read_points()
    return _measured_points.POINTS  # type: ignore[no-any-return]


def points_for(preset: str, shape: Any = None) -> dict[str, Any] | None:
    """The measured points of `preset`, or None if no shared profile measures its model on its GPU (or if
    `shape`, the model the profile prices after any hardware.* key, is no longer the one measured)."""
    found = points().get(preset)
    if found is None or shape is None:
        return found
    same = [shape.n_embd, shape.n_expanded_embd, shape.n_head, shape.n_kv_head, shape.use_gated_mlp] == found["shape"]
    return found if same else None


@functools.lru_cache(maxsize=1)
def read_points() -> dict[str, dict[str, Any]]:
    """The points read from the shared profiles now (CPython only: it reads files); {} if there are none."""
    from lab.common.profiles import ProfileError, read_profile, shared_profiles
    from model import PRESETS

    out: dict[str, dict[str, Any]] = {}
    files = shared_profiles()
    for name, preset in PRESETS.items():
        if not preset.gpu or preset.shape is None:
            continue
        for path in files.get(preset.gpu, []):
            try:
                profile = read_profile(path)
            except ProfileError:
                continue
            s, p = profile.shape, preset.shape
            if (s.n_embd, s.n_expanded_embd, s.n_head, s.n_kv_head, s.use_gated_mlp) != \
                    (p.n_embd, p.n_expanded_embd, p.n_head, p.n_kv_head, p.use_gated_mlp):
                continue
            rows = [i for i, t in enumerate(profile.tokens) if t in TOKENS]
            out[name] = {"file": path.name, "gpu": preset.gpu, "shape": list(s[:5]), "tokens": [profile.tokens[i] for i in rows],
                         "layer_ms": [round(profile.layer_s(i) * 1000, 6) for i in rows],
                         "emb_ms": [round(profile.ops[i].get("emb", 0.0) * 1000, 6) for i in rows]}
            break
    return out


def embedded_module() -> bytes:
    """The module the build writes into the wheel as lab/_measured_points.py: the points as plain data."""
    return (f'"""Measured points embedded by the build (lab/page/measured.py); not in the repository."""\n\n'
            f"POINTS = {read_points()!r}\n").encode()
