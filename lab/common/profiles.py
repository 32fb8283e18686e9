"""Vidur's kernel profiles: read them, fit a GPU to them, and check a fit against a file it may never have seen.

A profile is a CSV from Vidur's `data/profiling/compute/<gpu>/<model>/mlp.csv`
(the shared copies are in `../shared/profiles/vidur/`, or the folder
`PREFIX_LAB_PROFILES` names). Each row is one forward pass of one layer's
non-attention operations at `num_tokens` tokens and
`num_tensor_parallel_workers` GPUs, each operation's times in milliseconds
(`time_stats.<op>.median` is the one read here), and the model's shape in
its own columns. `read_profile` keeps the rows of one tensor-parallel
degree (1 unless asked), averages rows that repeat a `num_tokens`, and
counts an operation the file has no column for as absent (phi-2 has no
`post_attention_layernorm`). A layer's time is the sum of its operations'
medians except `emb`, which runs once per pass.

`fit_gpu` fits `model.gpus.gpu.GpuFit` to some profiles of one GPU:

- each elementwise operation (and `emb`) by least squares on relative
  error, floor + values × seconds per value, a line with a closed form
  (a norm before the MLP that no file measures takes the first norm's);
- the matrix products' bandwidth, FLOP/s and floor by Gauss-Newton with
  Levenberg-Marquardt damping on log(predicted / measured) over all four
  products of every row, for each tile (64, 128, 256) and blend (2, 4),
  keeping the pair whose fit leaves the smallest sum of squares.

`check` predicts one layer's time at every `num_tokens` of a file from its
shape alone and sets it beside the measured one; `leave_one_out` refits
without each file and checks that file. Bad files raise `ProfileError`
with one line naming the file and what is wrong.
"""

import csv
import io
import json
import math
import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lab.page.fitfile import ProfileError, fit_from_json, fit_to_json
from model import ELEMENTWISE, GEMMS, PER_PASS, GpuFit, Shape, elementwise_ops, gemm_ops, layer_s

__all__ = ["PROFILES_ENV", "ProfileError", "KernelProfile", "check", "fit_from_json", "fit_gpu", "fit_to_json",
           "leave_one_out", "params_b", "profiles_dir", "read_profile", "shared_profiles"]

PROFILES_ENV = "PREFIX_LAB_PROFILES"
MAX_BYTES = 64 << 20  # Vidur's largest shared file is 1.5 MB
SHAPE_COLUMNS = ("n_head", "n_kv_head", "n_embd", "n_expanded_embd", "vocab_size", "use_gated_mlp")
REQUIRED_OPS = (PER_PASS,) + GEMMS + tuple(op for op in ELEMENTWISE if op != "post_attention_layernorm")
TILES = (64, 128, 256)
FIT_BLENDS = (2, 4)


@dataclass(frozen=True, slots=True)
class KernelProfile:
    """One file's rows at one tensor-parallel degree: per `num_tokens`, each operation's median seconds."""

    path: str
    shape: Shape  # the model's shape at this degree (heads and MLP split `tp` ways, as each GPU runs them)
    tp: int
    tokens: tuple[int, ...]  # ascending
    ops: tuple[dict[str, float], ...]  # [row]: operation -> seconds (one layer; `emb` once per pass)

    @property
    def name(self) -> str:
        return Path(self.path).stem

    def layer_s(self, row: int) -> float:
        """Measured seconds of one layer's non-attention operations in `row` (every operation but `emb`)."""
        return sum(s for op, s in self.ops[row].items() if op != PER_PASS)


def profiles_dir() -> Path:
    """Where the shared profiles are: `PREFIX_LAB_PROFILES`, else `../shared/profiles/vidur` beside the project."""
    named = os.environ.get(PROFILES_ENV)
    return Path(named) if named else Path(__file__).resolve().parents[3] / "shared" / "profiles" / "vidur"


def shared_profiles(folder: Path | None = None) -> dict[str, list[Path]]:
    """The shared CSVs by GPU (the file name's first word: `a100`, `h100`); empty if the folder is not there."""
    folder = profiles_dir() if folder is None else folder
    out: dict[str, list[Path]] = {}
    if folder.is_dir():
        for path in sorted(folder.glob("*_mlp.csv")):
            out.setdefault(path.name.split("_", 1)[0].lower(), []).append(path)
    return out


def params_b(name: str) -> float | None:
    """Billions of parameters a profile's file name states (`Llama-2-7b` -> 7), None if it states none."""
    sizes = re.findall(r"(?<![0-9.])(\d+(?:\.\d+)?)[bB](?![a-zA-Z])", name)
    return float(sizes[-1]) if sizes else None


def _number(path: str, line: int, column: str, text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise ProfileError(f"{path} line {line}: {column} is {text[:40]!r}, not a number") from None
    if not math.isfinite(value) or value < 0:
        raise ProfileError(f"{path} line {line}: {column} is {text[:40]!r}; a time or size is a finite number >= 0")
    return value


def _whole(path: str, line: int, column: str, text: str) -> int:
    value = _number(path, line, column, text)
    if not value.is_integer() or value < 1:
        raise ProfileError(f"{path} line {line}: {column} is {text[:40]!r}, not a whole number of at least 1")
    return int(value)


def read_profile(path: str | Path, tp: int = 1) -> KernelProfile:
    """The rows of `path` at `tp` GPUs; ProfileError (one line) if it is not a readable Vidur MLP profile."""
    path = str(path)
    try:
        with open(path, "rb") as f:
            raw = f.read(MAX_BYTES + 1)
    except (OSError, ValueError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise ProfileError(f"cannot read profile {path}: {reason}") from None
    if len(raw) > MAX_BYTES:
        raise ProfileError(f"{path}: over {MAX_BYTES >> 20} MiB; a Vidur MLP profile is a few MB at most")
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ProfileError(f"{path}: not UTF-8 text (byte {exc.start}); a profile is a CSV file") from None
    try:
        reader = csv.reader(io.StringIO(text, newline=""))
        header = next(reader, None)
        rows = list(reader)
    except csv.Error as exc:
        raise ProfileError(f"{path}: not a CSV file ({exc})") from None
    if not header:
        raise ProfileError(f"{path}: empty; a Vidur MLP profile starts with a header of time_stats.* columns")
    index = {name.strip(): i for i, name in enumerate(header)}
    wanted = [f"time_stats.{op}.median" for op in REQUIRED_OPS] + list(SHAPE_COLUMNS) + \
        ["num_tokens", "num_tensor_parallel_workers"]
    missing = [name for name in wanted if name not in index]
    if missing:
        raise ProfileError(f"{path}: not a Vidur MLP profile (no column {missing[0]}); use a file from Vidur's "
                           "data/profiling/compute/<gpu>/<model>/mlp.csv")
    ops = [op for op in (PER_PASS,) + GEMMS + ELEMENTWISE if f"time_stats.{op}.median" in index]
    by_tokens: dict[int, list[dict[str, float]]] = {}
    shape: tuple[str, ...] | None = None
    for line, row in enumerate(rows, start=2):
        if not row or all(not cell.strip() for cell in row):
            continue
        if len(row) != len(header):
            raise ProfileError(f"{path} line {line}: {len(row)} fields, the header has {len(header)}")
        if _whole(path, line, "num_tensor_parallel_workers", row[index["num_tensor_parallel_workers"]]) != tp:
            continue
        this = tuple(row[index[c]].strip() for c in SHAPE_COLUMNS)
        if shape is None:
            shape = this
        elif this != shape:
            raise ProfileError(f"{path} line {line}: the model's shape changes ({', '.join(SHAPE_COLUMNS)}); "
                               "a profile holds one model")
        tokens = _whole(path, line, "num_tokens", row[index["num_tokens"]])
        by_tokens.setdefault(tokens, []).append(
            {op: _number(path, line, f"time_stats.{op}.median", row[index[f"time_stats.{op}.median"]]) / 1000.0
             for op in ops})
    if shape is None:
        raise ProfileError(f"{path}: no rows with num_tensor_parallel_workers={tp}")
    sizes = [_whole(path, 2, c, v) for c, v in zip(SHAPE_COLUMNS[:5], shape[:5])]
    gated = shape[5].lower()
    if gated not in ("true", "false"):
        raise ProfileError(f"{path}: use_gated_mlp is {shape[5][:20]!r}; use True or False")
    n_head, n_kv, n_embd, n_expanded, vocab = sizes
    if n_embd % n_head or n_head % n_kv or n_head % tp or n_kv % tp and tp % n_kv or n_expanded % tp:
        raise ProfileError(f"{path}: n_embd {n_embd}, n_head {n_head}, n_kv_head {n_kv}, n_expanded_embd "
                           f"{n_expanded} do not split into heads (or over {tp} GPUs)")
    split = Shape(n_embd, n_expanded // tp, n_head // tp, max(1, n_kv // tp), gated == "true", vocab,
                  "post_attention_layernorm" in ops, n_embd // n_head)
    counts = tuple(sorted(by_tokens))
    averaged = tuple({op: sum(r[op] for r in by_tokens[t]) / len(by_tokens[t]) for op in ops} for t in counts)
    return KernelProfile(path, split, tp, counts, averaged)


# -- the fit -------------------------------------------------------------------------------

def _line_fit(points: Iterable[tuple[float, float]]) -> tuple[float, float]:
    """(floor, slope) >= 0 minimising the sum of ((floor + slope × x) / t - 1)² over (x, t)."""
    suu = suv = svv = su = sv = 0.0
    for x, t in points:
        u, v = 1.0 / t, x / t
        suu, suv, svv, su, sv = suu + u * u, suv + u * v, svv + v * v, su + u, sv + v
    det = suu * svv - suv * suv
    floor, slope = ((su * svv - sv * suv) / det, (sv * suu - su * suv) / det) if det > 0 else (0.0, sv / svv)
    if floor < 0:
        floor, slope = 0.0, sv / svv
    if slope < 0:
        floor, slope = su / suu, 0.0
    return floor, slope


def _elementwise(profiles: Sequence[KernelProfile]) -> tuple[tuple[str, float, float], ...]:
    out: list[tuple[str, float, float]] = []
    for op in (PER_PASS,) + ELEMENTWISE:
        points = []
        for p in profiles:
            width = dict(_widths(p.shape)).get(op)
            if width is None:
                continue
            points += [(t * width, ops[op]) for t, ops in zip(p.tokens, p.ops) if op in ops and ops[op] > 0]
        if not points and op == "post_attention_layernorm":  # only parallel blocks measured (phi-2): a norm
            out.append((op, *next((f, c) for name, f, c in out if name == "input_layernorm")))  # like the first
            continue
        floor, per_value = _line_fit(points)
        out.append((op, floor, per_value))
    return tuple(out)


def _widths(shape: Shape) -> tuple[tuple[str, int], ...]:
    return ((PER_PASS, shape.n_embd),) + elementwise_ops(shape)


def _gemm_rows(profiles: Sequence[KernelProfile]) -> list[tuple[int, int, int, float]]:
    """(m, k, n, seconds) of every matrix product of every row."""
    rows = []
    for p in profiles:
        shapes = gemm_ops(p.shape)
        for t, ops in zip(p.tokens, p.ops):
            rows += [(t, k, n, ops[op]) for op, k, n in shapes if ops.get(op, 0.0) > 0]
    return rows


def _gemm_fit(rows: list[tuple[int, int, int, float]], tile: int, p: int) -> tuple[float, float, float, float]:
    """(bytes/s, FLOP/s, floor s, sum of squares) for one tile and blend, by damped Gauss-Newton in logs."""
    bytes_ = [2.0 * (k * n + m * (k + n)) for m, k, n, _ in rows]
    flops = [2.0 * (m if m < tile else -(-m // tile) * tile) * k * n for m, k, n, _ in rows]
    logs = [math.log(t) for *_, t in rows]
    # start: the fastest reading of weights and the fastest arithmetic any row shows, a 5 us floor
    theta = [math.log(min(t / b for b, (*_, t) in zip(bytes_, rows))),
             math.log(min(t / f for f, (*_, t) in zip(flops, rows))), math.log(5e-6)]

    def residuals(th: list[float]) -> tuple[float, list[tuple[float, float, float, float]]]:
        a, b, f = math.exp(th[0]), math.exp(th[1]), math.exp(th[2])
        sse, out = 0.0, []
        for by, fl, lt in zip(bytes_, flops, logs):
            x, y = a * by, b * fl
            s = (x ** p + y ** p) ** (1.0 / p)
            pred = f + s
            r = math.log(pred) - lt
            sse += r * r
            out.append((r, x * (x / s) ** (p - 1) / pred, y * (y / s) ** (p - 1) / pred, f / pred))
        return sse, out

    sse, res = residuals(theta)
    damping = 1e-3
    for _ in range(200):
        jtj = [[0.0] * 3 for _ in range(3)]
        jtr = [0.0] * 3
        for r, *j in res:
            for i in range(3):
                jtr[i] += j[i] * r
                for k in range(3):
                    jtj[i][k] += j[i] * j[k]
        while True:
            m = [[jtj[i][k] * (1 + damping if i == k else 1) for k in range(3)] + [-jtr[i]] for i in range(3)]
            step = _solve3(m)
            trial = [theta[i] + step[i] for i in range(3)]
            new_sse, new_res = residuals(trial)
            if new_sse < sse:
                break
            damping *= 10
            if damping > 1e12:
                return math.exp(-theta[0]), math.exp(-theta[1]), math.exp(theta[2]), sse
        done = sse - new_sse < 1e-12 * sse
        theta, sse, res, damping = trial, new_sse, new_res, max(damping / 10, 1e-9)
        if done:
            break
    return math.exp(-theta[0]), math.exp(-theta[1]), math.exp(theta[2]), sse


def _solve3(m: list[list[float]]) -> list[float]:
    """Solve a 3 × 3 system given as an augmented matrix (Gaussian elimination, partial pivoting)."""
    for c in range(3):
        pivot = max(range(c, 3), key=lambda r: abs(m[r][c]))
        m[c], m[pivot] = m[pivot], m[c]
        for r in range(c + 1, 3):
            q = m[r][c] / m[c][c]
            for k in range(c, 4):
                m[r][k] -= q * m[c][k]
    x = [0.0] * 3
    for r in (2, 1, 0):
        x[r] = (m[r][3] - sum(m[r][k] * x[k] for k in range(r + 1, 3))) / m[r][r]
    return x


def fit_gpu(profiles: Sequence[KernelProfile], name: str, attention: tuple[tuple[float, float], ...], source: str,
            tiles: Sequence[int] = TILES, blends: Sequence[int] = FIT_BLENDS) -> GpuFit:
    """Fit one GPU's coefficients to `profiles` (all of one GPU, one tensor-parallel degree)."""
    if not profiles:
        raise ProfileError("no profiles to fit")
    rows = _gemm_rows(profiles)
    best: tuple[float, int, int, tuple[float, float, float]] | None = None
    for tile in tiles:
        for p in blends:
            bw, fl, floor, sse = _gemm_fit(rows, tile, p)
            if best is None or sse < best[0]:
                best = (sse, tile, p, (bw, fl, floor))
    assert best is not None
    _, tile, p, (bw, fl, floor) = best
    return GpuFit(name, tile, _sig(bw), _sig(fl), _sig(floor), p,
                  tuple((op, _sig(f), _sig(c)) for op, f, c in _elementwise(profiles)), attention, source)


def _sig(x: float) -> float:
    """Six significant digits: what a committed coefficient keeps."""
    return float(f"{x:.6g}")


# -- checking a fit ------------------------------------------------------------------------

def check(fit: GpuFit, profile: KernelProfile) -> dict[str, Any]:
    """Measured against predicted for one layer at each `num_tokens` (the prediction reads only the shape).

    `{"rows": [{"num_tokens", "measured_ms", "predicted_ms", "rel_err"}], "median_abs_rel_err",
    "max_abs_rel_err"}`; rel_err = predicted / measured - 1.
    """
    rows, errs = [], []
    for i, tokens in enumerate(profile.tokens):
        measured = profile.layer_s(i)
        predicted = layer_s(fit, profile.shape, tokens)
        err = predicted / measured - 1 if measured > 0 else math.inf
        errs.append(abs(err))
        rows.append({"num_tokens": tokens, "measured_ms": round(measured * 1000, 6),
                     "predicted_ms": round(predicted * 1000, 6), "rel_err": round(err, 6)})
    return {"rows": rows, "median_abs_rel_err": round(_median(errs), 6), "max_abs_rel_err": round(max(errs), 6)}


def _median(values: list[float]) -> float:
    s = sorted(values)
    mid = len(s) // 2
    return s[mid] if len(s) % 2 else (s[mid - 1] + s[mid]) / 2


def leave_one_out(profiles: Sequence[KernelProfile], name: str, attention: tuple[tuple[float, float], ...],
                  **kwargs: Any) -> list[dict[str, Any]]:
    """For each profile: fit on the others, check on it. One row per file: model, params_b, median, worst."""
    out = []
    for i, held in enumerate(profiles):
        fit = fit_gpu([p for j, p in enumerate(profiles) if j != i], name, attention, "leave-one-out", **kwargs)
        result = check(fit, held)
        out.append({"gpu": name, "model": held.name, "params_b": params_b(held.name), "rows": len(held.tokens),
                    "median_abs_rel_err": result["median_abs_rel_err"], "max_abs_rel_err": result["max_abs_rel_err"],
                    "tile": fit.tile, "blend": fit.blend})
    return out


# -- fits as JSON ------------------------------------------------------------------------------

FIT_KEYS = ("name", "tile", "gemm_bytes_per_s", "gemm_flops_per_s", "gemm_floor_s", "blend", "elementwise",
            "attention", "source")


# -- the command line: `prefix-lab profile check` and `prefix-lab profile fit` ------------------------------

NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,39}")


def attention_for(name: str, gemm_flops_per_s: float) -> tuple[tuple[str, float], tuple[tuple[float, float], ...]]:
    """FlashAttention-2's published speeds for GPU `name`: its own if published (a100, h100), else those of
    the published GPU closest in fitted GEMM FLOP/s, scaled by the ratio of the two. ((from, scale), curve)."""
    from model import FITS, FLASH_ATTENTION_2, nearest_gpu

    key = name.lower()
    if key in FLASH_ATTENTION_2:
        return (key, 1.0), FLASH_ATTENTION_2[key]
    like = nearest_gpu(gemm_flops_per_s)
    scale = gemm_flops_per_s / FITS[like].gemm_flops_per_s
    return (like, scale), tuple((length, _sig(rate * scale)) for length, rate in FLASH_ATTENTION_2[like])


def load_fit(gpu: str) -> GpuFit:
    """A built-in fit by name (a100, h100), or the fit a `profile fit` JSON file holds."""
    from model import FITS

    if gpu.lower() in FITS:
        return FITS[gpu.lower()]
    if not gpu.lower().endswith(".json"):
        raise ProfileError(f"--gpu {gpu}: no such GPU; use {' or '.join(FITS)}, or a fit file made by "
                           "prefix-lab profile fit (FILE.json)")
    try:
        with open(gpu, "rb") as f:
            raw = f.read(1 << 20)
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise ProfileError(f"{gpu}: not UTF-8 text; a GPU fit is the JSON prefix-lab profile fit writes") from None
    except (OSError, ValueError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise ProfileError(f"cannot read GPU fit {gpu}: {reason}") from None
    return fit_from_json(text, gpu)


def check_output(path: str, gpu: str, as_json: bool) -> list[str]:
    """`prefix-lab profile check`: the file's TP 1 rows, measured against what the fit predicts from the shape."""
    fit = load_fit(gpu)
    profile = read_profile(path)
    result = check(fit, profile)
    if as_json:
        return [json.dumps({"file": path, "gpu": fit.name, "shape": profile.shape._asdict(), **result}, indent=1)]
    s = profile.shape
    worst = max(result["rows"], key=lambda r: abs(r["rel_err"]))
    lines = [f"{path}: n_embd {s.n_embd}, n_expanded_embd {s.n_expanded_embd}, n_head {s.n_head}, n_kv_head "
             f"{s.n_kv_head}, gated MLP {'yes' if s.use_gated_mlp else 'no'}; {len(profile.tokens)} num_tokens at TP 1, "
             f"predicted by the {fit.name} fit from the shape alone",
             f"{'num_tokens':>10}  {'measured ms':>12}  {'predicted ms':>12}  {'error':>7}"]
    lines += [f"{r['num_tokens']:>10,}  {r['measured_ms']:>12.4f}  {r['predicted_ms']:>12.4f}  {r['rel_err']:>+7.1%}"
              for r in result["rows"]]
    lines.append(f"one layer, attention aside: median error {result['median_abs_rel_err']:.1%}, worst "
                 f"{result['max_abs_rel_err']:.1%} (at {worst['num_tokens']:,} tokens)")
    return lines


def fit_output(paths: list[str], name: str, out: str | None) -> list[str]:
    """`prefix-lab profile fit`: a GPU fit from profiles of one GPU, as JSON (to `out`, or the lines)."""
    if not NAME.fullmatch(name):
        raise ProfileError(f"--gpu {name[:40]!r}: name the GPU with letters, digits, '.', '_' or '-' (at most 40)")
    profiles = [read_profile(p) for p in paths]
    fit = fit_gpu(profiles, name, (), "")
    (like, scale), attention = attention_for(name, fit.gemm_flops_per_s)
    source = (f"fitted by prefix-lab profile fit to {', '.join(Path(p).name for p in paths)} (TP 1); attention: "
              f"FlashAttention-2's published {like.upper()} speeds" + (f" x {scale:.3g}" if scale != 1 else ""))
    fit = fit._replace(attention=attention, source=source)
    checks = {p.name: {k: v for k, v in check(fit, p).items() if k != "rows"} for p in profiles}
    text = json.dumps(fit_to_json(fit, {"checked": checks}), indent=1)
    if out is None:
        return [text]
    try:
        Path(out).write_text(text + "\n", encoding="utf-8")
    except OSError as exc:
        raise ProfileError(f"cannot write {out}: {exc.strerror or exc}") from None
    lines = [f"wrote {out}: the {name} fit from {len(paths)} profile(s)",
             f"matrix products: {fit.gemm_bytes_per_s / 1e12:.3g} TB/s, {fit.gemm_flops_per_s / 1e12:.3g} TFLOP/s, "
             f"floor {fit.gemm_floor_s * 1e6:.2f} us, tiles of {fit.tile} rows, blend {fit.blend}"]
    lines += [f"  {n}: median error {c['median_abs_rel_err']:.1%}, worst {c['max_abs_rel_err']:.1%}"
              for n, c in checks.items()]
    return lines + [f"check another file against it: prefix-lab profile check FILE.csv --gpu {out}",
                    f"run the lab on it: prefix-lab run --set hardware.preset=llama8b_a100 --set fleet.decode=true "
                    f"--gpu-fit {out} (any measured preset; the page's \"Your own GPU\" reads the file too)"]


def add_profile_verb(verbs: Any) -> Any:
    """`prefix-lab profile check|fit`; returns the parser (its func is set by the CLI)."""
    p = verbs.add_parser("profile", help="measured GPUs: check a Vidur kernel profile against a fit, or fit one")
    sub = p.add_subparsers(dest="profile_verb", required=True, parser_class=type(p))
    c = sub.add_parser("check", help="predict one layer's time at every num_tokens of a Vidur MLP profile "
                                     "from its model shape and a GPU fit, beside the measured time")
    c.add_argument("file", metavar="FILE.csv", help="a Vidur MLP profile (data/profiling/compute/<gpu>/<model>/mlp.csv)")
    c.add_argument("--gpu", required=True, metavar="a100|h100|FIT.json", help="the fit: a100, h100, or a "
                   "prefix-lab profile fit file")
    c.add_argument("--json", action="store_true", help="print {rows, median_abs_rel_err, max_abs_rel_err} as JSON")
    f = sub.add_parser("fit", help="fit a GPU's coefficients to Vidur MLP profiles measured on it")
    f.add_argument("files", nargs="+", metavar="FILE.csv", help="one or more Vidur MLP profiles of one GPU")
    f.add_argument("--gpu", required=True, metavar="NAME", help="the GPU's name (a100 or h100 take FlashAttention-2's "
                   "published speeds for it; another name, those of the closer one, scaled)")
    f.add_argument("--out", metavar="FIT.json", help="write the fit here and print a summary (default: print the JSON)")
    return p


def profile_output(args: Any) -> list[str]:
    """The lines `prefix-lab profile ...` prints; ProfileError for bad input."""
    if args.profile_verb == "check":
        return check_output(args.file, args.gpu, args.json)
    return fit_output(args.files, args.gpu, args.out)
