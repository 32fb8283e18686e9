"""The measured GPUs' coefficients (see model/gpus/gpu.py for what each one means).

Written by `bench/gpu_fit.py --write` from the shared Vidur profiles; plain numbers, so the model reads
no files. `prefix-lab profile fit` makes the same kind of fit from a user's own profile.
"""

from model.gpus.gpu import FLASH_ATTENTION_2, GpuFit

__all__ = ["FITS"]

FITS: dict[str, GpuFit] = {
    'a100': GpuFit(
        'a100', tile=128, gemm_bytes_per_s=1548580000000.0, gemm_flops_per_s=226236000000000.0,
        gemm_floor_s=7.99615e-06, blend=4,
        elementwise=(
        ('emb', 2.76018e-06, 1.32829e-11),
        ('input_layernorm', 2.60648e-06, 5.17725e-12),
        ('attn_rope', 2.81816e-06, 4.22677e-12),
        ('post_attention_layernorm', 2.58208e-06, 5.4765e-12),
        ('mlp_act', 1.05237e-06, 4.9194e-12),
        ('add', 1.68687e-06, 3.14035e-12),
        ),
        attention=FLASH_ATTENTION_2['a100'],
        source="fitted by bench/gpu_fit.py to Vidur's 6 A100 MLP profiles (TP 1; Vidur's repository, data/profiling/compute/, commit 7d47513); attention: FlashAttention-2's published speeds (model/gpus/gpu.py, FLASH_ATTENTION_2)"),
    'h100': GpuFit(
        'h100', tile=128, gemm_bytes_per_s=3184620000000.0, gemm_flops_per_s=702081000000000.0,
        gemm_floor_s=6.65264e-06, blend=2,
        elementwise=(
        ('emb', 2.36406e-06, 6.70656e-12),
        ('input_layernorm', 2.9032e-06, 2.4405e-12),
        ('attn_rope', 2.4856e-06, 2.33762e-12),
        ('post_attention_layernorm', 2.42917e-06, 2.99438e-12),
        ('mlp_act', 8.0274e-07, 2.38238e-12),
        ('add', 1.44577e-06, 1.62141e-12),
        ),
        attention=FLASH_ATTENTION_2['h100'],
        source="fitted by bench/gpu_fit.py to Vidur's 4 H100 MLP profiles (TP 1; Vidur's repository, data/profiling/compute/, commit 7d47513); attention: FlashAttention-2's published speeds (model/gpus/gpu.py, FLASH_ATTENTION_2)"),
}
