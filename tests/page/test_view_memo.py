"""What makes a change fast gives what the slow way gave: remembered answers and drawings, one run for the
fleet and its trees, the routers' shortcuts, HTML written as the browser writes it back."""

import dataclasses
import json
import random
from types import SimpleNamespace

import pytest
from helpers import TRACES, another_value
from hypothesis import given
from hypothesis import strategies as st

import lab.page.missionview as missionview
import lab.page.view as view
from lab.page.figures import FIGURES, Context, fleet_key
from lab.page.store import STORE
from model import KEYS, Scenario, simulate, simulate_with_trees, tree_at
from model.routing.view import View

TRACE = TRACES / "conversation_trace.jsonl"
BASE = {"hash": "fleet.replicas=3", "controls": None, "live": False, "action": None, "progress": {}, "memo": None}


def sent(answer: dict) -> str:
    """The answer as the worker sends it, encoded whole: its Bokeh patches' columns packed (lab/page/wire.py)."""
    patches = answer["patches"]
    bokeh = {target: view._packed(patch) for target, patch in patches["bokeh"].items()}
    return json.dumps({**answer, "patches": {**patches, "bokeh": bokeh}}, separators=(",", ":"))


def fresh(request: dict, files=None) -> str:
    """The answer worked out from nothing remembered but runs: `handle` never reads the answer memo."""
    STORE.forget_drawings()
    return sent(view.handle(request, files))


def test_a_remembered_answer_is_the_answer_and_any_difference_in_the_request_misses_it():
    STORE.answers.clear()
    variants = [
        BASE,
        {**BASE, "hash": "fleet.replicas=3&seed=2"},
        {**BASE, "controls": {"ctl:fleet.replicas": 5}},
        {**BASE, "controls": {"ctl:fleet.replicas": 5}, "live": True},  # costly figures wait for the slider
        {**BASE, "controls": {"ctl:crossover.queued": 5}},
        {**BASE, "progress": {"cache-on": 3}},
        {**BASE, "memo": {"best": {"cache-on": "fleet.cache=true"}, "played": [], "back": None}},
        {**BASE, "hash": "fleet.replicas=3&tree_replica=1"},
        {**BASE, "hash": "fleet.replicas=3&explain=5"},
        {**BASE, "embed": {"figure": "ttft"}},
        {**BASE, "action": {"type": "pin"}},
    ]
    answers = [view.handle_json(json.dumps(v)) for v in variants]
    assert len(set(answers)) == len(answers)  # every variant changes the answer: a stale one would show
    for request, text in zip(variants, answers):
        assert view.handle_json(json.dumps(request)) == text  # from the memo now
        assert text == fresh(request)


def test_the_answer_memo_keys_on_every_field_of_the_state():
    """A field added to `State` must be added to `view._state_key` too (then here): else two states that differ
    only in it would share an answer."""
    assert {f.name for f in dataclasses.fields(view.State)} == {
        "scenario", "page", "progress", "notices", "memo", "playing", "scored", "live", "asking", "used", "shown",
        "files", "baking"}


def test_the_answer_memo_keys_on_everything_the_browser_keeps_and_on_a_hint_falling_due(monkeypatch):
    assert {f.name for f in dataclasses.fields(missionview.Memo)} == {"best", "played", "back", "since"}
    now = [1_000_000.0]
    monkeypatch.setattr(missionview, "clock", lambda: now[0])
    STORE.answers.clear()
    chose = json.loads(view.handle_json(json.dumps({**BASE, "action": {"type": "select_mission", "mission": "cache-on"}})))
    again = {**BASE, "hash": chose["hash"], "memo": chose["memo"], "action": {"type": "skip_predict"}}
    before = view.handle_json(json.dumps(again))
    now[0] += missionview.HINT_AFTER_S
    due = view.handle_json(json.dumps(again))
    assert due != before and due == fresh(again)


def test_the_same_setup_reached_another_way_is_answered_from_memory(monkeypatch):
    STORE.answers.clear()
    first = view.handle_json(json.dumps({**BASE, "hash": "fleet.replicas=5"}))
    monkeypatch.setattr(view, "derive", lambda state: pytest.fail("derived again"))
    assert view.handle_json(json.dumps({**BASE, "controls": {"ctl:fleet.replicas": 5}})) == first


class FileSource:
    """A trace file as the worker hands it to the view."""

    def __init__(self, data: bytes, name: str):
        self.data, self.name, self.size = data, name, len(data)

    def read(self, start, end):
        return self.data[start:end]

    def progress(self, phase, requests, read):
        pass


def test_a_remembered_answer_follows_the_trace_file_the_page_holds():
    lines = TRACE.read_bytes().splitlines(keepends=True)
    short, long = FileSource(b"".join(lines[:300]), "mine.jsonl"), FileSource(b"".join(lines[:400]), "mine.jsonl")
    STORE.answers.clear()
    request = {**BASE, "action": {"type": "trace", "name": "mine.jsonl"}}
    with_short = view.handle_json(json.dumps(request), {"user": short})
    with_long = view.handle_json(json.dumps(request), {"user": long})
    without = view.handle_json(json.dumps(request), None)
    assert len({with_short, with_long, without}) == 3
    assert json.loads(with_long)["summary"]["requests"] == 400
    assert with_long == fresh(request, {"user": long}) and without == fresh(request)


def test_figures_drawn_from_memory_are_the_figures_drawn_afresh():
    STORE.forget_drawings()
    hash_ = ""
    for controls in ({}, {"ctl:crossover.queued": 7}, {"ctl:fleet.replicas": 6}, {"ctl:money.gpu_usd_per_hour": 5},
                     {"ctl:crossover.queued": 2}, {"ctl:fleet.replicas": 4}):
        request = {**BASE, "hash": hash_, "controls": controls or None}
        remembered = view.handle(request)
        assert sent(remembered) == fresh(request)
        hash_ = remembered["hash"]


def test_an_answer_writes_the_figures_it_drew_before_from_their_kept_text_and_the_text_is_the_same():
    """A new seed reruns the fleet but not the explainers: their patches are written from the text kept of them."""
    STORE.forget_drawings()
    STORE.texts.clear()
    for hash_ in ("seed=2", "seed=3", "seed=3&crossover.queued=7", "seed=4"):
        state = view._state_of({**BASE, "hash": hash_}, None)
        answer = view.answer(state, view.derive(state))
        bokeh = answer["patches"]["bokeh"]
        kept = [t for t, p in bokeh.items() if (k := STORE.texts.get(id(p))) is not None and k[1] is not None]
        assert view._as_json(answer) == sent(answer)
        assert '"f64":' in view._as_json(answer)  # the charts' columns go packed
    assert "src:crossover" in kept and "src:join_alone" in kept  # seed 4: both as seed 2 drew them, kept since
    assert not any(t.startswith(("src:ttft", "src:hit", "src:load")) for t in kept)  # the fleet's: drawn anew


@pytest.mark.parametrize("text", [{}, {"hardware.preset": "llama8b_a100"}], ids=["lab", "a100"])
def test_each_figure_reads_only_what_it_declares(text):
    """The drawing memo redraws a figure only when a key it declares (or, for the fleet's figures, the run)
    changes: any other key must leave its data and caption as they are."""
    scenario = Scenario().with_text(text)
    result = view.run(scenario)
    drawn = {name: (fig.data(Context(scenario, result, view.run)), fig.caption(Context(scenario, result, view.run)))
             for name, fig in FIGURES.items()}
    checked = 0
    for key in KEYS:
        changed = another_value(scenario, key)
        if changed is None:
            continue
        for name, fig in FIGURES.items():
            if (fig.reads and key.startswith(fig.reads)) or (fig.fleet and fleet_key(changed) != fleet_key(scenario)):
                continue
            c = Context(changed, result, view.run)
            assert (fig.data(c), fig.caption(c)) == drawn[name], f"{name} reads {key}, which it does not declare"
            checked += 1
    assert checked > 300


@pytest.mark.parametrize("text", [{}, {"fleet.decode": "true"}, {"traffic.kind": "agent", "traffic.agent_fanout": "4"},
                                  {"fleet.replicas": "6", "router.kind": "cache_aware", "fleet.memory_gb": "2"}],
                         ids=["lab", "serving", "agents", "evicting"])
def test_one_run_gives_the_result_and_the_trees_that_two_runs_give(text):
    scenario = Scenario().with_text(text)
    result, trees = simulate_with_trees(scenario, limit=40_000)
    assert result == simulate(scenario, limit=40_000)
    assert trees == tree_at(scenario)


class FakeTree:
    def __init__(self, held: int):
        self.held, self.total_tokens = held, held
        self.root = SimpleNamespace(children={"k": None} if held else {})  # routers peek only below a first key held

    def peek(self, keys) -> int:
        return self.held


class FakeReplica:
    cache = True

    def __init__(self, index: int, backlog: float, last_routed: int, held: int, in_flight: int):
        self.index, self._backlog, self.last_routed, self._in_flight = index, backlog, last_routed, in_flight
        self.tree = FakeTree(held)

    def backlog(self, now: float) -> float:
        return self._backlog

    def in_flight(self) -> int:
        return self._in_flight


class FakeRequest:
    keys = ("k",)


@given(st.lists(st.tuples(st.sampled_from([0.0, 0.5, 1.25, 3.0]), st.integers(-1, 3), st.sampled_from([0, 10, 20]),
                          st.integers(0, 3)), min_size=1, max_size=8))
def test_the_routers_shortcuts_pick_what_comparing_whole_tuples_picks(rows):
    """Ties are common (an idle fleet, an empty cache): least backlog, longest match and fewest in flight break
    them as the tuples (-match, backlog, last routed, index) order them."""
    replicas = [FakeReplica(i, *row) for i, row in enumerate(rows)]
    view_ = View(FakeRequest(), replicas, 0.0)  # type: ignore[arg-type]
    assert view_.least_loaded() == min(replicas, key=lambda r: (r._backlog, r.last_routed, r.index)).index
    assert view_.longest_match() == min(replicas, key=lambda r: (-r.tree.held, r._backlog, r.last_routed,
                                                                 r.index)).index
    assert view_.fewest_in_flight() == min(replicas, key=lambda r: (r._in_flight, r._backlog, r.last_routed,
                                                                    r.index)).index


def test_html_is_written_as_the_browser_writes_it_back():
    write = view._as_browsers_write
    assert write('<button type="button" disabled data-autofocus>Go</button>') == \
        '<button type="button" disabled="" data-autofocus="">Go</button>'
    assert write('<p title="it&#x27;s &quot;x&quot; &lt;b&gt;">it&#x27;s &quot;x&quot; &lt;b&gt; &amp;</p>') == \
        '<p title="it\'s &quot;x&quot; &lt;b&gt;">it\'s "x" &lt;b&gt; &amp;</p>'
    assert write('<svg viewBox="0 0 1 1"><rect x="1"/><path d="M3 5V3.5" /></svg><br/>') == \
        '<svg viewBox="0 0 1 1"><rect x="1"></rect><path d="M3 5V3.5"></path></svg><br>'
    assert write("no tags, disabled > here") == "no tags, disabled > here"


def test_a_random_walk_of_changes_answers_as_a_fresh_view_does():
    """Dragging sliders back and forth (the answer memo, the drawing memo and the runs all in play)."""
    rng = random.Random(7)
    STORE.answers.clear()
    hash_ = ""
    for _ in range(12):
        key, values = rng.choice([("ctl:fleet.replicas", (2, 3, 4)), ("ctl:crossover.queued", (1, 4)),
                                  ("ctl:roofline.batch", (8, 64))])
        request = {**BASE, "hash": hash_, "controls": {key: rng.choice(values)}, "live": rng.random() < 0.5}
        text = view.handle_json(json.dumps(request))
        assert text == fresh(request)
        hash_ = json.loads(text)["hash"]


def test_the_snapshots_first_answer_is_kept_alone_and_the_same_as_working_it_out():
    """`view.keep_first_answer` (the build's snapshot): the page's first request answered, everything behind it forgotten."""
    first = json.dumps({"hash": "", "progress": {}, "memo": {}})
    STORE.answers.clear()
    view.keep_first_answer(first)
    assert len(STORE.answers) == 1 and not STORE.runs and not any(STORE.sizes()[n] for n in STORE.sizes() if n.startswith('drawn:'))  # the snapshot carries no run
    kept = view.handle_json(first)  # from the memo
    assert len(STORE.answers) == 1 and not STORE.runs
    assert kept == fresh({"hash": "", "progress": {}, "memo": {}})
