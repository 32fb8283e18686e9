"""The `prefix-lab` command (also `python -m lab`).

Verbs: `run` (one scenario, headless, or a named one: `--preset`), `build`
(the static site), `serve` (build if needed, then serve it), `keys`,
`presets`, `missions` and `score`; `replay`
(a trace file, lab/common/traces.py) and `sweep` (a grid of setups, lab/cli/sweep.py);
and the article's arithmetic: `crossover`, `roofline`, `transfer`, `money` and `fanout`;
`stall` (a long prefill joining a decoding batch), `split` (co-located
against prefill and decode apart) and `queue` (the two queue orders);
and `locality`, the KV-locality note's comparison; `profile check` and
`profile fit`, measured GPUs (lab/common/profiles.py).
Bad input ends with one line on stderr naming what is wrong, and exit status
2; never a traceback. That covers scenario files that are not UTF-8 text, JSON
nested too deeply, numbers too large for the model, unwritable folders and an
output that cannot be written (a full disk). A reader that stops early
(`prefix-lab run | head`) ends the command quietly, with status 141 as a
program stopped by SIGPIPE would. Panel and Tornado are imported only by
the verbs that need them.
"""

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any, NoReturn

from missions import BEATS_RULE
from model import Scenario, ScenarioError, fit_text, simulate

__all__ = ["main"]


SCENARIO_MAX_BYTES = 1 << 20  # a scenario file larger than this is refused unread


class UsageError(Exception):
    """Bad input from the command line; the message is shown as it is."""


class _OutputError(Exception):
    """Standard output cannot be written (a full disk, a closed terminal)."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:  # one line, not usage + error
        raise UsageError(f"{message} (see {self.prog} --help)")


def load_scenario(path: str | None, sets: list[str], base: Scenario | None = None,
                  gpu_fit: str | None = None) -> Scenario:
    """The scenario from a JSON file (or `base`, or the default), then `key=value` overrides, then the GPU fit
    file `gpu_fit` (`prefix-lab profile fit --out`) as `hardware.gpu_fit`."""
    scenario = base or Scenario()
    if path is not None:
        scenario = _scenario_file(path)
    try:
        scenario = scenario.with_text(dict(_pairs(sets)))
    except ScenarioError as exc:
        raise UsageError(f"--set: {exc}") from None
    except (OverflowError, ValueError) as exc:  # a value the checks let through but the model cannot take
        raise UsageError(f"--set: {exc}; use a smaller number") from None
    if gpu_fit is None:
        return scenario
    from lab.common.profiles import ProfileError, load_fit

    try:
        fit = load_fit(gpu_fit)
    except ProfileError as exc:
        raise UsageError(f"--gpu-fit: {exc}") from None
    return scenario.with_values({"hardware.gpu_fit": fit_text(fit)})


def add_gpu_fit_option(p: argparse.ArgumentParser) -> None:
    """`--gpu-fit FIT.json`, on every verb that reads a scenario."""
    p.add_argument("--gpu-fit", metavar="FIT.json", help="price the measured presets' passes on this GPU fit "
                   "(prefix-lab profile fit --out FIT.json; or a100, h100); sets hardware.gpu_fit")


def _scenario_file(path: str) -> Scenario:
    try:
        with open(path, "rb") as f:  # at most a little more than the limit: /dev/zero never ends
            raw = f.read(SCENARIO_MAX_BYTES + 1)
        if len(raw) > SCENARIO_MAX_BYTES:
            raise UsageError(f"{path}: over {SCENARIO_MAX_BYTES // 2**20} MiB; a scenario is a few KB of JSON")
        text = raw.decode("utf-8-sig")  # a byte-order mark is fine
    except UnicodeDecodeError as exc:
        raise UsageError(f"{path}: not UTF-8 text (byte {exc.start}); save the scenario as UTF-8 JSON") from None
    except (OSError, ValueError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise UsageError(f"cannot read scenario file {path}: {reason}") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise UsageError(f"{path}: not valid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}") from None
    except RecursionError:
        raise UsageError(f"{path}: JSON nested too deeply; a scenario is at most a few levels deep") from None
    except ValueError as exc:  # an integer of more than 4,300 digits
        raise UsageError(f"{path}: {exc}") from None
    where = _huge_number(data)
    if where is not None:
        raise UsageError(f"{path}: {where}: the number is too large; see prefix-lab keys for each key's range")
    try:
        return Scenario.from_dict(data)
    except ScenarioError as exc:
        raise UsageError(f"{path}: {exc}") from None
    except (OverflowError, ValueError, RecursionError) as exc:
        raise UsageError(f"{path}: {exc}; see prefix-lab keys for each key's range") from None


def _huge_number(data: Any, where: str = "", depth: int = 0) -> str | None:
    """The dotted place of the first integer too large to be a float, if any (only a few levels looked at)."""
    if isinstance(data, int) and not isinstance(data, bool) and abs(data) > sys.float_info.max:
        return where or "the scenario"
    if depth < 8 and isinstance(data, dict):
        for key, value in data.items():
            found = _huge_number(value, f"{where}.{key}" if where else str(key), depth + 1)
            if found:
                return found
    if depth < 8 and isinstance(data, list):
        for i, value in enumerate(data):
            found = _huge_number(value, f"{where}[{i}]", depth + 1)
            if found:
                return found
    return None


def format_summary(result: Any) -> str:
    """A few readable lines about a result."""
    s = result.scenario
    lines = [
        f"{result.requests} requests over {s.duration_s:g} s on {s.fleet.replicas} replica(s), "
        f"router {s.router.kind}, cache {'on' if s.fleet.cache else 'off'}",
        f"hit rate      {result.hit_rate * 100:.1f}% of prompt tokens; " + (
            "no request is known to continue a conversation" if result.request_hit_rate is None else
            f"{result.request_hit_rate * 100:.1f}% of continuing requests found their whole prefix"),
        f"TTFT          p50 {result.ttft_p50_ms:.0f} ms   p95 {result.ttft_p95_ms:.0f} ms   "
        f"p99 {result.ttft_p99_ms:.0f} ms   mean {result.ttft_mean_ms:.0f} ms",
        f"throughput    {result.throughput_rps:.2f} requests/s",
        f"prefill       {result.prefill_gpu_s:.1f} GPU-s, {result.recompute_gpu_s:.1f} of them on tokens another replica held",
        "replica       requests   hit rate   utilisation",
    ]
    for r in result.replicas:
        lines.append(f"  {r.index:<11d} {r.requests:>8d}   {r.hit_rate * 100:7.1f}%   {r.utilisation * 100:10.1f}%")
    return "\n".join(lines + [f"note: {note}" for note in result.notes])


def _preset(name: str | None, path: str | None) -> Scenario | None:
    """The scenario of preset `name` (None without one); a preset and a scenario file together are refused."""
    if name is None:
        return None
    if path is not None:
        raise UsageError(f"--preset {name} and {path}: give a scenario file or a preset, not both")
    from model import scenario_of
    try:
        return scenario_of(name)
    except ScenarioError as exc:
        raise UsageError(f"--{exc} (see prefix-lab presets)") from None


def _bounded(scenario: Scenario) -> Scenario:
    """The scenario, if one run of it stays within the declared bound (lab/common/runbound.py); else one line."""
    from lab.common.runbound import check_run

    check_run(scenario)
    return scenario


def _run(args: argparse.Namespace) -> int:
    from lab.common.runbound import RUN_MAX_REQUESTS, too_large
    from model import TooManyRequests

    base = _preset(args.preset, args.scenario)
    scenario = _bounded(load_scenario(args.scenario, args.set, gpu_fit=args.gpu_fit, base=base))
    if args.explain is not None:
        return _explain(scenario, args.explain, args.json)
    try:  # closed users are counted only as they send: the bound is the run's limit
        result = simulate(scenario, limit=RUN_MAX_REQUESTS)
    except TooManyRequests:
        raise too_large("this setup sends", RUN_MAX_REQUESTS, "lower traffic.users or shorten duration_s") from None
    if args.trace_out:
        from lab.common.traces import CommandError, write_trace
        try:
            write_trace(scenario, args.trace_out, args.block_tokens)
        except CommandError as exc:
            raise UsageError(str(exc)) from None
    if args.requests:
        lines = "".join(json.dumps(rec.to_dict()) + "\n" for rec in result.records)
        if args.requests == "-":
            _out(lines, end="")
        else:
            try:
                Path(args.requests).write_text(lines, encoding="utf-8")
            except (OSError, ValueError) as exc:
                reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
                raise UsageError(f"cannot write {args.requests}: {reason}") from None
    if args.json:
        _out(json.dumps(result.to_dict(), indent=1))
    elif args.requests != "-":
        _out(format_summary(result))
    return 0


def _explain(scenario: Scenario, request_id: int, as_json: bool) -> int:
    from model import explain

    try:
        seen = explain(scenario, request_id)
    except ScenarioError as exc:
        raise UsageError(f"--explain: {exc}") from None
    if as_json:
        _out(json.dumps(seen, indent=1))
        return 0
    _out(f"request {seen['request']} at {seen['arrival_s']:g} s, {seen['prompt_tokens']} prompt tokens: "
          f"router {seen['router']} ({'its own tree' if seen['view'] == 'own' else seen['view'] + ' view'}) chose "
          f"replica {seen['chosen']}")
    if "decision" in seen:
        _out(seen["decision"]["why"])
    if seen["score"]:
        _out(f"its score: {seen['score']}")
    _out("replica  believed  actual  backlog s  in flight  score       TTFT ms")
    for r in seen["replicas"]:
        mark = " <- chosen" if r["replica"] == seen["chosen"] else ""
        score = "" if r["score"] is None else f"{r['score']:g}"
        _out(f"  {r['replica']:<6d} {r['believed_tokens']:>8d} {r['actual_tokens']:>7d} {r['backlog_s']:>10.3f} "
              f"{r['in_flight']:>10d}  {score:<10s} {r['ttft_ms']:>8.1f}{mark}")
    _out(f"best other choice: replica {seen['best_alternative']}; regret {seen['regret_ms']:.1f} ms")
    return 0


def _replay(args: argparse.Namespace) -> int:
    from lab.common.traces import CommandError, replay_keys_only, replay_output

    try:
        replay_keys_only(args.set)
        for line in replay_output(args, load_scenario(None, args.set, gpu_fit=args.gpu_fit), format_summary, _out):
            _out(line)
    except CommandError as exc:
        raise UsageError(str(exc)) from None
    return 0


def _sweep(args: argparse.Namespace) -> int:
    from lab.cli.sweep import sweep_output
    from lab.common.traces import CommandError

    try:
        for line in sweep_output(args, lambda: load_scenario(args.scenario, args.set, gpu_fit=args.gpu_fit)):
            _out(line)
    except CommandError as exc:
        raise UsageError(str(exc)) from None
    return 0


def _profile(args: argparse.Namespace) -> int:
    from lab.common.profiles import ProfileError, profile_output

    try:
        lines = profile_output(args)
    except ProfileError as exc:
        raise UsageError(str(exc)) from None
    for line in lines:
        _out(line)
    return 0


def _presets(args: argparse.Namespace) -> int:
    from lab.page.presets import preset_rows

    rows = preset_rows()
    if args.json:
        _out(json.dumps(rows, indent=1))
        return 0
    for row in rows:
        _out(f"{row['name']}\n  {row['description']}\n  source: {row['source']}")
        _out("  settings: " + " ".join(f"{k}={v}" for k, v in row["settings"].items()))
        _out(f"  on the page: #{row['hash']}")
    return 0


def _locality(args: argparse.Namespace) -> int:
    from model import locality_comparison

    base = _preset("kv-locality-note", None)
    table = locality_comparison(_bounded(load_scenario(args.scenario, args.set, gpu_fit=args.gpu_fit, base=base)))
    if args.json:
        _out(json.dumps(table, indent=1))
        return 0
    _out(format_locality(table))
    return 0


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{x * 100:.1f}%"


def _ms(x: float | None) -> str:
    return "-" if x is None else f"{x:,.0f}"


def format_locality(table: dict[str, Any]) -> str:
    """The locality comparison as a table: each router's figures, and the note's beside them where it gives any."""
    users = f"{table['users']} users, " if table["users"] is not None else ""
    lines = [f"{users}{table['replicas']} replicas of {table['hardware']}, {table['scenario']['duration_s']} s "
             f"(the note: {table['note']['source']})",
             f"{'router':<36s} {'req hit':>8s} {'hit rate':>8s} {'p50 ms':>7s} {'p95 ms':>7s} {'p99 ms':>7s} "
             f"{'req/s':>6s} | {'note: req hit':>13s} {'p99 ms':>7s} {'req/s':>6s}"]
    for row in table["rows"]:
        note = row["note"]
        theirs = (f"{_pct(note['request_hit_rate']):>13s} {_ms(note['ttft_p99_ms']):>7s} {note['throughput_rps']:>6.1f}"
                  if note else f"{'':>13s} {'':>7s} {'':>6s}")
        lines.append(f"{row['label']:<36s} {_pct(row['request_hit_rate']):>8s} {_pct(row['hit_rate']):>8s} "
                     f"{_ms(row['ttft_p50_ms']):>7s} {_ms(row['ttft_p95_ms']):>7s} {_ms(row['ttft_p99_ms']):>7s} "
                     f"{row['throughput_rps']:>6.2f} | {theirs}")
    f, n = table["fallback"], table["fallback"]["note"]
    lines.append(f"the fallback against prefix-aware with no fallback: p95 {_change(f['ttft_p95_change'])}, "
                 f"p99 {_change(f['ttft_p99_change'])}, request hit rate {_signed(f['request_hit_points'])} points "
                 f"(the note: p95 {_change(n['ttft_p95_change'])}, p99 {_change(n['ttft_p99_change'])}, "
                 f"{_signed(n['request_hit_points'])} points)")
    rr = table["rows"][0]
    lines.append(f"a continuing request that found its prefix: TTFT p50 {_ms(rr['found_ttft_p50_ms'])} ms; one that "
                 f"did not: {_ms(rr['missed_ttft_p50_ms'])} ms (round robin; the note: "
                 f"{table['note']['found_ttft_p50_ms']:.0f} and {table['note']['missed_ttft_p50_ms']:.0f} ms)")
    lines += [f"note: {note}" for note in table["notes"]]
    return "\n".join(lines)


def _change(x: float | None) -> str:
    return "-" if x is None else f"{x * 100:+.0f}%"


def _signed(x: float | None) -> str:
    return "-" if x is None else f"{x:+.1f}"


def _keys(args: argparse.Namespace) -> int:
    from model import describe

    rows = describe()
    if args.json:
        _out(json.dumps(rows, indent=1))
    else:
        for row in rows:
            page = f"page {row['page']}" if row["page"] else ""
            _out(f"{row['key']:28s} {row['default']:>14s}  {row['allowed']:<34s} {page:<26s} {row['meaning']}")
    return 0


def _build(args: argparse.Namespace) -> int:
    from lab.site.build import BuildError, build_site

    if not args.out.strip():
        raise UsageError("--out needs a folder name, for example --out site")
    try:
        out = build_site(Path(args.out))
    except BuildError as exc:
        raise UsageError(str(exc)) from None
    _out(f"built the lab in {out}")
    return 0


def _serve(args: argparse.Namespace) -> int:
    from lab.server.serve import ServeError, serve
    from lab.site.build import BuildError

    if not args.dir.strip():
        raise UsageError("--dir needs a folder name, for example --dir site")
    if args.data is not None and not args.room:
        raise UsageError("--data is the workshop room's folder: add --room, or leave --data out")
    if args.data is not None and not args.data.strip():
        raise UsageError("--data needs a folder name, for example --data room-data")
    data = None
    if args.room:  # beside the site by default: ./room-data next to ./site
        data = Path(args.data) if args.data else Path(os.path.abspath(args.dir)).parent / "room-data"
    try:
        serve(Path(args.dir), host=args.host, port=args.port, rebuild=args.rebuild, room_data=data)
    except (BuildError, ServeError) as exc:
        raise UsageError(str(exc)) from None
    return 0


def _missions(args: argparse.Namespace) -> int:
    from missions import MISSIONS

    if args.json:
        from lab.site.missionsweep import distributions
        from missions import beats_rule

        swept = distributions(progress=_note)
        by_id = {d["id"]: d for d in swept["missions"]}
        _out(json.dumps([{**m.summary(), "distribution": by_id.get(m.id), "beats_rule": beats_rule(m),
                          **({"not_swept": swept["missing"][m.id]} if m.id in swept["missing"] else {})}
                         for m in MISSIONS], indent=1))
    else:
        for m in MISSIONS:
            x, y = m.tradeoff
            _out(f"{m.id:<18s} {m.title}\n{'':18s} goal: {m.goal_text()}\n"
                 f"{'':18s} grid: {len(m.setups())} setups of {', '.join(_grid_keys(m))}; trade-off: {x} against {y}")
    return 0


def _grid_keys(mission: Any) -> list[str]:
    from missions import grid_keys

    return grid_keys(mission)


def _note(text: str) -> None:
    """A line about slow work on stderr, so that stdout stays the answer."""
    try:
        print(f"prefix-lab: {text}", file=sys.stderr)
    except OSError:
        pass


def _score(args: argparse.Namespace) -> int:
    from missions import beats, beats_rule, find_mission, measure, score

    mission = find_mission(args.mission)
    if mission is None:
        from missions import MISSIONS
        raise UsageError(f"--mission {args.mission!r}: no such mission; known: {', '.join(m.id for m in MISSIONS)}")
    scenario = _bounded(load_scenario(args.scenario, args.set, gpu_fit=args.gpu_fit, base=mission.start))
    from lab.common.tracemission import run_mission
    from lab.common.traces import CommandError
    from lab.site.missionsweep import distributions
    try:
        result = run_mission(mission, scenario)
    except CommandError as exc:
        raise UsageError(str(exc)) from None
    verdict = score(mission, scenario, result)
    row = measure(mission, scenario, result)
    swept = distributions([mission], progress=_note)["missions"]
    place = beats(swept[0], row) if swept else None
    if args.json:
        _out(json.dumps({**verdict.to_dict(), "figures": row["figures"],
                         **(place or {"beats": None, "ties": None, "swept": 0}), "beats_rule": beats_rule(mission)},
                        indent=1))
    else:
        _out(f"{mission.id}: {'passed' if verdict.passed else 'not passed'}, {verdict.stars} star(s)")
        for reason in verdict.reasons:
            _out(f"  - {reason}")
        if place is not None:
            _out(f"  beats {place['beats'] * 100:.0f}% of the {place['swept']} setups swept "
                 f"(ties {place['ties'] * 100:.0f}%): {beats_rule(mission)}")
    return 0


# -- the article's arithmetic: crossover, transfer, money, fanout ---------------------------------

def _crossover(args: argparse.Namespace) -> int:
    from model import crossover_of

    x = crossover_of(load_scenario(args.scenario, args.set, gpu_fit=args.gpu_fit))
    if args.json:
        _out(json.dumps(x, indent=1))
        return 0
    i = x["inputs"]
    flips = "never" if x["flips_at_queued"] is None else f"from {x['flips_at_queued']} queued on"
    _out(f"{x['hardware']}: a {i['prompt_tokens']:,}-token prompt; the warm GPU lacks {i['new_tokens']:,} of it "
         f"({x['cached_fraction'] * 100:.1f}% cached) and has {i['queued']} queued of {i['queued_tokens']:,} tokens")
    _out(f"idle GPU   {x['idle_ttft_s']:8.3f} s   recomputes the whole prompt")
    _out(f"warm GPU   {x['warm_ttft_s']:8.3f} s   {x['queue_s']:.3f} s of queue + {x['warm_prefill_s']:.3f} s of prefill")
    _out(f"winner     {x['winner']}; the warm GPU needs more than {x['breakeven_cached_fraction'] * 100:.1f}% cached "
         f"to win; the idle GPU wins {flips}")
    _notes(x["notes"])
    return 0


def _roofline(args: argparse.Namespace) -> int:
    from model import roofline_of

    r = roofline_of(load_scenario(args.scenario, args.set, gpu_fit=args.gpu_fit))
    if args.json:
        _out(json.dumps(r, indent=1))
        return 0
    d, p = r["decode"], r["prefill"]
    _out(f"{r['hardware']}: {r['peak_tflops']:g} TFLOP/s dense over {r['hbm_tb_s']:g} TB/s; the ridge is at "
         f"{r['ridge_flops_per_byte']:.0f} FLOPs per byte ({r['tokens_to_ridge']} tokens in one pass)")
    for label, x in ((f"a decode step, batch {d['tokens']:,}", d), (f"a prefill of {p['tokens']:,} tokens", p)):
        _out(f"{label:<28s} {x['flops_per_byte']:10.1f} FLOPs/byte {x['attainable_tflops']:7.1f} TFLOP/s "
             f"{x['peak_share'] * 100:7.2f}% of peak")
        if "model_tflops" in x:  # a measured preset: what the fitted GPU reaches there, attention aside
            _out(f"{'  fitted to measured kernels':<28s} {'':10s}            {x['model_tflops']:7.1f} TFLOP/s "
                 f"{x['model_peak_share'] * 100:7.2f}% of peak")
    _notes(r["notes"])
    return 0


def _stall(args: argparse.Namespace) -> int:
    from model import stall_demo

    d = stall_demo(load_scenario(args.scenario, args.set, gpu_fit=args.gpu_fit))
    if args.json:
        _out(json.dumps(d, indent=1))
        return 0
    _out(f"{d['hardware']}: {d['co_runners']} answers decoding; a {d['prefill_tokens']:,}-token prompt arrives at "
         f"{d['join_s']:g} s (token budget {d['token_budget']:,})")
    _out("                 longest gap ms  worst mean gap ms  its first token after ms")
    for name in ("alone", "chunked", "prefill_first"):
        x = d[name]
        ttft = "" if x["long_ttft_ms"] is None else f"{x['long_ttft_ms']:.0f}"
        _out(f"{name:<16s} {x['co_stall_ms']:14.1f} {x['co_tpot_ms']:18.1f} {ttft:>25s}")
    _notes(d["notes"])
    return 0


def _split(args: argparse.Namespace) -> int:
    from model import split_compare

    scenario = _bounded(load_scenario(args.scenario, args.set, gpu_fit=args.gpu_fit))
    c = split_compare(scenario)
    if args.json:
        _out(json.dumps(c, indent=1))
        return 0
    slo = c["slo"]
    _out(f"{c['gpus']} GPUs; targets: first token within {slo['ttft_ms']:g} ms, no gap between tokens over "
         f"{slo['tbt_ms']:g} ms; a target is met when {slo['share'] * 100:g}% of requests are within it")
    _out("setup               TTFT met  gaps met  TTFT p50  TTFT p99  gap p99 ms  hit rate")
    rows = [("co-located", c["colocated"])]
    if c["split"] is not None:
        rows.append((f"split {c['prefill_replicas']} + {c['decode_replicas']}", c["split"]))
    for name, f in rows:
        if not f["requests"]:
            _out(f"{name:<18s} no request was served: none fits in a replica's memory with its answer "
                 f"(fleet.memory_gb={scenario.fleet.memory_gb:g})")
            continue
        marks = ("yes" if f["meets_ttft"] else "no", "yes" if f["meets_tbt"] else "no")
        tbt = "     -" if f["tbt_slo_met"] is None else f"{f['tbt_slo_met'] * 100:6.1f}"
        stall = "-" if f["stall_p99_ms"] is None else f"{f['stall_p99_ms']:.0f}"
        _out(f"{name:<18s} {f['ttft_slo_met'] * 100:6.1f}% {marks[0]:<3s}{tbt}% {marks[1]:<3s}"
             f"{f['ttft_p50_ms']:8.0f} {f['ttft_p99_ms']:9.0f} {stall:>11s} {f['hit_rate'] * 100:8.1f}%")
    _notes(c["notes"])
    return 0


def _queue(args: argparse.Namespace) -> int:
    from model import queue_compare

    q = queue_compare(_bounded(load_scenario(args.scenario, args.set, gpu_fit=args.gpu_fit)))
    if args.json:
        _out(json.dumps(q, indent=1))
        return 0
    _out(f"queue order            hit rate  TTFT p50 ms  TTFT p99 ms  longest wait ms   (guard {q['guard_s']:g} s)")
    for order in ("fcfs", "longest_prefix_first"):
        f = q[order]
        _out(f"{order:<22s} {f['hit_rate'] * 100:7.1f}% {f['ttft_p50_ms']:12.0f} {f['ttft_p99_ms']:12.0f} "
             f"{f['max_queue_ms']:16.0f}")
    _notes(q["notes"])
    return 0


def _transfer(args: argparse.Namespace) -> int:
    from model import transfer_of

    t = transfer_of(load_scenario(args.scenario, args.set, gpu_fit=args.gpu_fit))
    if args.json:
        _out(json.dumps(t, indent=1))
        return 0
    i = t["inputs"]
    _out(f"{t['hardware']}: the KV of {i['cached_tokens']:,} tokens of a {i['prompt_tokens']:,}-token prompt, "
         f"{t['kv_bytes_per_token'] / 1024:g} KiB a token: {t['kv_bytes'] / 1e9:.2f} GB")
    _out(f"recompute  {t['recompute_s'] * 1000:9.1f} ms   (the whole prompt: {t['prompt_recompute_s'] * 1000:.1f} ms)")
    for tier in ("rdma", "nvme", "host"):
        rate = t["link_bytes_per_s"][tier] / 1e9
        _out(f"{tier:<10s} {t[tier + '_s'] * 1000:9.1f} ms   at {rate:g} GB/s; first token after "
             f"{t[tier + '_ttft_s'] * 1000:.1f} ms with the rest computed")
    _out(f"any link above {t['breakeven_link_bytes_per_s'] / 1e9:.2f} GB/s beats recomputing on this GPU")
    _notes(t["notes"])
    return 0


def _money(args: argparse.Namespace) -> int:
    from model import run_money

    m = run_money(_bounded(load_scenario(args.scenario, args.set, gpu_fit=args.gpu_fit)))
    if args.json:
        _out(json.dumps(m, indent=1))
        return 0
    c, f, g, b = m["api_calls"], m["api_fanout"], m["gpu"], m["api_bill"]
    pays = "never" if c["pays_from_call"] is None else f"from call {c['pays_from_call']} on"
    _out(f"this run, kept up for a month: ${g['prefill_usd_per_month']:,.0f} of prefill GPU time, "
         f"${g['recompute_usd_per_month']:,.0f} of it recomputing what another replica held "
         f"(the fleet rents for ${g['fleet_usd_per_month']:,.0f})")
    _out(f"its calls on an API: ${b['cached_usd']:,.2f} with prompt caching, ${b['uncached_usd']:,.2f} without")
    _out(f"an agent's calls on an API: ${c['cached_usd']:.4f} with caching, ${c['uncached_usd']:.4f} without; "
         f"caching pays {pays}" + ("" if c["entry_alive"] else " (each gap outlives the cache entry)"))
    _out(f"a fan-out: ${f['all_at_once_usd']:.4f} all at once, ${f['first_alone_usd']:.4f} with the first call alone")
    return 0


def _fanout(args: argparse.Namespace) -> int:
    from model import RACE, Scenario, fanout_race

    base = Scenario().with_text(RACE)
    race = fanout_race(_bounded(load_scenario(args.scenario, args.set, gpu_fit=args.gpu_fit, base=base)))
    if args.json:
        _out(json.dumps(race, indent=1))
        return 0
    _out("sub-calls      read  computed  span p50 ms  TTFT p99 ms  hit rate  API $ (cached)")
    for name in ("race", "warm_first"):
        r = race[name]
        _out(f"{name:<12s} {r['read']:>6d} {r['computed']:>9d} {r['span_p50_ms']:>12.0f} {r['ttft_p99_ms']:>12.0f} "
             f"{r['hit_rate'] * 100:>8.1f}%  {r['api_cached_usd']:>8.2f}")
    _notes(race.get("notes", []))
    return 0


def _conformance(args: argparse.Namespace) -> int:
    from lab.cli.conformance import ConformanceError, check_policy, read_decisions, replay
    try:
        header, decisions = read_decisions(args.file)
        check_policy(header, args.policy)
    except ConformanceError as exc:
        raise UsageError(str(exc)) from None
    result = replay(header, decisions, args.policy)
    if args.json:
        _out(json.dumps({k: result[k] for k in ("decisions", "agree", "by_cause")}))
        return 0
    workers = f"{header['workers']} worker" + ("s" if header["workers"] != 1 else "")
    _out(f"{header['router']} as {args.policy}, cache_aware, {workers}: threshold {header['cache_threshold']}, "
         f"balance {header['balance_abs_threshold']} and x{header['balance_rel_threshold']}")
    for d in result["disagreements"][:20]:
        _out(f"  decision {d['decision']} at {d['t']:.3f} s: lab {d['ours']}, router {d['router']} "
             f"({d['cause']}; match rate {d['match_rate']:.3f}, in flight {d['in_flight']})")
    if len(result["disagreements"]) > 20:
        _out(f"  ... and {len(result['disagreements']) - 20} more")
    for cause, n in result["by_cause"].items():
        _out(f"{n:>6d}  {cause}")
    _out(f"agree {result['agree']} of {result['decisions']}")
    return 0


def _notes(notes: list[str]) -> None:
    for note in notes:
        _out(f"note: {note}")


def _explainer(verbs: Any, name: str, helptext: str, func: Any, base: str = "the default scenario") -> None:
    p = verbs.add_parser(name, help=helptext)
    p.add_argument("scenario", nargs="?", help=f"scenario JSON file (default: {base})")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help="set a dotted key, e.g. crossover.queued=4 (repeatable; see prefix-lab keys)")
    p.add_argument("--json", action="store_true", help="print as JSON")
    add_gpu_fit_option(p)
    p.set_defaults(func=func)


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
    run.add_argument("--preset", metavar="NAME", help="start from a named scenario (see prefix-lab presets); "
                     "--set changes it")
    run.add_argument("--json", action="store_true", help="print the result as JSON")
    run.add_argument("--requests", metavar="FILE", help="write one JSON line per request to FILE ('-' for stdout)")
    run.add_argument("--explain", type=int, metavar="REQUEST_ID",
                     help="show one routing decision as the router saw it, and every replica's TTFT for it")
    run.add_argument("--trace-out", metavar="FILE",
                     help="also write the traffic as a Mooncake trace (chained block hashes), for replay anywhere")
    from lab.common.traces import add_trace_options
    add_trace_options(run, speedup=False)
    add_gpu_fit_option(run)
    run.set_defaults(func=_run)

    presets = verbs.add_parser("presets", help="list the named scenarios shipped with the lab and their sources")
    presets.add_argument("--json", action="store_true", help="print as JSON")
    presets.set_defaults(func=_presets)

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
    serve.add_argument("--room", action="store_true",
                       help="run a workshop room: participants join and report progress, a facilitator page "
                            "shows the room (prints both addresses)")
    serve.add_argument("--data", metavar="DIR",
                       help="the room's data folder (default: room-data beside the site folder)")
    serve.set_defaults(func=_serve)

    missions = verbs.add_parser("missions", help="list the missions (--json: with every swept setup of each)")
    missions.add_argument("--json", action="store_true", help="print as JSON")
    missions.set_defaults(func=_missions)

    score = verbs.add_parser(
        "score", help="score a setup against a mission",
        description="Score a setup against a mission: its stars, why, and the share of the mission's swept setups "
                    "(prefix-lab missions --json) it beats. " + BEATS_RULE[0].upper() + BEATS_RULE[1:] + ".")
    score.add_argument("--mission", required=True, help="mission id (see prefix-lab missions)")
    score.add_argument("scenario", nargs="?", help="scenario JSON file (default: the mission's broken start)")
    score.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                       help="set a dotted key on the mission's start (or on the file)")
    score.add_argument("--json", action="store_true", help="print as JSON")
    add_gpu_fit_option(score)
    score.set_defaults(func=_score)

    from lab.cli.conformance import add_conformance_verb
    from lab.cli.sweep import add_sweep_verb
    from lab.common.traces import add_replay_verb
    add_conformance_verb(verbs).set_defaults(func=_conformance)
    for verb, func in ((add_replay_verb, _replay), (add_sweep_verb, _sweep)):
        sub = verb(verbs)
        add_gpu_fit_option(sub)
        sub.set_defaults(func=func)
    from lab.common.profiles import add_profile_verb
    add_profile_verb(verbs).set_defaults(func=_profile)
    _explainer(verbs, "crossover", "an idle GPU recomputing a prompt against a warm one with a queue (crossover.*)",
               _crossover)
    _explainer(verbs, "roofline", "FLOPs per byte of a decode step and a prefill against the GPU's ridge (roofline.*)",
               _roofline)
    _explainer(verbs, "stall", "a prefill of roofline.prefill_tokens joining a batch of decoding answers, chunked and "
               "prefill-first", _stall)
    _explainer(verbs, "split", "the scenario's traffic on the same GPUs, co-located and split into prefill and decode "
               "replicas, against slo.*", _split, base="the default scenario in serving mode")
    _explainer(verbs, "queue", "the scenario in serving mode first come first served and longest cached prefix first "
               "(fleet.queue_guard_s)", _queue, base="the default scenario in serving mode")
    _explainer(verbs, "transfer", "moving a prefix's KV over RDMA, NVMe or PCIe instead of recomputing it (transfer.*)",
               _transfer)
    _explainer(verbs, "money", "run the scenario and price it: GPU time a month, API calls with and without caching "
               "(money.*)", _money)
    _explainer(verbs, "locality", "the KV-locality note's stress test under round robin, cache-aware and the "
               "load-aware fallback, beside the note's figures", _locality, base="the kv-locality-note preset")
    _explainer(verbs, "fanout", "agent fan-outs sent all at once against the first call alone", _fanout,
               base="agent traffic fanning out to 8 sub-calls, 16 GB a replica, cache-aware routing")
    return p


def _out(text: str, end: str = "\n") -> None:
    """Write to standard output; a failed write becomes _OutputError (a closed pipe stays BrokenPipeError)."""
    try:
        try:
            sys.stdout.write(text + end)
        except UnicodeEncodeError:  # a file name that is not valid text, say: show it escaped
            encoding = getattr(sys.stdout, "encoding", None) or "utf-8"
            sys.stdout.write((text + end).encode(encoding, "backslashreplace").decode(encoding))
    except BrokenPipeError:
        raise
    except OSError as exc:
        raise _OutputError(exc.strerror or str(exc)) from None


def _drop_stdout() -> None:
    """Point standard output at /dev/null, so that Python's final flush of what is left cannot fail again."""
    try:
        fd = sys.stdout.fileno()
    except (AttributeError, OSError, ValueError):  # replaced by a test's capture: nothing to flush at exit
        return
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, fd)
    os.close(devnull)


def _error(message: str) -> int:
    message = message.replace("\r", "\\r").replace("\n", "\\n")  # one line, even for a file name holding a newline
    try:
        print(f"prefix-lab: error: {message}", file=sys.stderr)
    except OSError:
        pass
    return 2


def main(argv: list[str] | None = None) -> int:
    from lab.common.runbound import RunTooLarge

    try:
        args = parser().parse_args(argv)
        try:
            status = args.func(args)
        except RunTooLarge as exc:
            raise UsageError(str(exc)) from None
        try:
            sys.stdout.flush()  # a full disk shows here, when the output goes to a file
        except BrokenPipeError:
            raise
        except OSError as exc:
            raise _OutputError(exc.strerror or str(exc)) from None
        return status
    except UsageError as exc:
        return _error(str(exc))
    except MemoryError:  # a run within the declared bound on a machine with less memory than it needs
        from lab.common.runbound import RUN_MAX_BYTES

        return _error(f"ran out of memory: this machine cannot hold this run (a run may need up to "
                      f"{RUN_MAX_BYTES / 1e9:.1f} GB); shorten duration_s or lower the traffic's rate")
    except _OutputError as exc:
        _drop_stdout()
        return _error(f"cannot write the output: {exc}")
    except BrokenPipeError:  # the reader stopped early (| head): not an error worth a word
        _drop_stdout()
        return 141
    except OSError as exc:  # a write of serve's own (its address line), or a file a verb touched
        try:
            sys.stdout.flush()
        except OSError:
            _drop_stdout()
        return _error(f"{exc.strerror or exc}" + (f": {exc.filename}" if exc.filename else ""))
    except KeyboardInterrupt:
        return 130
