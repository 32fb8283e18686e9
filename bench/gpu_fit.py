"""The measured GPUs: fit them to the shared Vidur profiles, and check each file with its model left out.

    .venv/bin/python bench/gpu_fit.py            the leave-one-out table (markdown), then the fits
    .venv/bin/python bench/gpu_fit.py --tp       also each file's TP 2, 4 and 8 rows against the TP 1 fit
    .venv/bin/python bench/gpu_fit.py --write    rewrite model/gpus/gpufits.py from the shared profiles

The profiles are read from `PREFIX_LAB_PROFILES`, else `../shared/profiles/vidur` beside the project. The
bound the table states: a median of at most 10% for every file, a worst of at most 25% for every model of
7B parameters or more (phi-2, 2.7B, has no size in its name: its worst is reported, not bound).
"""

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from lab.common.profiles import check, fit_gpu, leave_one_out, profiles_dir, read_profile, shared_profiles  # noqa: E402
from model import FLASH_ATTENTION_2  # noqa: E402
from model.gpus.gpu import fit_text  # noqa: E402

MEDIAN_BOUND, WORST_BOUND, BOUND_FROM_B = 0.10, 0.25, 7.0


def loo_table(files: dict[str, list[Path]]) -> tuple[list[str], bool]:
    lines = ["| GPU | model left out | rows | median error | worst error | bound |",
             "| --- | --- | ---: | ---: | ---: | --- |"]
    ok = True
    for gpu, paths in files.items():
        profiles = [read_profile(p) for p in paths]
        for row in leave_one_out(profiles, gpu, FLASH_ATTENTION_2.get(gpu, FLASH_ATTENTION_2["a100"])):
            bound_worst = row["params_b"] is not None and row["params_b"] >= BOUND_FROM_B
            met = row["median_abs_rel_err"] <= MEDIAN_BOUND and (not bound_worst or row["max_abs_rel_err"] <= WORST_BOUND)
            ok &= met
            bound = ("median <= 10%, worst <= 25%" if bound_worst else "median <= 10% (worst reported)")
            lines.append(f"| {gpu.upper()} | {row['model'].split('_', 1)[1].removesuffix('_mlp')} | {row['rows']} | "
                         f"{row['median_abs_rel_err']:.1%} | {row['max_abs_rel_err']:.1%} | "
                         f"{bound}: {'met' if met else 'NOT MET'} |")
    return lines, ok


def tp_table(files: dict[str, list[Path]]) -> list[str]:
    lines = ["| GPU | model | TP 1 | TP 2 | TP 4 | TP 8 |", "| --- | --- | --- | --- | --- | --- |"]
    for gpu, paths in files.items():
        fit = fit_gpu([read_profile(p) for p in paths], gpu, FLASH_ATTENTION_2[gpu], "tp check")
        for path in paths:
            cells = []
            for tp in (1, 2, 4, 8):
                try:
                    r = check(fit, read_profile(path, tp))
                except Exception:  # phi-2 has TP 1 rows only
                    cells.append("")
                    continue
                cells.append(f"{r['median_abs_rel_err']:.1%} / {r['max_abs_rel_err']:.1%}")
            lines.append(f"| {gpu.upper()} | {path.stem.split('_', 1)[1].removesuffix('_mlp')} | " + " | ".join(cells) + " |")
    return lines


def fits_module(files: dict[str, list[Path]]) -> str:
    """model/gpus/gpufits.py's text: each GPU's fit as the one-line text `prefix-lab profile fit` writes."""
    module = Path(ROOT / "model" / "gpus" / "gpufits.py").read_text(encoding="utf-8")
    head, tail = module.split("MEASURED = (\n")[0], module.split("\n)\n", 1)[1]
    rows = "".join(f"    ({len(paths)}, {fit_text(fit_gpu([read_profile(p) for p in paths], gpu, FLASH_ATTENTION_2[gpu], ''))!r}),\n"
                   for gpu, paths in files.items())
    return f"{head}MEASURED = (\n{rows})\n{tail}"


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--tp", action="store_true", help="also check TP 2, 4 and 8 rows against the TP 1 fit")
    p.add_argument("--write", action="store_true", help="rewrite model/gpus/gpufits.py")
    args = p.parse_args()
    files = shared_profiles()
    if not files:
        print(f"no profiles in {profiles_dir()}: put Vidur's CSVs there or name their folder in PREFIX_LAB_PROFILES",
              file=sys.stderr)
        return 2
    if args.write:
        (ROOT / "model" / "gpus" / "gpufits.py").write_text(fits_module(files), encoding="utf-8")
        print("wrote model/gpus/gpufits.py")
        return 0
    start = time.perf_counter()
    lines, ok = loo_table(files)
    print("\n".join(lines))
    print(f"\nleave-one-out: {'every bound met' if ok else 'a bound NOT met'} ({time.perf_counter() - start:.1f} s)")
    if args.tp:
        print("\nmedian / worst error of one layer at TP 2, 4 and 8 (each GPU's shapes split), against the TP 1 fit:\n")
        print("\n".join(tp_table(files)))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
