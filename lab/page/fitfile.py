"""A GPU fit as a file: the JSON `prefix-lab profile fit` writes, read back by the CLI and by the page.

Plain JSON and the model's own check of the coefficients (`model.fit_problem`), so the page's
view code can read a fit a person chose without the profile reader (lab/common/profiles.py), which
works on files.
"""

import json
from typing import Any

from model import GpuFit, fit_problem

__all__ = ["FIT_KIND", "ProfileError", "fit_from_json", "fit_to_json"]

FIT_KIND = "prefix-lab gpu fit"


class ProfileError(Exception):
    """A profile or fit file that cannot be used; the message is one line naming the file."""


def fit_to_json(fit: GpuFit, extra: dict[str, Any] | None = None) -> dict[str, Any]:
    """A fit as JSON: its coefficients by name (elementwise as {op: [floor s, s per value]})."""
    out: dict[str, Any] = {"kind": FIT_KIND, **fit._asdict()}
    out["elementwise"] = {op: [f, c] for op, f, c in fit.elementwise}
    out["attention"] = [list(pt) for pt in fit.attention]
    return out | (extra or {})


def fit_from_json(text: str, path: str) -> GpuFit:
    """The fit a `prefix-lab profile fit` JSON holds; ProfileError naming what is wrong."""
    try:
        data = json.loads(text)
    except (json.JSONDecodeError, RecursionError, ValueError) as exc:
        raise ProfileError(f"{path}: not a GPU fit (not JSON: {str(exc)[:60]}); make one with prefix-lab profile fit") \
            from None
    if not isinstance(data, dict) or data.get("kind") != FIT_KIND:
        raise ProfileError(f"{path}: not a GPU fit; make one with prefix-lab profile fit FILE.csv --gpu NAME")
    try:
        ew = data["elementwise"]
        fit = GpuFit(str(data["name"]), int(data["tile"]), float(data["gemm_bytes_per_s"]),
                     float(data["gemm_flops_per_s"]), float(data["gemm_floor_s"]), int(data["blend"]),
                     tuple((str(op), float(v[0]), float(v[1])) for op, v in ew.items()),
                     tuple((float(x), float(y)) for x, y in data["attention"]), str(data.get("source", path)))
    except (KeyError, TypeError, ValueError, AttributeError, IndexError) as exc:
        raise ProfileError(f"{path}: a GPU fit with a missing or bad field ({exc}); make it again with "
                           "prefix-lab profile fit") from None
    problem = fit_problem(fit)
    if problem:
        raise ProfileError(f"{path}: {problem}; make it again with prefix-lab profile fit")
    return fit
