"""static/scheduler.mjs under Node: the order in which the helpers' speculative jobs start, drop and are replaced.

Each test runs a short script against the module with a fake clock and a queue of deferred calls, and
checks the events it logged, in order: no test measures time.
"""

import json
import shutil
import subprocess
from pathlib import Path

import pytest

SCHEDULER = Path(__file__).resolve().parents[2] / "static" / "scheduler.mjs"
NODE = shutil.which("node")

pytestmark = pytest.mark.skipif(NODE is None, reason="Node.js is not installed")

HARNESS = """
import { Scheduler, helperCount, neighbours } from %s;
const events = [];
const later = [];
let clock = 0;
const flush = () => { while (later.length) later.shift()(); };
const make = (helpers, extra = {}) => new Scheduler({
  helpers, now: () => clock, defer: (fn) => later.push(fn),
  start: (helper, job) => events.push(["start", helper, job.key]),
  replace: (helper) => events.push(["replace", helper]),
  log: (event, detail) => { if (event === "drop") events.push(["drop", detail.key]); },
  ...extra,
});
const asked = (s, key) => { events.push(["send", key]); s.asked(key); };
const job = (key) => ({ key, request: { key } });
%s
console.log(JSON.stringify({ events, out: typeof out === "undefined" ? null : out }));
"""


def run(body: str) -> dict:
    script = HARNESS % (json.dumps(SCHEDULER.as_uri()), body)
    done = subprocess.run([NODE, "--input-type=module", "-e", script], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_an_asked_for_request_goes_out_before_any_speculative_job_planned_in_the_same_turn():
    got = run("""
        const s = make(1);
        s.ready(0);
        flush();
        s.plan([job("5"), job("3")]);
        asked(s, "4");
        flush();
    """)
    assert got["events"] == [["send", "4"], ["start", 0, "5"]]


def test_a_planned_job_for_the_key_asked_for_is_dropped_not_started():
    got = run("""
        const s = make(1);
        s.plan([job("5"), job("6")]);
        asked(s, "5");
        s.ready(0);
        flush();
    """)
    assert got["events"] == [["send", "5"], ["drop", "5"], ["start", 0, "6"]]


def test_a_queued_job_the_new_plan_no_longer_holds_is_dropped_and_never_started():
    got = run("""
        const s = make(1);
        s.ready(0);
        s.plan([job("5"), job("3"), job("6")]);
        flush();                         // 5 starts; 3 and 6 wait
        s.plan([job("7"), job("6")]);    // the slider moved on: 3 can no longer be used
        s.finished(0, "5");
        flush();
        s.finished(0, "7");
        flush();
    """)
    assert got["events"] == [["start", 0, "5"], ["drop", "3"], ["start", 0, "7"], ["start", 0, "6"]]


def test_a_helper_stuck_in_a_job_no_longer_planned_is_replaced_once_it_has_run_too_long():
    got = run("""
        const s = make(1, { uselessAfterMs: 1000 });
        s.ready(0);
        s.plan([job("5")]);
        flush();
        clock = 500;
        s.plan([job("9")]);              // 5 is useless now, but young: left to finish
        flush();
        clock = 1600;
        s.plan([job("9"), job("10")]);   // still running, now too long: replaced
        flush();
        s.ready(0);
        flush();
    """)
    assert got["events"] == [["start", 0, "5"], ["replace", 0], ["start", 0, "9"]]


def test_a_job_still_planned_keeps_its_helper_however_long_it_runs():
    got = run("""
        const s = make(1, { uselessAfterMs: 1000 });
        s.ready(0);
        s.plan([job("5"), job("6")]);
        flush();
        clock = 5000;
        s.plan([job("5"), job("6")]);
        flush();
    """)
    assert got["events"] == [["start", 0, "5"]]


def test_answers_the_page_has_already_and_a_bounded_queue():
    got = run("""
        const s = make(0, { queueLimit: 2 });
        s.plan([job("1"), job("2"), job("3"), job("4")], (key) => key === "1");
        const out = s.queue.map((j) => j.key);
    """)
    assert got["out"] == ["2", "3"]


def test_two_helpers_take_the_first_two_jobs_in_plan_order():
    got = run("""
        const s = make(2);
        s.ready(0);
        s.ready(1);
        s.plan([job("a"), job("b"), job("c")]);
        flush();
    """)
    assert got["events"] == [["start", 0, "a"], ["start", 1, "b"]]


def test_the_pool_is_sized_from_the_cores_and_the_memory():
    got = run("""
        const out = [helperCount(2, 8), helperCount(1, undefined), helperCount(4, 8), helperCount(16, 8),
                     helperCount(8, 2), helperCount(8, 0.5), helperCount(undefined, undefined)];
    """)
    assert got["out"] == [1, 1, 3, 3, 1, 0, 1]


def test_the_neighbours_one_and_two_steps_either_side_the_way_it_moved_first_within_the_range():
    got = run("""
        const out = [neighbours({ value: 4, start: 1, end: 16, step: 1 }),
                     neighbours({ value: 4, start: 1, end: 16, step: 1, direction: -1 }),
                     neighbours({ value: 1, start: 1, end: 16, step: 1 }),
                     neighbours({ value: 8, start: 1, end: 16, step: 1, pointer: 12 }),
                     neighbours({ value: 0.5, start: 0, end: 1, step: 0.1 })];
    """)
    assert got["out"] == [[5, 3, 6, 2], [3, 5, 2, 6], [2, 3], [12, 9, 7, 10, 6], [0.6, 0.4, 0.7, 0.3]]
