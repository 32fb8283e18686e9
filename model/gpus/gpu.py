"""A GPU as measured: one forward pass priced from coefficients fitted to published kernel timings.

Where the spec-sheet presets of `model/gpus/hardware.py` divide FLOPs by a share
of the datasheet's peak, a measured preset prices each operation of a
transformer layer by what it does and by coefficients fitted, per GPU, to
Vidur's per-operation profiles (`lab/common/profiles.py` fits them, at fit time;
`model/gpus/gpufits.py` holds the results as plain numbers). The names:

    m = tokens in the pass, k × n a weight matrix, b bytes per value, T = `tile`
    rows(m)       = m below one tile (a skinny pass), else m rounded up to whole tiles of T
    memory(GEMM)  = b × (k·n + m·(k + n)) / gemm_bytes_per_s        the weights, input and output once
    compute(GEMM) = 2 × rows(m) × k × n / gemm_flops_per_s
    GEMM seconds  = gemm_floor_s + (memory^p + compute^p)^(1/p)     p = `blend`: a smooth "slower of the two"
    elementwise   = floor + values × seconds per value              one pair per operation (norms, rotary, ...)

A layer is its four matrix products (the QKV and output projections, the
MLP's up and down projections) and its elementwise operations; the
embedding runs once per pass. Attention, which the profiles leave out, is
priced from its FLOPs and bytes (`prefill_attention_s`, `decode_kv_s`):

    a chunk of q tokens after c already in the cache: pairs = q·c + q(q+1)/2
    FLOPs  = 4 × heads × head size × pairs       (QKᵀ and PV, causal)
    bytes  = b × (2 × KV heads × head size × (c + q) + 2 × heads × head size × q)
    seconds = max(FLOPs / attention_flops_per_s(L), bytes / gemm_bytes_per_s),  L = sqrt(2 × pairs)

`attention` holds FlashAttention-2's published forward speeds against
sequence length (`model/gpus/gpufits.py` cites them); L is the length of the
square causal problem with as many pairs, and between two published lengths
the speed is interpolated linearly (held flat outside them). A decode token
reads its sequence's KV at the rate the fit reads weights. The LM head is
not in the profiles either: it is one more matrix product (rows × hidden ×
vocabulary) priced by the same GEMM curve, one row per sequence that makes
a token.

Pure values and functions (`Measured` remembers the passes it has priced, a
memo that changes no result). Floats come from `+ - * /` and `math.sqrt` only
(`blend` is 1, 2, 4 or 8, so its powers are squarings and its root square
roots), which IEEE rounds the same in CPython and Pyodide.
"""

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

__all__ = ["BLENDS", "ELEMENTWISE", "FIT_TEXT_MAX", "FLASH_ATTENTION_2", "GEMMS", "PER_PASS", "GpuFit", "Measured", "Shape",
           "attention_flops_per_s", "blend", "decode_kv_s", "elementwise_ops", "elementwise_s", "fit_of_text",
           "fit_problem", "fit_text", "gemm_ops", "gemm_s", "layer_flops", "layer_ops_s", "layer_s", "lm_head_s",
           "prefill_attention_s"]

GEMMS = ("attn_pre_proj", "attn_post_proj", "mlp_up_proj", "mlp_down_proj")
ELEMENTWISE = ("input_layernorm", "attn_rope", "post_attention_layernorm", "mlp_act", "add")
PER_PASS = "emb"  # the token embedding: once per pass, not per layer
BLENDS = (1, 2, 4, 8)  # allowed exponents of the smooth maximum: powers by squaring, roots by square roots

# FlashAttention-2's published speeds, causal mask, head size 128, bf16/fp16, in FLOP/s against sequence length
# (the Dao-AILab/flash-attention README's benchmark figures; FLOPs counted as 4 x heads x head size x pairs):
# - A100 80GB SXM4: assets/flash2_a100_fwd_bwd_benchmark.png, panel (d), forward and backward together (the
#   README's only A100 figure; forward alone is no slower, so this errs slow, most at short lengths).
# - H100 80GB SXM5: assets/flash3_fp16_fwd.png (the FlashAttention-3 section), panel (d), forward, the
#   FlashAttention-2 bars (what vLLM ran on H100 when Vidur measured; FlashAttention-3 is 1.5-1.8x faster there).
FLASH_ATTENTION_2: dict[str, tuple[tuple[float, float], ...]] = {
    "a100": ((512, 99e12), (1024, 133e12), (2048, 155e12), (4096, 173e12), (8192, 182e12), (16384, 189e12)),
    "h100": ((512, 191e12), (1024, 260e12), (2048, 298e12), (4096, 319e12), (8192, 333e12), (16384, 335e12)),
}


class Shape(NamedTuple):
    """A decoder's shape, in the columns Vidur's profiles use (`n_embd`... `use_gated_mlp`)."""

    n_embd: int  # hidden size
    n_expanded_embd: int  # MLP inner size
    n_head: int
    n_kv_head: int  # key-value heads (grouped-query attention)
    use_gated_mlp: bool  # SwiGLU: the up projection makes two matrices' worth (gate and up)
    vocab_size: int
    post_attention_norm: bool = True  # a norm before the MLP (phi-2's parallel block has none)
    head_dim: int = 0  # 0: n_embd / n_head

    @property
    def head_size(self) -> int:
        return self.head_dim or self.n_embd // self.n_head


class GpuFit(NamedTuple):
    """One GPU's fitted coefficients (seconds, bytes and FLOPs; see the module's docstring for the formulas)."""

    name: str
    tile: int  # rows of a GEMM tile: from one tile up, compute is counted in whole tiles
    gemm_bytes_per_s: float
    gemm_flops_per_s: float
    gemm_floor_s: float  # a matrix product's fixed cost (launch, tail)
    blend: int  # p of the smooth maximum, one of BLENDS
    elementwise: tuple[tuple[str, float, float], ...]  # (operation, floor s, s per value), `emb` among them
    attention: tuple[tuple[float, float], ...]  # (sequence length, attention FLOP/s), ascending lengths
    source: str  # where the coefficients and the attention speeds come from


def blend(a: float, b: float, p: int) -> float:
    """(a^p + b^p)^(1/p) for p in BLENDS: the sum at 1, tending to max(a, b) as p grows."""
    if p == 1:
        return a + b
    top = a if a > b else b
    if top <= 0.0:
        return 0.0
    x, y, q = a / top, b / top, 1  # scaled so the powers neither overflow nor vanish
    while q < p:
        x, y, q = x * x, y * y, q * 2
    s = x + y
    while q > 1:
        s, q = math.sqrt(s), q // 2
    return top * s


def gemm_s(fit: GpuFit, m: int, k: int, n: int, bytes_per_value: float = 2.0) -> float:
    """Seconds of an (m × k) by (k × n) matrix product: floor + blend(memory, compute)."""
    if m <= 0:
        return 0.0
    tile = fit.tile
    rows = m if m < tile else -(-m // tile) * tile
    memory = bytes_per_value * (k * n + m * (k + n)) / fit.gemm_bytes_per_s
    compute = 2.0 * rows * k * n / fit.gemm_flops_per_s
    return fit.gemm_floor_s + blend(memory, compute, fit.blend)


def elementwise_s(fit: GpuFit, op: str, values: int) -> float:
    """Seconds of elementwise operation `op` over `values` values: its floor + values × its seconds per value."""
    for name, floor, per_value in fit.elementwise:
        if name == op:
            return floor + values * per_value if values > 0 else 0.0
    raise KeyError(f"{fit.name} has no coefficients for {op}")


def gemm_ops(shape: Shape) -> tuple[tuple[str, int, int], ...]:
    """A layer's matrix products as (operation, k, n): each multiplies the pass's m rows by a k × n weight."""
    d = shape.head_size
    up = shape.n_expanded_embd * (2 if shape.use_gated_mlp else 1)
    return (("attn_pre_proj", shape.n_embd, (shape.n_head + 2 * shape.n_kv_head) * d),
            ("attn_post_proj", shape.n_head * d, shape.n_embd),
            ("mlp_up_proj", shape.n_embd, up),
            ("mlp_down_proj", shape.n_expanded_embd, shape.n_embd))


def elementwise_ops(shape: Shape) -> tuple[tuple[str, int], ...]:
    """A layer's elementwise operations as (operation, values per token)."""
    d = shape.head_size
    ops = [("input_layernorm", shape.n_embd), ("attn_rope", (shape.n_head + shape.n_kv_head) * d)]
    if shape.post_attention_norm:
        ops.append(("post_attention_layernorm", shape.n_embd))
    return tuple(ops + [("mlp_act", shape.n_expanded_embd), ("add", shape.n_embd)])


def layer_ops_s(fit: GpuFit, shape: Shape, tokens: int, bytes_per_value: float = 2.0) -> dict[str, float]:
    """Seconds of each non-attention operation of one layer for a pass of `tokens`."""
    out = {op: gemm_s(fit, tokens, k, n, bytes_per_value) for op, k, n in gemm_ops(shape)}
    for op, width in elementwise_ops(shape):
        out[op] = elementwise_s(fit, op, tokens * width)
    return out


def layer_s(fit: GpuFit, shape: Shape, tokens: int, bytes_per_value: float = 2.0) -> float:
    """One layer's non-attention seconds for a pass of `tokens`: the sum of its operations."""
    if tokens <= 0:
        return 0.0
    total = 0.0
    for _, k, n in gemm_ops(shape):
        total += gemm_s(fit, tokens, k, n, bytes_per_value)
    for op, width in elementwise_ops(shape):
        total += elementwise_s(fit, op, tokens * width)
    return total


def layer_flops(shape: Shape, tokens: int) -> float:
    """FLOPs of one layer's matrix products for `tokens`: 2 × tokens × (sum of k × n)."""
    return 2.0 * tokens * sum(k * n for _, k, n in gemm_ops(shape))


def attention_flops_per_s(fit: GpuFit, length: float) -> float:
    """Attention's FLOP/s at an equivalent causal sequence length, interpolated in `fit.attention`."""
    points = fit.attention
    if length <= points[0][0]:
        return points[0][1]
    for (x0, y0), (x1, y1) in zip(points, points[1:]):
        if length <= x1:
            return y0 + (y1 - y0) * (length - x0) / (x1 - x0)
    return points[-1][1]


def prefill_attention_s(fit: GpuFit, shape: Shape, q: int, c: int, bytes_per_value: float = 2.0) -> float:
    """One layer's attention for a chunk of `q` new tokens after `c` cached: max(FLOPs / speed, bytes / bandwidth)."""
    if q <= 0:
        return 0.0
    d = shape.head_size
    pairs = q * c + q * (q + 1) / 2
    compute = 4.0 * shape.n_head * d * pairs / attention_flops_per_s(fit, math.sqrt(2.0 * pairs))
    memory = bytes_per_value * (2 * shape.n_kv_head * d * (c + q) + 2 * shape.n_head * d * q) / fit.gemm_bytes_per_s
    return compute if compute > memory else memory


def decode_kv_s(fit: GpuFit, shape: Shape, bytes_per_value: float = 2.0) -> float:
    """One layer's seconds per context token a decode step reads: its K and V at the fit's weight-reading rate.

    A decode token does 4 × heads × head size FLOPs per context token against 2 × KV heads × head size ×
    bytes per value read: at most heads / KV heads (8 for the presets) FLOPs per byte, far left of any ridge.
    """
    return bytes_per_value * 2 * shape.n_kv_head * shape.head_size / fit.gemm_bytes_per_s


def lm_head_s(fit: GpuFit, shape: Shape, rows: int, bytes_per_value: float = 2.0) -> float:
    """The LM head for `rows` sequences: a rows × hidden by hidden × vocabulary product on the fitted GEMM curve."""
    return gemm_s(fit, rows, shape.n_embd, shape.vocab_size, bytes_per_value)


@dataclass(frozen=True, slots=True)
class Measured:
    """A model of `shape` and `layers` on a fitted GPU: the passes the serving engine runs, in seconds."""

    fit: GpuFit
    shape: Shape
    layers: int
    bytes_per_value: float = 2.0
    # remembered per token count (a run asks for the same few batch sizes thousands of times): a pure memo
    _passes: dict[int, float] = field(default_factory=dict, compare=False, repr=False)
    _fixed: dict[int, float] = field(default_factory=dict, compare=False, repr=False)
    _kv: float = field(default=0.0, init=False, compare=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_kv", self.layers * decode_kv_s(self.fit, self.shape, self.bytes_per_value))

    def non_attention_s(self, tokens: int) -> float:
        """The embedding and every layer's non-attention operations for a pass of `tokens` (what Vidur measures)."""
        if tokens <= 0:
            return 0.0
        seconds = self._passes.get(tokens)
        if seconds is None:
            seconds = self._passes[tokens] = (elementwise_s(self.fit, PER_PASS, tokens * self.shape.n_embd)
                                              + self.layers * layer_s(self.fit, self.shape, tokens, self.bytes_per_value))
        return seconds

    def pass_s(self, chunks: Sequence[tuple[int, int]], decodes: int = 0, decode_kv: int = 0) -> float:
        """One forward pass: prefill `chunks` of (new tokens, tokens before them) and `decodes` sequences reading
        `decode_kv` context tokens between them; the LM head makes a row for each chunk and each decode."""
        tokens = decodes + sum(q for q, _ in chunks)
        if tokens <= 0:
            return 0.0
        fit, shape, b = self.fit, self.shape, self.bytes_per_value
        attention = fit.gemm_floor_s  # one attention kernel a layer
        for q, c in chunks:
            attention += prefill_attention_s(fit, shape, q, c, b)
        return (self.non_attention_s(tokens) + self.layers * attention + decode_kv * self._kv
                + lm_head_s(fit, shape, decodes + len(chunks), b))

    def decode_fixed_s(self, batch: int) -> float:
        """The part of a decode step of `batch` sequences that does not grow with their context."""
        if batch <= 0:
            return 0.0
        seconds = self._fixed.get(batch)
        if seconds is None:
            seconds = self._fixed[batch] = (self.non_attention_s(batch) + self.layers * self.fit.gemm_floor_s
                                            + lm_head_s(self.fit, self.shape, batch, self.bytes_per_value))
        return seconds

    def kv_token_s(self) -> float:
        """Seconds a decode step spends per context token it reads, over every layer."""
        return self._kv


# -- a fit as one line of text: how a scenario (`hardware.gpu_fit`), `--set` and a URL carry a user's fit ---

FIT_TAG = "gpufit1"
FIT_TEXT_MAX = 4096  # characters; a fit of six elementwise operations and six attention points is about 450
_NAME_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-")
# What a GPU of any make could plausibly measure; outside these a fit is a typo or a unit slip, and a run
# on it would price a pass at years or at nothing.
_RANGES = {"bytes per second": (1e9, 1e16), "FLOP per second": (1e11, 1e18), "floor seconds": (0.0, 1.0),
           "seconds per value": (0.0, 1e-6), "sequence length": (1.0, 1e7)}


def fit_text(fit: GpuFit) -> str:
    """`fit` as one comma-separated line (its `source` left out); `fit_of_text` reads it back, to the bit.

    gpufit1,NAME,tile,bytes/s,FLOP/s,floor s,blend,OP:floor s:s per value,...,@length:FLOP/s,...
    """
    def num(x: float) -> str:  # one text per value, whether it came as 512 or 512.0
        return repr(float(x))

    head = [FIT_TAG, fit.name, str(fit.tile), num(fit.gemm_bytes_per_s), num(fit.gemm_flops_per_s),
            num(fit.gemm_floor_s), str(fit.blend)]
    ops = [f"{op}:{num(floor)}:{num(per_value)}" for op, floor, per_value in fit.elementwise]
    return ",".join(head + ops + [f"@{num(length)}:{num(rate)}" for length, rate in fit.attention])


@functools.lru_cache(maxsize=16)  # the scenario's own check, every run's profile and the page all read one text
def fit_of_text(text: str, source: str = "a GPU fit given as text (hardware.gpu_fit)") -> GpuFit:
    """The fit `fit_text` wrote (a pure function of its text, so remembered); ValueError saying what is wrong."""
    parts = text.strip().split(",")
    if len(text) > FIT_TEXT_MAX or parts[0] != FIT_TAG or len(parts) < 8:
        raise ValueError("not a GPU fit's text (it starts gpufit1, and prefix-lab profile fit writes it)")
    name, numbers, rest = parts[1], parts[2:7], parts[7:]
    try:
        tile, bytes_per_s, flops_per_s, floor, p = int(numbers[0]), *map(float, numbers[1:4]), int(numbers[4])
        ops, attention = [], []
        for part in rest:
            if part.startswith("@"):
                length, rate = part[1:].split(":")
                attention.append((float(length), float(rate)))
            else:
                op, op_floor, per_value = part.split(":")
                ops.append((op, float(op_floor), float(per_value)))
    except ValueError:
        raise ValueError("a GPU fit's text with a malformed number or field; make it again with "
                         "prefix-lab profile fit") from None
    fit = GpuFit(name, tile, bytes_per_s, flops_per_s, floor, p, tuple(ops), tuple(attention), source)
    problem = fit_problem(fit)
    if problem:
        raise ValueError(problem)
    return fit


def fit_problem(fit: GpuFit) -> str | None:
    """What makes `fit` unusable (a missing operation, a coefficient no GPU could have), or None."""
    if not fit.name or len(fit.name) > 40 or not set(fit.name) <= _NAME_CHARS:
        return "the fit's name must be 1-40 letters, digits, '.', '_' or '-'"
    if not 1 <= fit.tile <= 65_536 or fit.blend not in BLENDS:
        return f"the fit's tile must be 1 to 65536 rows and its blend one of {', '.join(map(str, BLENDS))}"
    names = [op for op, _, _ in fit.elementwise]
    missing = [op for op in (PER_PASS, *ELEMENTWISE) if op not in names]
    if missing or len(names) != len(set(names)) or len(names) > 32:
        return (f"the fit lacks elementwise coefficients for {', '.join(missing)}" if missing
                else "the fit names an elementwise operation twice, or more than 32")
    if not 1 <= len(fit.attention) <= 64 or any(b[0] <= a[0] for a, b in zip(fit.attention, fit.attention[1:])):
        return "the fit's attention speeds must be 1 to 64 points at increasing sequence lengths"
    checks = [("bytes per second", fit.gemm_bytes_per_s), ("FLOP per second", fit.gemm_flops_per_s),
              ("floor seconds", fit.gemm_floor_s)]
    checks += [(kind, v) for _, floor, per_value in fit.elementwise
               for kind, v in (("floor seconds", floor), ("seconds per value", per_value))]
    checks += [(kind, v) for length, rate in fit.attention
               for kind, v in (("sequence length", length), ("FLOP per second", rate))]
    for kind, value in checks:
        lo, hi = _RANGES[kind]
        if not (math.isfinite(value) and lo <= value <= hi):
            return f"the fit has {value!r} {kind}, outside what a GPU can measure ({lo:g} to {hi:g})"
    return None
