"""Hardware profiles: turning tokens into seconds and bytes for one model on one GPU.

A `Preset` is public figures: a model's size and attention shape, a GPU's
dense FLOP/s and memory bandwidth, and the share of peak that prefill
reaches. `build()` turns one (with any `hardware.*` overrides) into a
`Profile`, the few constants the simulation uses, each with its formula:

    prefill_s(n)      = overhead + n × 2 × parameters / (peak FLOP/s × utilisation)
    decode_step_s(K)  = (weight bytes + K × KV bytes per token) / HBM bandwidth
    KV bytes / token  = 2 (K and V) × layers × KV heads × head size × bytes per value
    weight bytes      = parameters × bytes per value

Prefill is compute-bound; a decode step reads every weight and the KV of
every running sequence once (memory-bound), with no attention term and no
per-request overhead: the article's arithmetic, which its presets keep.

The other GPU presets (Llama, CodeLlama, Qwen) name a measured GPU instead
(`gpu`, with the model's full `shape`): their passes are priced by
`model/gpus/gpu.py` from coefficients fitted to Vidur's kernel profiles
(`model/gpus/gpufits.py`), with attention from its FLOPs and bytes and the LM
head as one more matrix product. Their `flops_per_s` is then what a long
pass sustains (8,192 tokens, attention aside), the linear estimate that
routers' backlogs and the accounting of prefill GPU-seconds use; every time
the engine spends comes from the measured passes.

The `lab` preset is the seed's figures: its prefill speed and overhead
come from `fleet.prefill_tokens_per_s` and `fleet.overhead_ms` (one unit
of work per token), and its 128 KiB of KV per token are the seed's 8,192
tokens per GB. It has no bandwidth figure, so it cannot decode.

A GB is 2**30 bytes throughout. Pure values and functions; floats only
from `+ - * /` and `math.sqrt`, which IEEE rounds the same everywhere.
"""

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple

from model.gpus.gpu import GpuFit, Measured, Shape
from model.gpus.gpufits import FITS

__all__ = ["ARTICLE", "GB", "PRESETS", "SERVING_SHARE", "Preset", "Profile", "build", "kv_room_gb", "nearest_gpu"]

GB = 2**30  # bytes; the seed's 8,192 tokens per GB are 128 KiB each
UNLIMITED_TOKENS = 2**62  # the KV of `fleet.memory_gb=none`: no run comes near it
FLOPS_PER_PARAM = 2.0  # one multiply and one add per parameter per token


class Preset(NamedTuple):
    """Public figures for one model on one GPU (`source` says where each comes from)."""

    label: str
    params: float  # model parameters
    layers: int
    kv_heads: int  # key-value heads (grouped-query attention)
    head_dim: int
    bytes_per_value: float  # weights and KV entries (2: bf16)
    tflops: float  # peak dense bf16 TFLOP/s (not the "with sparsity" figure)
    utilisation: float  # share of peak FLOP/s a prefill reaches
    hbm_tb_s: float  # HBM bandwidth, TB/s (10**12 bytes a second)
    hbm_gb: float  # memory on the card, for reference
    source: str
    gpu: str = ""  # a measured GPU (`model/gpus/gpufits.py`) pricing the passes; "": the spec-sheet arithmetic above
    shape: Shape | None = None  # the model's full shape, which the measured GPU prices (with `gpu`)


H100 = "H100 SXM: 989 TFLOPS dense bf16, 3.35 TB/s HBM3, 80 GB (NVIDIA H100 datasheet)"
H200 = "H200 SXM: 989 TFLOPS dense bf16, 4.8 TB/s HBM3e, 141 GB (NVIDIA H200 datasheet)"
A100 = "A100 SXM 80GB: 312 TFLOPS dense bf16, 2,039 GB/s HBM2e (NVIDIA A100 datasheet)"
LLAMA8B = "Llama 3.1 8B: 8.03B parameters, 32 layers, 8 KV heads of 128 (Meta's model card and config.json)"
ARTICLE14B = "the article's 14B example: 14B parameters, 40 layers, 8 KV heads of 128, 2 bytes (160 KiB a token)"
CODELLAMA13B = ("CodeLlama 13B: 13.016B parameters, 40 layers, 40 KV heads (no grouped-query attention) of 128 "
                "(Meta's model card and config.json; 800 KiB of KV a token)")
QWEN14B = "Qwen2.5-14B: 14.7B parameters, 48 layers, 8 KV heads of 128 (Qwen's model card and config.json)"
MEASURED = "passes priced by the {gpu} fitted to Vidur's kernel profiles (model/gpus/gpufits.py)"
# Full shapes (config.json): hidden, MLP, heads, KV heads, gated MLP, vocabulary.
LLAMA8B_SHAPE = Shape(4096, 14336, 32, 8, True, 128256)
CODELLAMA13B_SHAPE = Shape(5120, 13824, 40, 40, True, 32016)
QWEN14B_SHAPE = Shape(5120, 13824, 40, 8, True, 152064)
SUSTAINED_TOKENS = 8192  # a measured profile's flops_per_s: what a pass this long sustains, attention aside

ARTICLE = "article_14b_h100"  # what serving mode uses when the lab preset is chosen

PRESETS: dict[str, Preset] = {
    # The seed's figures; params, tflops and utilisation are placeholders: its speed comes from fleet.*.
    "lab": Preset("Lab (the seed's 10,000 tokens/s + 15 ms, 8,192 tokens/GB)", 1.0, 32, 8, 128, 2.0,
                  0.0, 1.0, 0.0, 0.0, "the seed's model (seeds/lab-page.txt); no decode figures"),
    ARTICLE: Preset("14B on H100 (the article's example)", 14e9, 40, 8, 128, 2.0, 989.0, 0.4, 3.35, 80.0,
                    f"{ARTICLE14B}; {H100}; 40% utilisation as in the article"),
    "article_14b_h200": Preset("14B on H200", 14e9, 40, 8, 128, 2.0, 989.0, 0.4, 4.8, 141.0,
                               f"{ARTICLE14B}; {H200}; 40% utilisation"),
    # Measured: `utilisation` is unused (0); tflops and hbm_tb_s are the datasheet's, for the roofline.
    "qwen14b_h100": Preset("Qwen2.5-14B on H100", 14.7e9, 48, 8, 128, 2.0, 989.0, 0.0, 3.35, 80.0,
                           f"{QWEN14B}; {H100}; " + MEASURED.format(gpu="H100"), "h100", QWEN14B_SHAPE),
    "llama8b_h100": Preset("Llama 3.1 8B on H100", 8.03e9, 32, 8, 128, 2.0, 989.0, 0.0, 3.35, 80.0,
                           f"{LLAMA8B}; {H100}; " + MEASURED.format(gpu="H100"), "h100", LLAMA8B_SHAPE),
    "llama8b_a100": Preset("Llama 3.1 8B on A100", 8.03e9, 32, 8, 128, 2.0, 312.0, 0.0, 2.039, 80.0,
                           f"{LLAMA8B}; {A100}; " + MEASURED.format(gpu="A100"), "a100", LLAMA8B_SHAPE),
    "codellama13b_a100": Preset("CodeLlama 13B on A100", 13.016e9, 40, 40, 128, 2.0, 312.0, 0.0, 2.039, 80.0,
                                f"{CODELLAMA13B}; {A100}; " + MEASURED.format(gpu="A100"), "a100",
                                CODELLAMA13B_SHAPE),
}

SERVING_SHARE = 0.9  # of a card's memory a serving engine takes for weights and KV (vLLM's gpu_memory_utilization)


def kv_room_gb(preset: str, share: float = SERVING_SHARE) -> float:
    """KV memory (GB, 2**30 bytes) a card leaves for the cache: share x card memory - weights.

    The engine takes `share` of the card (vLLM's default 0.9), the weights take parameters x bytes
    per value, and the rest holds KV. Activations and CUDA graphs are left out, so real engines
    leave a few GB less. CodeLlama 13B on an 80 GB A100: 72 - 24.24 = 47.76 GB, 62,594 tokens.
    """
    p = PRESETS[preset]
    return share * p.hbm_gb - p.params * p.bytes_per_value / GB



@dataclass(frozen=True, slots=True)
class Profile:
    """The constants the simulation needs, derived once by `build()`; every time and size comes from these."""

    preset: str
    flops_per_token: float  # prefill work per token: 2 × parameters (the lab: 1)
    flops_per_s: float  # sustained: peak dense FLOP/s × utilisation (the lab: fleet.prefill_tokens_per_s)
    overhead_s: float  # fixed cost of every prefill (the lab's fleet.overhead_ms; 0 for real presets)
    kv_bytes_per_token: float  # 2 × layers × KV heads × head size × bytes per value
    weight_bytes: float  # parameters × bytes per value: read once by every decode step (0: the lab)
    hbm_bytes_per_s: float  # memory bandwidth (0: no decode figures, the lab)
    peak_flops_per_s: float = 0.0  # peak dense FLOP/s, before utilisation (the roofline's flat part; the lab: its speed)
    measured: Measured | None = None  # a measured GPU's passes (model/gpus/gpu.py); None: the spec-sheet formulas

    @property
    def decodes(self) -> bool:
        """Whether this profile has the bandwidth figure a decode step needs."""
        return self.hbm_bytes_per_s > 0

    def prefill_tokens_per_s(self) -> float:
        """Compute-bound prefill speed: sustained FLOP/s / FLOPs per token."""
        return self.flops_per_s / self.flops_per_token

    def prefill_s(self, tokens: int, context: int = 0) -> float:
        """Seconds to prefill `tokens` alone: overhead + tokens × 2 × parameters / (peak × utilisation).

        Measured: one pass of `tokens` after `context` tokens already cached (their attention reads them);
        the spec-sheet formula has no attention term, so it ignores `context`.
        """
        if self.measured is not None:
            return self.measured.pass_s(((tokens, context),)) if tokens > 0 else 0.0
        return self.overhead_s + tokens * self.flops_per_token / self.flops_per_s

    def tokens_in(self, memory_gb: float) -> int:
        """Tokens of KV that `memory_gb` holds: memory_gb × 2**30 / KV bytes per token, rounded down.

        `fleet.memory_gb=none` (infinite) holds `UNLIMITED_TOKENS`: more than any run can use.
        """
        if memory_gb == math.inf:
            return UNLIMITED_TOKENS
        return int(memory_gb * GB / self.kv_bytes_per_token)

    def decode_step_s(self, kv_tokens: int, batch: int = 1) -> float:
        """One decode step reading the KV of `kv_tokens` context tokens: (weights + kv_tokens × KV bytes) / bandwidth.

        Measured: the pass of `batch` decode tokens (non-attention, LM head, a launch per layer) plus
        kv_tokens × the seconds a context token's KV takes to read.
        """
        if self.measured is not None:
            return self.measured.decode_fixed_s(batch) + kv_tokens * self.measured.kv_token_s()
        return (self.weight_bytes + kv_tokens * self.kv_bytes_per_token) / self.hbm_bytes_per_s

    def step_s(self, prefill_tokens: int, kv_tokens: int, chunks: Sequence[tuple[int, int]] = (),
               decodes: int = 0) -> float:
        """A step computing `prefill_tokens` and reading `kv_tokens` of context: the slower of the two.

        max(prefill_tokens × 2 × parameters / (peak × utilisation), decode_step_s(kv_tokens)): the
        arithmetic and the memory reads overlap, so a long prefill is compute-bound and a step of
        decodes alone is memory-bound. A decode token's own arithmetic is left out.

        Measured: one pass of the prefill `chunks` ((new tokens, tokens before them) each; one chunk of
        `prefill_tokens` if none are given) and `decodes` decode tokens, which read what is left of
        `kv_tokens` once the chunks' own context is taken out.
        """
        if self.measured is not None:
            chunks = chunks or ((prefill_tokens, 0),)
            decode_kv = kv_tokens - sum(c for _, c in chunks)
            return self.measured.pass_s(chunks, decodes, decode_kv if decode_kv > 0 else 0)
        return max(prefill_tokens * self.flops_per_token / self.flops_per_s, self.decode_step_s(kv_tokens))

    def decode_steps_s(self, steps: int, batch: int, kv_tokens: int) -> float:
        """`steps` decode steps of `batch` sequences, the first reading `kv_tokens` of context.

        Each step adds one token per sequence, so step k reads kv_tokens + batch × k:
        total = (steps × weights + KV bytes × (steps × kv_tokens + batch × steps(steps-1)/2)) / bandwidth.
        The token count is an exact integer; the float rounding is the same everywhere.
        """
        read = steps * kv_tokens + batch * (steps * (steps - 1) // 2)
        if self.measured is not None:  # the same sum: a fixed part per step, a part per context token read
            return steps * self.measured.decode_fixed_s(batch) + read * self.measured.kv_token_s()
        return (steps * self.weight_bytes + read * self.kv_bytes_per_token) / self.hbm_bytes_per_s

    def decode_steps_within(self, seconds: float, batch: int, kv_tokens: int) -> int:
        """How many whole decode steps `decode_steps_s` fits in `seconds` (steps are atomic).

        Solves batch·g/2·n² + (w + g·kv_tokens − batch·g/2)·n = seconds for n (w = weights/bandwidth,
        g = KV bytes/bandwidth), then corrects the root by evaluating `decode_steps_s` itself.
        """
        if seconds <= 0:
            return 0
        if self.measured is not None:
            w, g = self.measured.decode_fixed_s(batch), self.measured.kv_token_s()
        else:
            w = self.weight_bytes / self.hbm_bytes_per_s
            g = self.kv_bytes_per_token / self.hbm_bytes_per_s
        a, b = batch * g / 2, w + g * kv_tokens - batch * g / 2
        n = int(seconds / b) if a == 0 else int((-b + math.sqrt(b * b + 4 * a * seconds)) / (2 * a))
        while n > 0 and self.decode_steps_s(n, batch, kv_tokens) > seconds:
            n -= 1
        while self.decode_steps_s(n + 1, batch, kv_tokens) <= seconds:
            n += 1
        return n


def nearest_gpu(gemm_flops_per_s: float) -> str:
    """The fitted GPU (`FITS`) whose matrix products run nearest this many FLOP/s, by ratio."""
    return min(FITS, key=lambda g: abs(math.log(FITS[g].gemm_flops_per_s / gemm_flops_per_s)))


def kv_bytes_per_token(layers: int, kv_heads: int, head_dim: int, bytes_per_value: float) -> float:
    """KV cache bytes one token takes: 2 (K and V) × layers × KV heads × head size × bytes per value."""
    return 2 * layers * kv_heads * head_dim * bytes_per_value


def build(preset: str, overrides: dict[str, float] | None = None, *, lab_tokens_per_s: float = 10_000.0,
          lab_overhead_s: float = 0.015, fit: GpuFit | None = None) -> Profile:
    """The profile of `preset` with some of its figures replaced (`overrides` use `Preset` field names).

    The lab preset ignores overrides of its speed (it takes `lab_tokens_per_s`, `lab_overhead_s`);
    its KV shape may still be overridden. `fit` prices a measured preset's passes in place of its own GPU.
    """
    p = PRESETS[preset]._replace(**(overrides or {}))  # type: ignore[arg-type]
    kvb = kv_bytes_per_token(p.layers, p.kv_heads, p.head_dim, p.bytes_per_value)
    if preset == "lab":
        return Profile(preset, 1.0, lab_tokens_per_s, lab_overhead_s, kvb, 0.0, 0.0, lab_tokens_per_s)
    flops_per_token = FLOPS_PER_PARAM * p.params
    if p.gpu and p.shape is not None:
        shape = p.shape._replace(n_kv_head=p.kv_heads, head_dim=p.head_dim)
        measured = Measured(fit or FITS[p.gpu], shape, p.layers, p.bytes_per_value)
        sustained = flops_per_token * SUSTAINED_TOKENS / measured.non_attention_s(SUSTAINED_TOKENS)
        return Profile(preset, flops_per_token, sustained, 0.0, kvb, p.params * p.bytes_per_value,
                       p.hbm_tb_s * 1e12, p.tflops * 1e12, measured)
    return Profile(preset, flops_per_token, p.tflops * 1e12 * p.utilisation, 0.0, kvb,
                   p.params * p.bytes_per_value, p.hbm_tb_s * 1e12, p.tflops * 1e12)
