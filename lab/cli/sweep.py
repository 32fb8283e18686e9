"""Sweeps: every combination of a grid of settings, run in parallel, then tabled, saved and plotted.

    prefix-lab sweep --grid fleet.replicas=2:16 --grid router.kind=cache_aware,round_robin \\
                     [--traffic FILE] [--target ttft_p99_ms<=500] [--json-out FILE] [--plot FILE]

A grid value is a comma-separated list of values and ranges: `2:16` (step 1,
ends included), `0.5:4:0.5`, `cache_aware,round_robin`, `1,2,4:8`. Every
point is the base scenario (the defaults, a scenario file, `--set`) with one
value of each grid key; all of them are checked before any runs. With
`--traffic FILE` each point replays that trace instead of synthetic chat.

Points run in worker processes, one per core (`--workers`), or on a Dask
cluster (`--scheduler ADDRESS`, a running `dask.distributed` scheduler whose
workers have prefix-lab installed; the trace is sent to them, so they need
no shared disk). The model is deterministic, so both give the same rows.

The cheapest point meeting every `--target` is the one with the fewest
replicas, then the least memory per replica, then the fewest prefill
GPU-seconds. numpy, Bokeh and Dask are imported only when used.
"""

import argparse
import itertools
import json
import math
import os
import re
import sys
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lab.common.traces import (
    CHUNK_BYTES,
    CommandError,
    add_trace_options,
    open_trace,
    positive_int,
    replay_keys_only,
    trace_problem,
)
from model import (
    BLOCK_TOKENS,
    Result,
    Scenario,
    ScenarioError,
    TraceError,
    TraceInfo,
    read_trace,
    replay_scenario,
    scan_trace,
    simulate,
)

__all__ = ["FIGURES", "Target", "Traffic", "add_sweep_verb", "cheapest", "parse_grid", "parse_target", "run_points",
           "sweep_output"]

MAX_POINTS = 10_000
FIGURES = ("requests", "hit_rate", "ttft_p50_ms", "ttft_p95_ms", "ttft_p99_ms", "ttft_mean_ms", "throughput_rps",
           "makespan_s", "prefill_gpu_s", "recompute_gpu_s")  # what a row reports (and a target may test)
COST = ("replicas", "memory_gb", "prefill_gpu_s")  # cheapest first on each, in this order


@dataclass(frozen=True, slots=True)
class Target:
    """A figure that must be at most or at least a value, as `ttft_p99_ms<=500`."""

    figure: str
    op: str  # "<=" or ">="
    value: float

    def holds(self, row: dict[str, Any]) -> bool:
        v = row[self.figure]
        return v <= self.value if self.op == "<=" else v >= self.value

    def text(self) -> str:
        return f"{self.figure}{self.op}{self.value:g}"


@dataclass(frozen=True, slots=True)
class Traffic:
    """A trace to replay at every point: where it is, how to read it, and what checking it found."""

    path: str
    info: TraceInfo  # from one checking pass in the client: each point reads the trace once more
    block_tokens: int = BLOCK_TOKENS
    speedup: float = 1.0


# -- parsing -------------------------------------------------------------------

def parse_grid(items: Sequence[str]) -> dict[str, list[str]]:
    """`KEY=VALUES` items as {key: [value text, ...]}, ranges expanded; CommandError if malformed."""
    grid: dict[str, list[str]] = {}
    for item in items:
        key, eq, values = item.partition("=")
        key = key.strip()
        if not eq or not key or not values.strip():
            raise CommandError(f"--grid {item!r}: write KEY=VALUES, for example --grid fleet.replicas=2:16")
        if key in grid:
            raise CommandError(f"--grid {key}: given twice; list all its values in one --grid")
        texts: list[str] = []
        for part in (p.strip() for p in values.split(",")):
            if not part:
                raise CommandError(f"--grid {item!r}: an empty value between commas")
            texts += _expand(key, part) if ":" in part else [part]
        grid[key] = list(dict.fromkeys(texts))  # a value given twice runs once
    return grid


def _expand(key: str, part: str) -> list[str]:
    """`a:b` or `a:b:step` as the values from a to b inclusive."""
    bits = part.split(":")
    try:
        numbers = [float(b) for b in bits]
    except ValueError:
        raise CommandError(f"--grid {key}={part}: a range is START:END or START:END:STEP, in numbers") from None
    if len(numbers) not in (2, 3) or not all(math.isfinite(n) for n in numbers):
        raise CommandError(f"--grid {key}={part}: a range is START:END or START:END:STEP")
    start, end = numbers[0], numbers[1]
    step = numbers[2] if len(numbers) == 3 else 1.0
    if step <= 0 or end < start:
        raise CommandError(f"--grid {key}={part}: a range needs START <= END and a STEP above 0")
    count = int(math.floor((end - start) / step + 1e-9)) + 1
    if count > MAX_POINTS:
        raise CommandError(f"--grid {key}={part}: {count:,} values; a sweep runs at most {MAX_POINTS:,} points")
    values = [round(start + i * step, 9) for i in range(count)]
    return [str(int(v)) if v.is_integer() else repr(v) for v in values]


_TARGET = re.compile(r"^\s*([a-z0-9_]+)\s*(<=|>=)\s*([-+0-9.eE]+)\s*$")


def parse_target(text: str) -> Target:
    """`figure<=value` or `figure>=value`; CommandError naming what is allowed."""
    m = _TARGET.match(text)
    if not m:
        raise CommandError(f"--target {text!r}: write FIGURE<=VALUE or FIGURE>=VALUE, for example ttft_p99_ms<=500")
    figure, op, value = m.groups()
    if figure not in FIGURES:
        raise CommandError(f"--target {figure}: not a figure; use one of {', '.join(FIGURES)}")
    try:
        number = float(value)
    except ValueError:
        raise CommandError(f"--target {text!r}: {value!r} is not a number") from None
    return Target(figure, op, number)


def points(base: Scenario, grid: dict[str, list[str]]) -> list[Scenario]:
    """Every combination of the grid's values on `base`, the last key varying fastest."""
    total = math.prod(len(v) for v in grid.values())
    if total > MAX_POINTS:
        raise CommandError(f"--grid: {total:,} combinations; a sweep runs at most {MAX_POINTS:,}")
    out = []
    for combo in itertools.product(*grid.values()):
        values = dict(zip(grid, combo))
        try:
            out.append(base.with_text(values))
        except ScenarioError as exc:
            raise CommandError(f"--grid: {exc}") from None
    return out


# -- running -------------------------------------------------------------------

def run_point(scenario: dict[str, Any], traffic: Traffic | None = None, trace: bytes | None = None) -> dict[str, Any]:
    """One point's row: its fleet's size and what it measured. Runs in a worker process or on a Dask worker."""
    s = Scenario.from_dict(scenario)
    if traffic is None:
        result = simulate(s)
    else:
        chunks = _slices(trace) if trace is not None else _file_chunks(traffic.path)
        result = simulate(replay_scenario(s, traffic.info, traffic.speedup),
                          read_trace(chunks, traffic.block_tokens, traffic.speedup), keep_records=False)
    return _row(s, result)


def _file_chunks(path: str) -> Iterator[bytes]:
    with open(path, "rb") as f:
        while chunk := f.read(CHUNK_BYTES):
            yield chunk


def _slices(data: bytes) -> Iterator[bytes]:
    for at in range(0, len(data), CHUNK_BYTES):
        yield data[at:at + CHUNK_BYTES]


def _row(s: Scenario, result: Result) -> dict[str, Any]:
    summary = result.summary()
    memory = s.fleet.memory_gb if math.isfinite(s.fleet.memory_gb) else None  # JSON has no infinity: none is null
    return {"replicas": s.fleet.replicas, "memory_gb": memory, **{k: summary[k] for k in FIGURES}}


def run_points(scenarios: Sequence[Scenario], traffic: Traffic | None = None, workers: int | None = None,
               scheduler: str | None = None, progress: Callable[[int, int], None] | None = None) -> list[dict[str, Any]]:
    """Each scenario's row, in order: in local processes (`workers`, default every core) or on a Dask cluster."""
    tasks = [s.to_dict() for s in scenarios]
    if scheduler is not None:
        return _run_dask(tasks, traffic, scheduler)
    workers = workers or os.cpu_count() or 1
    if workers == 1 or len(tasks) == 1:
        rows = []
        for i, task in enumerate(tasks):
            rows.append(run_point(task, traffic))
            if progress:
                progress(i + 1, len(tasks))
        return rows
    from concurrent.futures import ProcessPoolExecutor

    with ProcessPoolExecutor(max_workers=min(workers, len(tasks))) as pool:
        rows = []
        for row in pool.map(run_point, tasks, itertools.repeat(traffic), chunksize=1):
            rows.append(row)
            if progress:
                progress(len(rows), len(tasks))
    return rows


def _run_dask(tasks: list[dict[str, Any]], traffic: Traffic | None, address: str) -> list[dict[str, Any]]:
    try:
        from dask.distributed import Client
    except ImportError:
        raise CommandError("--scheduler needs dask.distributed: pip install 'prefix-lab[sweep]'") from None
    try:
        client = Client(address, timeout=30)
    except (OSError, TimeoutError, ValueError) as exc:
        raise CommandError(f"--scheduler {address}: cannot reach a Dask scheduler there ({exc})") from None
    with client:
        trace = None
        if traffic is not None:  # workers may share no disk with us: send them the trace once
            trace = client.scatter(Path(traffic.path).read_bytes(), broadcast=True)
        futures = client.map(run_point, tasks, traffic=traffic, trace=trace, pure=False)
        return list(client.gather(futures))


# -- the result ----------------------------------------------------------------

def cheapest(rows: Sequence[dict[str, Any]], targets: Sequence[Target]) -> int | None:
    """Index of the cheapest row meeting every target (fewest replicas, least memory, fewest GPU-s), or None."""
    import numpy as np

    if not rows:
        return None
    meets = np.array([all(t.holds(r) for t in targets) for r in rows], dtype=bool)
    if not meets.any():
        return None
    cost = np.array([[r["replicas"], math.inf if r["memory_gb"] is None else r["memory_gb"], r["prefill_gpu_s"]]
                     for r in rows], dtype=float)
    order = np.lexsort((np.arange(len(rows)), cost[:, 2], cost[:, 1], cost[:, 0]))  # last key sorts first
    return int(next(i for i in order if meets[i]))


def table(rows: Sequence[dict[str, Any]], keys: Sequence[str], best: int | None, targets: Sequence[Target]) -> str:
    """The rows as a text table; `*` marks the cheapest meeting the targets, `-` those missing one."""
    head = [*keys, "requests", "hit rate", "p50 ms", "p99 ms", "prefill GPU-s", ""]
    body = []
    for i, r in enumerate(rows):
        mark = "*" if i == best else ("" if all(t.holds(r) for t in targets) else "-") if targets else ""
        body.append([*(_text(r[k]) for k in keys), f"{r['requests']:,}", f"{r['hit_rate'] * 100:.1f}%",
                     f"{r['ttft_p50_ms']:,.0f}", f"{r['ttft_p99_ms']:,.0f}", f"{r['prefill_gpu_s']:,.1f}", mark])
    widths = [max(len(x) for x in col) for col in zip(head, *body)]
    lines = ["  ".join(x.rjust(w) for x, w in zip(line, widths)).rstrip() for line in [head, *body]]
    return "\n".join(lines)


def _text(value: Any) -> str:
    if value is None:
        return "none"
    return f"{value:g}" if isinstance(value, float) else str(value)


# -- the verb ------------------------------------------------------------------

def sweep_output(args: argparse.Namespace, load: Callable[[], Scenario]) -> Iterator[str]:
    """Run `prefix-lab sweep`; the lines it prints (a table and the cheapest, or JSON). `load()` is the base scenario."""
    grid = parse_grid(args.grid)
    targets = [parse_target(t) for t in args.target]
    if args.traffic is None and (args.block_tokens != BLOCK_TOKENS or args.speedup != 1.0):
        raise CommandError("--block-tokens and --speedup read a trace: give it with --traffic FILE")
    if args.traffic is not None:
        replay_keys_only(args.set)
        replay_keys_only([f"{k}=" for k in grid], "--grid")
        if args.scenario is not None:
            raise CommandError("--traffic replays a trace; give fleet and router keys with --set, not a scenario file")
    base = load()
    scenarios = points(base, grid)
    traffic = None if args.traffic is None else _checked_traffic(args, scenarios)
    if traffic is None:  # each point within what one run may cost, before any runs (lab/common/runbound.py)
        from lab.common.runbound import check_run

        for s in scenarios:
            check_run(s, "a point of the grid sends")

    live = not args.quiet and args.scheduler is None and sys.stderr.isatty()

    def progress(done: int, total: int) -> None:
        if live:
            print(f"\rran {done}/{total}", end="", file=sys.stderr, flush=True)

    try:
        rows = run_points(scenarios, traffic, args.workers, args.scheduler, progress)
    except (TraceError, ScenarioError) as exc:  # a trace changed on disk since it was checked
        raise CommandError(trace_problem(args.traffic, exc)) from None
    if live:
        print(file=sys.stderr)
    keys = list(grid)
    for row, s in zip(rows, scenarios):
        for key in keys:
            value = s.get(key)
            row[key] = None if value == math.inf else value  # JSON has no infinity: no limit is null
    best = cheapest(rows, targets) if targets else None
    data = {
        "grid": grid,
        "base": base.to_dict(),
        "traffic": None if traffic is None else {"file": traffic.path, "block_tokens": traffic.block_tokens,
                                                  "speedup": traffic.speedup},
        "targets": [t.text() for t in targets],
        "cost": list(COST),
        "rows": [{**{k: row[k] for k in keys}, **{k: v for k, v in row.items() if k not in keys}} for row in rows],
        "cheapest": best,
    }
    if args.json_out:
        _write(args.json_out, json.dumps(data, indent=1) + "\n")
    if args.plot:
        from lab.cli.sweepplot import plot_html

        try:
            html = plot_html(data)
        except ValueError as exc:
            raise CommandError(f"--plot: {exc}") from None
        _write(args.plot, html)
    if args.json:
        yield json.dumps(data, indent=1)
        return
    yield table(rows, keys, best, targets)
    if targets:
        wanted = " and ".join(t.text() for t in targets)
        if best is None:
            yield f"no setup meets {wanted}"
        else:
            chosen = ", ".join(f"{k}={_text(rows[best][k])}" for k in keys)
            yield f"* cheapest meeting {wanted}: {chosen}"


def _checked_traffic(args: argparse.Namespace, scenarios: Sequence[Scenario]) -> Traffic:
    """The trace checked once, here: a bad line is one error, not one per worker."""
    from lab.common.runbound import RunTooLarge, check_replay

    path = args.traffic
    try:
        info = scan_trace(open_trace(path)(), args.block_tokens)
        for s in scenarios:
            replay_scenario(s, info, args.speedup)
            check_replay(s, info, streamed=not s.fleet.decode)
    except RunTooLarge as exc:
        raise CommandError(f"{path}: {exc}") from None
    except TraceError as exc:
        raise CommandError(trace_problem(path, exc)) from None
    except ScenarioError as exc:
        raise CommandError(f"{path}: {exc}") from None
    return Traffic(path, info, args.block_tokens, args.speedup)


def _write(path: str, text: str) -> None:
    try:
        Path(path).write_text(text, encoding="utf-8")
    except OSError as exc:
        raise CommandError(f"cannot write {path}: {exc.strerror or exc}") from None


def add_sweep_verb(verbs: Any) -> Any:
    """Register `prefix-lab sweep`; the CLI sets what runs it."""
    p = verbs.add_parser("sweep", help="run every combination of a grid of settings; table, JSON and plot",
                         description="Run every combination of --grid values (synthetic traffic, or a trace "
                                     "with --traffic) on every core or a Dask cluster, print a table, and mark "
                                     "the cheapest setup meeting the --target figures.")
    p.add_argument("scenario", nargs="?", help="base scenario JSON file (default: the lab's default scenario)")
    p.add_argument("--grid", action="append", default=[], required=True, metavar="KEY=VALUES",
                   help="values of one key: a list and ranges, e.g. fleet.replicas=2:16 or router.kind=cache_aware,"
                        "round_robin (repeatable)")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="set a key at every point")
    p.add_argument("--traffic", metavar="FILE", help="replay this trace at every point instead of synthetic chat")
    add_trace_options(p)
    p.add_argument("--target", action="append", default=[], metavar="FIGURE<=VALUE",
                   help="a figure every acceptable setup meets, e.g. ttft_p99_ms<=500 (repeatable)")
    p.add_argument("--json", action="store_true", help="print the sweep as JSON instead of a table")
    p.add_argument("--json-out", metavar="FILE", help="write the sweep as JSON to FILE")
    p.add_argument("--plot", metavar="FILE", help="draw the trade-off as a standalone HTML page (Bokeh)")
    p.add_argument("--workers", type=positive_int, metavar="N", help="local worker processes (default: one per core)")
    p.add_argument("--scheduler", metavar="ADDRESS", help="run on the Dask cluster at ADDRESS, e.g. tcp://10.0.0.5:8786")
    p.add_argument("--quiet", action="store_true", help="no progress on stderr")
    return p
