"""The profile a scenario runs on: its preset, any `hardware.*` figures replaced, and a person's GPU fit.

Apart from `hardware.py` (the presets and the arithmetic, which read no
scenario) so that the scenario's declaration can list the presets without
importing what reads a scenario.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from model.gpus.gpu import fit_of_text
from model.gpus.hardware import ARTICLE, PRESETS, Profile, build

if TYPE_CHECKING:
    from model.config import Scenario

__all__ = ["OVERRIDES", "profile_of"]


OVERRIDES = {  # scenario key (hardware.*) -> Preset field, and the factor from the key's unit
    "params_b": ("params", 1e9), "layers": ("layers", 1), "kv_heads": ("kv_heads", 1), "head_dim": ("head_dim", 1),
    "bytes_per_value": ("bytes_per_value", 1), "tflops": ("tflops", 1), "utilisation": ("utilisation", 1),
    "hbm_tb_s": ("hbm_tb_s", 1),
}


def profile_of(scenario: Scenario) -> tuple[Profile, tuple[str, ...]]:
    """The profile a scenario runs on, and notes on what was changed to get it.

    Serving mode (`Scenario.serving`) needs a bandwidth figure: with the lab preset it runs on the
    article's preset instead, and the notes say so.
    """
    hw, notes = scenario.hardware, []
    preset = hw.preset
    if scenario.serving and not PRESETS[preset].hbm_tb_s:
        preset = ARTICLE
        notes.append(f"serving mode needs real hardware figures: the lab preset has none for decode, "
                     f"so this run uses {ARTICLE} ({PRESETS[ARTICLE].label})")
    overrides = {}
    for key, (name, unit) in OVERRIDES.items():
        value = getattr(hw, key)
        if value is not None:
            overrides[name] = value * unit if unit != 1 else value
    if preset == "lab" and set(overrides) - {"layers", "kv_heads", "head_dim", "bytes_per_value"}:
        notes.append("the lab preset takes its speed from fleet.prefill_tokens_per_s and fleet.overhead_ms; "
                     "hardware.params_b, tflops, utilisation and hbm_tb_s apply to the GPU presets only")
    if PRESETS[preset].gpu and set(overrides) & {"params", "tflops", "utilisation", "hbm_tb_s"}:
        notes.append(f"{preset} is priced by a GPU fitted to measured kernels (model/gpus/gpufits.py): hardware.tflops "
                     "and hbm_tb_s move only the roofline's datasheet roof, utilisation applies to the article's "
                     "presets only, and params_b changes the weights' memory, not the speed (the model's shape does)")
    fit = fit_of_text(hw.gpu_fit) if hw.gpu_fit else None  # checked when the scenario was made
    if fit is not None and PRESETS[preset].gpu:
        notes.append(f"{PRESETS[preset].label} ({preset}) is priced by your GPU fit {fit.name} (hardware.gpu_fit) "
                     f"in place of the {PRESETS[preset].gpu.upper()} fitted to Vidur's profiles")
    elif fit is not None:
        measured = ", ".join(name for name, p in PRESETS.items() if p.gpu)
        how = ("takes its speed from fleet.prefill_tokens_per_s" if preset == "lab" else
               "prices its passes by the article's spec-sheet arithmetic")
        notes.append(f"hardware.gpu_fit is not used: {preset} {how}, not a fitted GPU; choose a measured preset "
                     f"({measured}) to run on your fit")
        fit = None
    profile = build(preset, overrides, lab_tokens_per_s=scenario.fleet.prefill_tokens_per_s,
                    lab_overhead_s=scenario.fleet.overhead_ms / 1000.0, fit=fit)
    return profile, tuple(notes)
