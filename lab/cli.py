"""The `prefix-lab` command (also `python -m lab`).

Verbs: `run` (one scenario, headless), `build` (the static site), `serve`
(build if needed, then serve it), `missions` and `score`; `replay` (a trace
file, lab/traces.py) and `sweep` (a grid of setups, lab/sweep.py). Bad input ends
with one line on stderr naming what is wrong, and exit status 2; never a
traceback. Panel and Tornado are imported only by the verbs that need them.
"""

import argparse
import json
import sys
from pathlib import Path
from typing import Any, NoReturn

from model import Scenario, ScenarioError, simulate

__all__ = ["main"]


class UsageError(Exception):
    """Bad input from the command line; the message is shown as it is."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:  # one line, not usage + error
        raise UsageError(f"{message} (see {self.prog} --help)")


def load_scenario(path: str | None, sets: list[str], base: Scenario | None = None) -> Scenario:
    """The scenario from a JSON file (or `base`, or the default), then `key=value` overrides."""
    scenario = base or Scenario()
    if path is not None:
        try:
            text = Path(path).read_text(encoding="utf-8")
        except OSError as exc:
            raise UsageError(f"cannot read scenario file {path}: {exc.strerror or exc}") from None
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise UsageError(f"{path}: not valid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}") from None
        try:
            scenario = Scenario.from_dict(data)
        except ScenarioError as exc:
            raise UsageError(f"{path}: {exc}") from None
    try:
        return scenario.with_text(dict(_pairs(sets)))
    except ScenarioError as exc:
        raise UsageError(f"--set: {exc}") from None


def format_summary(result: Any) -> str:
    """A few readable lines about a result."""
    s = result.scenario
    lines = [
        f"{result.requests} requests over {s.duration_s:g} s on {s.fleet.replicas} replica(s), "
        f"router {s.router.kind}, cache {'on' if s.fleet.cache else 'off'}",
        f"hit rate      {result.hit_rate * 100:.1f}%",
        f"TTFT          p50 {result.ttft_p50_ms:.0f} ms   p95 {result.ttft_p95_ms:.0f} ms   "
        f"p99 {result.ttft_p99_ms:.0f} ms   mean {result.ttft_mean_ms:.0f} ms",
        f"throughput    {result.throughput_rps:.2f} requests/s",
        f"prefill       {result.prefill_gpu_s:.1f} GPU-s, {result.recompute_gpu_s:.1f} of them on tokens another replica held",
        "replica       requests   hit rate   utilisation",
    ]
    for r in result.replicas:
        lines.append(f"  {r.index:<11d} {r.requests:>8d}   {r.hit_rate * 100:7.1f}%   {r.utilisation * 100:10.1f}%")
    return "\n".join(lines)


def _run(args: argparse.Namespace) -> int:
    scenario = load_scenario(args.scenario, args.set)
    if args.explain is not None:
        return _explain(scenario, args.explain, args.json)
    result = simulate(scenario)
    if args.trace_out:
        from .traces import write_trace
        write_trace(scenario, args.trace_out, args.block_tokens)
    if args.requests:
        lines = "".join(json.dumps(rec.to_dict()) + "\n" for rec in result.records)
        if args.requests == "-":
            sys.stdout.write(lines)
        else:
            try:
                Path(args.requests).write_text(lines, encoding="utf-8")
            except OSError as exc:
                raise UsageError(f"cannot write {args.requests}: {exc.strerror or exc}") from None
    if args.json:
        print(json.dumps(result.to_dict(), indent=1))
    elif args.requests != "-":
        print(format_summary(result))
    return 0


def _explain(scenario: Scenario, request_id: int, as_json: bool) -> int:
    from model import explain

    try:
        seen = explain(scenario, request_id)
    except ScenarioError as exc:
        raise UsageError(f"--explain: {exc}") from None
    if as_json:
        print(json.dumps(seen, indent=1))
        return 0
    print(f"request {seen['request']} at {seen['arrival_s']:g} s, {seen['prompt_tokens']} prompt tokens: "
          f"router {seen['router']} ({seen['view']} view) chose replica {seen['chosen']}")
    if seen["score"]:
        print(f"its score: {seen['score']}")
    print("replica  believed  actual  backlog s  in flight  score       TTFT ms")
    for r in seen["replicas"]:
        mark = " <- chosen" if r["replica"] == seen["chosen"] else ""
        score = "" if r["score"] is None else f"{r['score']:g}"
        print(f"  {r['replica']:<6d} {r['believed_tokens']:>8d} {r['actual_tokens']:>7d} {r['backlog_s']:>10.3f} "
              f"{r['in_flight']:>10d}  {score:<10s} {r['ttft_ms']:>8.1f}{mark}")
    print(f"best other choice: replica {seen['best_alternative']}; regret {seen['regret_ms']:.1f} ms")
    return 0


def _keys(args: argparse.Namespace) -> int:
    from model import describe

    rows = describe()
    if args.json:
        print(json.dumps(rows, indent=1))
    else:
        for row in rows:
            page = f"page {row['page']}" if row["page"] else ""
            print(f"{row['key']:28s} {row['default']:>14s}  {row['allowed']:<34s} {page:<26s} {row['meaning']}")
    return 0


def _build(args: argparse.Namespace) -> int:
    from .build import BuildError, build_site

    try:
        out = build_site(Path(args.out))
    except BuildError as exc:
        raise UsageError(str(exc)) from None
    print(f"built the lab in {out}")
    return 0


def _serve(args: argparse.Namespace) -> int:
    from .serve import serve

    serve(Path(args.dir), host=args.host, port=args.port, rebuild=args.rebuild)
    return 0


def _missions(args: argparse.Namespace) -> int:
    from missions import MISSIONS

    if args.json:
        print(json.dumps([m.summary() for m in MISSIONS], indent=1))
    else:
        for m in MISSIONS:
            print(f"{m.id:<18s} {m.title}\n{'':18s} goal: {m.goal_text()}")
    return 0


def _score(args: argparse.Namespace) -> int:
    from missions import find_mission, score

    mission = find_mission(args.mission)
    if mission is None:
        from missions import MISSIONS
        raise UsageError(f"--mission {args.mission!r}: no such mission; known: {', '.join(m.id for m in MISSIONS)}")
    scenario = load_scenario(args.scenario, args.set, base=mission.start)
    verdict = score(mission, scenario, simulate(scenario))
    if args.json:
        print(json.dumps(verdict.to_dict(), indent=1))
    else:
        print(f"{mission.id}: {'passed' if verdict.passed else 'not passed'}, {verdict.stars} star(s)")
        for reason in verdict.reasons:
            print(f"  - {reason}")
    return 0


def _pairs(sets: list[str]) -> list[tuple[str, str]]:
    pairs = []
    for item in sets:
        key, eq, value = item.partition("=")
        if not eq or not key.strip():
            raise UsageError(f"--set {item!r}: write it as key=value, for example --set fleet.replicas=8")
        pairs.append((key.strip(), value))
    return pairs


def parser() -> argparse.ArgumentParser:
    p = _Parser(prog="prefix-lab", description="Prefix caching and request routing lab.")
    verbs = p.add_subparsers(dest="verb", required=True, parser_class=_Parser)

    run = verbs.add_parser("run", help="run one scenario and print what it measured")
    run.add_argument("scenario", nargs="?", help="scenario JSON file (default: the lab's default scenario)")
    run.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                     help="set a dotted key, e.g. fleet.replicas=8 (repeatable)")
    run.add_argument("--json", action="store_true", help="print the result as JSON")
    run.add_argument("--requests", metavar="FILE", help="write one JSON line per request to FILE ('-' for stdout)")
    run.add_argument("--explain", type=int, metavar="REQUEST_ID",
                     help="show one routing decision as the router saw it, and every replica's TTFT for it")
    run.add_argument("--trace-out", metavar="FILE",
                     help="also write the traffic as a Mooncake trace (chained block hashes), for replay anywhere")
    from .traces import add_trace_options
    add_trace_options(run, speedup=False)
    run.set_defaults(func=_run)

    keys = verbs.add_parser("keys", help="list every scenario key with its default and range")
    keys.add_argument("--json", action="store_true", help="print as JSON")
    keys.set_defaults(func=_keys)

    build = verbs.add_parser("build", help="write the static offline site")
    build.add_argument("--out", default="site", help="output folder (default: site)")
    build.set_defaults(func=_build)

    serve = verbs.add_parser("serve", help="build if needed, then serve the lab")
    serve.add_argument("--host", default="127.0.0.1", help="address to listen on (0.0.0.0 for a workshop room)")
    serve.add_argument("--port", type=int, default=8000, help="port (default: 8000; 0 picks a free one)")
    serve.add_argument("--dir", default="site", help="site folder (default: site)")
    serve.add_argument("--rebuild", action="store_true", help="rebuild even if the site looks current")
    serve.set_defaults(func=_serve)

    missions = verbs.add_parser("missions", help="list the missions")
    missions.add_argument("--json", action="store_true", help="print as JSON")
    missions.set_defaults(func=_missions)

    score = verbs.add_parser("score", help="score a setup against a mission")
    score.add_argument("--mission", required=True, help="mission id (see prefix-lab missions)")
    score.add_argument("scenario", nargs="?", help="scenario JSON file (default: the mission's broken start)")
    score.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                       help="set a dotted key on the mission's start (or on the file)")
    score.add_argument("--json", action="store_true", help="print as JSON")
    score.set_defaults(func=_score)

    from .sweep import add_sweep_verb
    from .traces import add_replay_verb
    add_replay_verb(verbs)
    add_sweep_verb(verbs)
    return p


def main(argv: list[str] | None = None) -> int:
    try:
        args = parser().parse_args(argv)
        return args.func(args)
    except UsageError as exc:
        print(f"prefix-lab: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
