"""The measured GPUs' coefficients (see model/gpus/gpu.py for what each one means).

Written by `bench/gpu_fit.py --write` from the shared Vidur profiles, as the
same one-line text `prefix-lab profile fit` writes for a user's own GPU
(`gpu.fit_text`), so the model reads no files and both kinds of fit are read
by one function. Attention's points are FlashAttention-2's published speeds
(`gpu.FLASH_ATTENTION_2`).
"""

from model.gpus.gpu import GpuFit, fit_of_text

__all__ = ["FITS"]

SOURCE = ("fitted by bench/gpu_fit.py to Vidur's {profiles} {gpu} MLP profiles (TP 1; Vidur's repository, "
          "data/profiling/compute/, commit 7d47513); attention: FlashAttention-2's published speeds "
          "(model/gpus/gpu.py, FLASH_ATTENTION_2)")

# (profiles fitted, the fit's text)
MEASURED = (
    (6, 'gpufit1,a100,128,1548580000000.0,226236000000000.0,7.99615e-06,4,emb:2.76018e-06:1.32829e-11,input_layernorm:2.60648e-06:5.17725e-12,attn_rope:2.81816e-06:4.22677e-12,post_attention_layernorm:2.58208e-06:5.4765e-12,mlp_act:1.05237e-06:4.9194e-12,add:1.68687e-06:3.14035e-12,@512.0:99000000000000.0,@1024.0:133000000000000.0,@2048.0:155000000000000.0,@4096.0:173000000000000.0,@8192.0:182000000000000.0,@16384.0:189000000000000.0'),
    (4, 'gpufit1,h100,128,3184620000000.0,702081000000000.0,6.65264e-06,2,emb:2.36406e-06:6.70656e-12,input_layernorm:2.9032e-06:2.4405e-12,attn_rope:2.4856e-06:2.33762e-12,post_attention_layernorm:2.42917e-06:2.99438e-12,mlp_act:8.0274e-07:2.38238e-12,add:1.44577e-06:1.62141e-12,@512.0:191000000000000.0,@1024.0:260000000000000.0,@2048.0:298000000000000.0,@4096.0:319000000000000.0,@8192.0:333000000000000.0,@16384.0:335000000000000.0'),
)

FITS: dict[str, GpuFit] = {fit.name: fit for fit in
                           (fit_of_text(text, SOURCE.format(profiles=profiles, gpu=text.split(",")[1].upper()))
                            for profiles, text in MEASURED)}
