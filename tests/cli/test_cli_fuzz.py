"""Hostile input to the command line: one line naming the problem and exit status 2, never a traceback."""

import contextlib
import io
import json
import os
import subprocess
import sys
from dataclasses import replace
from unittest import mock

import pytest
import tornado.netutil
from hypothesis import given, settings
from hypothesis import strategies as st

from lab.cli.main import main
from model import KEYS, simulate


def run_main(argv):
    """main(argv) with its output captured: (status, stdout, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = main(argv)
    return status, out.getvalue(), err.getvalue()


def assert_one_line_or_success(status, err):
    assert status in (0, 2), status
    if status == 2:
        assert err.count("\n") == 1 and err.startswith("prefix-lab: error: "), err
        assert "Traceback" not in err


@pytest.mark.parametrize("content, message", [
    ('{"duration_s": 1' + "0" * 400 + "}", "duration_s: the number is too large"),
    ('{"seed": -1' + "0" * 400 + "}", "seed: the number is too large"),
    ('{"events": [{"kind": "burst", "at_s": 1' + "0" * 400 + "}]}", "events[0].at_s: the number is too large"),
    ('{"seed": ' + "7" * 5000 + "}", "Exceeds the limit (4300 digits)"),
    ("[" * 100_000 + "]" * 100_000, "JSON nested too deeply"),
    ('{"a": ' * 100_000 + "1" + "}" * 100_000, "JSON nested too deeply"),
    ('{"router": {"kind": "caf\u00e9"}}'.encode("latin-1"), "not UTF-8 text (byte 24)"),
    ('{"fleet": {"replicas": 8}}'.encode("utf-16"), "not UTF-8 text (byte 0)"),
    (bytes(range(256)), "not UTF-8 text"),
])
def test_bad_scenario_files_are_one_line(tmp_path, content, message):
    path = tmp_path / "scenario.json"
    path.write_bytes(content.encode() if isinstance(content, str) else content)
    status, _, err = run_main(["run", str(path)])
    assert status == 2 and err.count("\n") == 1 and message in err, err


def test_a_utf8_byte_order_mark_is_fine(tmp_path):
    path = tmp_path / "scenario.json"
    path.write_bytes('\ufeff{"fleet": {"replicas": 2}, "duration_s": 20}'.encode())
    status, out, _ = run_main(["run", str(path), "--json"])
    assert status == 0 and json.loads(out)["scenario"]["fleet"]["replicas"] == 2


def environment(unbuffered):
    """This environment with standard output buffered as in a terminal session, or unbuffered."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}
    return {**env, "PYTHONUNBUFFERED": "1"} if unbuffered else env


@pytest.mark.parametrize("unbuffered", [False, True])
def test_output_to_a_full_disk_is_one_line(unbuffered):
    with open("/dev/full", "w") as full:
        done = subprocess.run([sys.executable, "-m", "lab", "keys"], stdout=full, stderr=subprocess.PIPE, text=True,
                              env=environment(unbuffered))
    assert done.returncode == 2
    assert done.stderr == "prefix-lab: error: cannot write the output: No space left on device\n"


@pytest.mark.parametrize("unbuffered", [False, True])
def test_a_reader_that_stops_early_ends_the_command_quietly(unbuffered):
    """`prefix-lab run --requests - | head -1`: far more than a pipe holds, so the write meets a closed pipe.

    Unbuffered, Python's text layer ignores the short write that the closed pipe
    causes, so the command cannot tell and ends with 0; buffered, it ends with
    141, like a program stopped by SIGPIPE. Quietly, either way.
    """
    proc = subprocess.Popen([sys.executable, "-m", "lab", "run", "--requests", "-"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=environment(unbuffered))
    assert proc.stdout.readline().startswith(b"{")
    proc.stdout.close()  # what head does after its line
    assert proc.wait(timeout=60) in ((0, 141) if unbuffered else (141,))
    assert proc.stderr.read() == b""
    proc.stderr.close()


# Scenario files: JSON shaped like a scenario (real keys, nested a little) with hostile leaves,
# written in various encodings, or raw bytes.
LEAVES = st.one_of(
    st.none(), st.booleans(), st.integers(), st.integers(min_value=10**300, max_value=10**320),
    st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=8), st.sampled_from(["nan", "1e999", "-0", ""]))
NAMES = st.sampled_from(sorted({k.split(".")[0] for k in KEYS} | {k.split(".")[-1] for k in KEYS}
                               | {"events", "kind", "at_s", "duration_s", "factor", "x"}))
DOCS = st.recursive(LEAVES, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(NAMES, inner, max_size=4),
                    max_leaves=12)


def _encode(doc, how):
    text = json.dumps(doc)
    return text.encode({"utf-8": "utf-8", "utf-16": "utf-16", "latin-1": "latin-1"}[how], errors="replace")


FILES = st.one_of(
    st.tuples(DOCS, st.sampled_from(["utf-8", "utf-8", "utf-16", "latin-1"])).map(lambda d: _encode(*d)),
    st.binary(max_size=64),
    st.integers(min_value=2, max_value=3000).map(lambda n: b"[" * n + b"]" * n),
)


SMALL_BOUND = 5_000  # the run bound while fuzzing: a hostile duration is counted only this far (the fuzz is input)


def _quick_simulate(scenario, **options):
    """The real simulation over at most 5 seconds of traffic: the fuzz is about input, not speed."""
    return simulate(replace(scenario, duration_s=min(scenario.duration_s, 5.0)), **options)


@settings(max_examples=120, derandomize=True, deadline=None)
@given(content=FILES, verb=st.sampled_from(["run", "score"]))
def test_fuzz_scenario_files_never_make_a_traceback(tmp_path_factory, content, verb):
    path = tmp_path_factory.mktemp("fuzz") / "scenario.json"
    path.write_bytes(content)
    argv = ["run", str(path), "--json"] if verb == "run" else ["score", "--mission", "cache-on", str(path)]
    with mock.patch("lab.cli.main.simulate", _quick_simulate), mock.patch("lab.common.runbound.RUN_MAX_REQUESTS", SMALL_BOUND):
        status, _, err = run_main(argv)
    assert_one_line_or_success(status, err)


VALUES = st.one_of(st.text(max_size=6), st.integers().map(str), st.sampled_from(
    ["1e999", "-1e999", "nan", "inf", "9" * 400, "9" * 5000, "0x10", "1_000", "true", "off", "surge@60+90",
     "burst@1e999+1x1e999", "timestamp@-1", ",,,", "cache_aware", "\x00", "\udcff"]))
SETS = st.tuples(st.sampled_from(sorted(KEYS) + ["events", "fleet", "x.y", ""]), VALUES).map("=".join)
PATHS = st.sampled_from(["/nonexistent.json", "/", "/dev/full", "/dev/full/x", "/proc/nope/site", "a\x00b", "",
                         "site", "out.jsonl", "-"]) | st.text(max_size=6)
SCENARIO = st.lists(PATHS, max_size=1)
OPTIONS = {
    "run": st.one_of(st.tuples(st.just("--set"), SETS), st.tuples(st.just("--requests"), PATHS),
                     st.just(("--json",))),
    "score": st.one_of(st.tuples(st.just("--set"), SETS), st.just(("--json",)),
                       st.tuples(st.just("--mission"), st.sampled_from(["cache-on", "timestamp", "nope", ""]))),
    "keys": st.just(("--json",)),
    "missions": st.just(("--json",)),
    "build": st.tuples(st.just("--out"), PATHS),
    "serve": st.one_of(st.tuples(st.just("--dir"), PATHS), st.just(("--rebuild",)), st.just(("--room",)),
                       st.tuples(st.just("--data"), st.sampled_from(["/dev/full/x", "/proc/nope/data", "a\x00b", "",
                                                                     "data", "/dev/null"])),
                       st.tuples(st.just("--port"), st.sampled_from(["0", "70000", "-1", "x", "", "65536"])),
                       st.tuples(st.just("--host"), st.sampled_from(
                           ["127.0.0.1", "0.0.0.0", "::1", "1.2.3.4", "localhost", "", "a\x00b", "[::1]"]))),
}
ARGV = st.sampled_from(sorted(OPTIONS)).flatmap(lambda verb: st.tuples(
    st.lists(OPTIONS[verb], max_size=4), SCENARIO if verb in ("run", "score") else st.just([]),
    st.just([]) | st.just([]) | st.lists(st.sampled_from(["--frobnicate", "--", "-x", "walk", "--set"])
                                         | st.text(max_size=4), min_size=1, max_size=1),
).map(lambda parts: [verb, *(token for option in parts[0] for token in option), *parts[1], *parts[2]]))


def _fake_fill(folder, pyodide):
    (folder / "build.json").write_text("{}")


@settings(max_examples=200, derandomize=True, deadline=None)
@given(argv=ARGV)
def test_fuzz_arguments_never_make_a_traceback(tmp_path_factory, argv):
    """Every verb with hostile arguments. A build writes only build.json; a server that starts stops at once."""
    if any(a.startswith("-h") or (a.startswith("--h") and "--help".startswith(a)) for a in argv):
        return  # help exits 0 through argparse
    opened = []
    bind = tornado.netutil.bind_sockets

    def bind_and_keep(*args, **kwargs):
        sockets = bind(*args, **kwargs)
        opened.extend(sockets)
        return sockets

    with (mock.patch("lab.cli.main.simulate", _quick_simulate), mock.patch("lab.site.build._fill", _fake_fill, create=True),
          mock.patch("lab.common.runbound.RUN_MAX_REQUESTS", SMALL_BOUND),
          mock.patch("tornado.netutil.bind_sockets", bind_and_keep),
          mock.patch("lab.server.serve.asyncio.run", lambda main: main.close()),
          contextlib.chdir(tmp_path_factory.mktemp("cwd"))):
        try:
            status, _, err = run_main(argv)
        finally:
            for sock in opened:
                sock.close()
    assert_one_line_or_success(status, err)


@pytest.mark.parametrize("sets", [
    ["fleet.decode=true", "fleet.prefill_replicas=33", "fleet.decode_replicas=32"],
    ["fleet.decode=true", "fleet.memory_gb=0"],
    ["fleet.memory_gb=0"],
])
def test_split_on_setups_that_serve_nothing_or_do_not_fit_is_no_traceback(sets):
    status, out, err = run_main(["split", *(token for s in sets for token in ("--set", s))])
    assert_one_line_or_success(status, err)
    if "fleet.prefill_replicas=33" in sets:
        assert status == 2 and "64" in err
    else:
        assert status == 0 and "no request was served" in out


def test_a_trace_timestamp_of_thousands_of_digits_is_one_line_naming_it(tmp_path):
    trace = tmp_path / "trace.jsonl"
    trace.write_text('{"timestamp": 0, "input_length": 10, "output_length": 5, "hash_ids": [1]}\n'
                     '{"timestamp": ' + "7" * 4001 + ', "input_length": 10, "output_length": 5, "hash_ids": [1]}\n')
    status, _, err = run_main(["replay", str(trace)])
    assert status == 2 and err.count("\n") == 1
    assert err.startswith(f"prefix-lab: error: {trace} line 2: timestamp 77777") and "too large" in err


def test_a_streamed_replay_prints_what_a_replay_keeping_every_record_prints(tmp_path, monkeypatch):
    from lab.cli.main import format_summary
    from lab.common import traces
    from model import Scenario, generate, replay, trace_lines

    trace = tmp_path / "trace.jsonl"
    trace.write_text("".join(ln + "\n" for ln in trace_lines(generate(Scenario().with_text({"duration_s": "240"})))))
    sets = ["--set", "fleet.replicas=3", "--set", "router.kind=cache_aware"]
    kept = replay(Scenario().with_text({"fleet.replicas": "3", "router.kind": "cache_aware"}),
                  lambda: [trace.read_bytes()])
    status, out, _ = run_main(["replay", str(trace), *sets])
    assert status == 0 and out == f"trace {trace}, 512-token blocks, speedup 1\n{format_summary(kept)}\n"
    status, out, _ = run_main(["replay", str(trace), *sets, "--json"])
    assert status == 0 and {k: v for k, v in json.loads(out).items() if k != "trace"} == \
        json.loads(json.dumps(kept.to_dict()))
    status, out, _ = run_main(["replay", str(trace), *sets, "--requests", "-"])
    assert status == 0 and out.splitlines() == [json.dumps(rec.to_dict()) for rec in kept.records]
    status, _, _ = run_main(["replay", str(trace), *sets, "--requests", str(tmp_path / "out.jsonl")])
    assert (tmp_path / "out.jsonl").read_text().splitlines() == [json.dumps(r.to_dict()) for r in kept.records]
    seen = []
    monkeypatch.setattr(traces, "replay", lambda *a, **k: seen.append(k) or replay(*a, **k))
    run_main(["replay", str(trace), *sets])
    assert seen[0]["keep_records"] is False  # the command line's replay keeps none


@pytest.mark.parametrize("sets", [
    ["traffic.session_rate=50", "duration_s=604800", "traffic.turns_mean=20"],  # the probe's: 5.8 hours, 790 GB
    ["traffic.kind=agent", "traffic.agent_rate=10", "duration_s=604800"],
    ["traffic.session_rate=1", "duration_s=3000", "fleet.decode=true"],
])
def test_a_run_over_the_declared_bound_is_refused_before_it_starts(sets, monkeypatch):
    import lab.common.runbound

    says = "more than 500,000 requests" if "traffic.turns_mean=20" in sets else "more than 10,000 requests"
    if "traffic.turns_mean=20" not in sets:  # counted to a smaller bound, to keep the test short
        monkeypatch.setattr(lab.common.runbound, "RUN_MAX_REQUESTS", 10_000)
    with mock.patch("lab.cli.main.simulate", side_effect=AssertionError("nothing may run")):
        status, _, err = run_main(["run", *(t for s in sets for t in ("--set", s))])
    assert status == 2 and err.count("\n") == 1 and says in err and "duration_s" in err
    for verb in ("split", "money", "queue") if "more than 10,000" in says else ():  # the verbs that run it too
        status, _, err = run_main([verb, *(t for s in sets for t in ("--set", s))])
        assert status == 2 and says in err, verb


def test_closed_users_are_stopped_at_the_bound_with_the_same_line(monkeypatch):
    import lab.common.runbound

    monkeypatch.setattr(lab.common.runbound, "RUN_MAX_REQUESTS", 200)
    status, _, err = run_main(["run", "--preset", "kv-locality-note"])
    assert status == 2 and err.count("\n") == 1 and "more than 200 requests" in err


def test_a_replay_over_the_declared_bound_is_refused_after_the_check_and_before_the_run(tmp_path, monkeypatch):
    import lab.common.runbound

    trace = tmp_path / "trace.jsonl"
    trace.write_text("".join(f'{{"timestamp": {i}, "input_length": 600, "output_length": 5, "hash_ids": [{i}, {i + 1}]}}\n'
                             for i in range(300)))
    monkeypatch.setattr(lab.common.runbound, "REPLAY_MAX_REQUESTS", 200)
    with mock.patch("model.sources.trace.simulate", side_effect=AssertionError("nothing may run")):
        status, _, err = run_main(["replay", str(trace)])
        assert status == 2 and err.count("\n") == 1 and "the trace has 300 requests" in err
        monkeypatch.setattr(lab.common.runbound, "REPLAY_MAX_REQUESTS", 10**6)
        monkeypatch.setattr(lab.common.runbound, "NODE_BYTES", 10**8)
        status, _, err = run_main(["replay", str(trace), "--set", "fleet.memory_gb=none", "--set",
                                   "fleet.replicas=1"])
        assert status == 2 and "fleet.memory_gb=none keeps every block" in err


def test_running_out_of_memory_is_one_line():
    with mock.patch("lab.cli.main.simulate", side_effect=MemoryError):
        status, _, err = run_main(["run"])
    assert status == 2 and err.count("\n") == 1 and err.startswith("prefix-lab: error: ran out of memory")
