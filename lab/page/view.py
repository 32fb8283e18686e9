"""The page's view: from the page's state to plain JSON patches.

Runs in the browser under Pyodide (in a Web Worker) and in CPython at build
time, so the first paint and every later one come from the same code.
Standard library, `model` and `missions` only: no Panel, no Bokeh here.

One request from the page: `{"hash": <current URL hash>, "controls":
{widget tag: value} or null, "live": true while a slider is still moving,
"action": {...} or null, "progress": {mission id: stars}, "memo": {...}}`.
The hash is the one place the state lives; controls and actions change it.
Progress and the memo are what the browser keeps for the player (see
`lab.page.missionview`). The answer: `{"hash", "notices", "summary", "progress",
"memo", "patches": {"bokeh": {model name: {property: value}}, "dom": {CSS
selector: {"text"|"html"|"attrs"|"hidden"|"open": ...}}}}`, which one generic
function in `static/bridge.js` applies.

The steps, each a pure function returning new values (none changes its
arguments, so they can be called in any order, and twice):

    read_state(request) -> State        the hash and the progress sent
    update(state, request) -> State     controls and actions applied
    settle(state) -> State              what the page cannot show dropped, with notices
    pin(state, request) -> State        a baseline pinned or cleared, the axes locked or freed (`lab.page.compare`)
    derive(state) -> Derived            simulation, chosen mission, verdict, stars, open missions
    patches(state, derived) -> dict     what the page shows; answer() wraps it for the bridge

What a change cannot alter is remembered, each memo keyed by everything its
value depends on: whole answers by the state (`handle_json`), runs by the
keys the simulation reads (`run`, which also hands the tree figure the trees
at the run's end), the synthetic traffic by the keys it reads (`traffic`: a
fleet or router change sends the same requests), a URL hash's reading by its
text (`_read_hash`), and each figure's drawing by what it declares it reads
(`_drawn`). Equal keys give equal values, so a remembered answer is the one
a fresh view would give (tests/test_view_memo.py, test_traffic_memo.py,
test_hash_memo.py).
"""

import contextlib
import dataclasses
import functools
import gc
import html
import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from operator import attrgetter
from types import MappingProxyType
from typing import Any

from lab.page import compare, figures, missionview, teach, wire
from lab.page.controls import (
    CONTROLS,
    EVENT_NAMES,
    check_event_inputs,
    control_patches,
    describe_event,
    event_input_patches,
    for_people,
    in_words,
    read_controls,
    section_patches,
)
from lab.page.figures import (
    EMBED_CONTROLS,
    EMBED_FIGURES,
    FIGURES,
    TREE_WIDGETS,
    Context,
    Figure,
    embed_figures,
    fleet_key,
    fleetview,
    tree_page,
)
from lab.page.fitfile import ProfileError, fit_from_json
from lab.page.missionview import Memo, Play
from lab.page.store import STORE
from lab.page.tracepage import MISSION_KEY, Source, TraceRun, mission_file, replay_source, summary_html
from lab.page.urlstate import HashState, capped, read_hash, write_hash
from missions import Mission, Verdict, score
from model import (
    PRESETS,
    Request,
    Result,
    Scenario,
    ScenarioError,
    TooManyRequests,
    TraceError,
    explain,
    fit_of_text,
    fit_text,
    generate,
    nearest_gpu,
    simulate_with_trees,
    traffic_key,
)

__all__ = ["METRICS", "Derived", "Shown", "State", "answer", "derive", "handle", "handle_json", "keep_first_answer",
           "patches", "prefetch_json", "read_shown", "read_state", "render", "run", "settle", "traffic", "update"]

METRICS = (  # headline: result key, label, how to show it
    ("hit_rate", "Hit rate", "{:.1%}"),
    ("ttft_p50_ms", "TTFT p50", "{:,.0f} ms"),
    ("ttft_p99_ms", "TTFT p99", "{:,.0f} ms"),
    ("throughput_rps", "Throughput", "{:.2f} req/s"),
    ("replica_count", "Replicas", "{:d}"),
)

EVENT_COLOURS = {"timestamp": "#d62728", "surge": "#9467bd", "burst": "#ff7f0e"}
EVENT_FIELDS = {"timestamp": ("evt:at",), "surge": ("evt:at", "evt:duration"),
                "burst": ("evt:at", "evt:duration", "evt:factor")}  # the event inputs each kind reads
PAGE_BUDGET = 40_000  # requests the page simulates per change at most (about a second in a browser)
SERVING_BUDGET = 15_000  # the same in serving mode, whose requests cost about 2.5 times as much


MAX_TRACE_NAME = 120  # characters of a trace file's name kept in the URL
GPU_FIT_MAX_CHARS = 1 << 20  # of a GPU fit file's text read (one is a few hundred characters)
_SLIDERS = {c.name: c for c in CONTROLS if c.widget == "slider"}  # widget tag -> control, for `prefetch_json`


def budget(scenario: Scenario) -> int:
    """Requests the page simulates per change at most, for this scenario's mode."""
    return SERVING_BUDGET if scenario.fleet.decode else PAGE_BUDGET


@dataclass(frozen=True, slots=True)
class State:
    """Everything the page shows is a function of this. Its mappings are read-only views."""

    scenario: Scenario
    page: Mapping[str, str] = field(default_factory=dict)  # page keys of the hash: mission, unlock
    progress: Mapping[str, int] = field(default_factory=dict)  # best stars by mission id (unknown ids too)
    notices: tuple[str, ...] = ()  # for people to read: what was dropped or changed, and why
    memo: Memo = Memo()  # the rest of what the browser keeps for the player: best setups, played hashes, way back
    playing: bool = False  # the setup was reached from the chosen mission's start by the page's controls
    scored: bool = False  # ...by a settled control change in this request: its stars count
    live: bool = False  # this request's change is a slider still moving: costly figures wait for it to settle
    asking: bool = False  # waiting for the player to confirm "Reset progress"
    used: Mapping[str, float] = field(default_factory=dict)  # event inputs an added event used, to show them
    shown: "Shown | None" = None  # an embed's figures and controls (from its URL's query); None: the whole page
    files: Any = None  # the trace files the page holds (see `handle`); `trace=<name>` plays the player's
    baking: bool = False  # rendered for the build: figures that never change are drawn this once

    def __post_init__(self) -> None:
        object.__setattr__(self, "page", MappingProxyType(dict(self.page)))
        object.__setattr__(self, "progress", MappingProxyType(dict(self.progress)))
        object.__setattr__(self, "used", MappingProxyType(dict(self.used)))

    def noting(self, *notices: str) -> "State":
        return dataclasses.replace(self, notices=self.notices + notices)

    @property
    def play(self) -> Play:
        return Play(self.progress, self.memo, self.playing, self.scored, self.asking)


@dataclass(frozen=True, slots=True)
class Derived:
    """What follows from a state: pure, so computing it twice gives equal values."""

    result: Result
    summary: dict[str, Any]  # the headline numbers (the result's summary and the replica count)
    mission: Mission | None  # the chosen mission, if it can be opened
    verdict: Verdict | None  # the setup scored on it
    progress: dict[str, int]  # the state's progress with this verdict's stars counted (if they count)
    open_ids: frozenset[str]  # missions the player may open, after this verdict
    play: Play  # the player's state after this verdict: progress, best setups
    seen: dict[str, Any] | None = None  # what the router saw for the request the URL asks about (`explain=`)
    traced: TraceRun | None = None  # the replay of a trace file (the player's, or the mission's), when one plays
    fetch: dict[str, str] | None = None  # a mission's trace the page must fetch first: its key, URL and name
    base: dict[str, Any] | None = None  # the baseline's headline numbers, when the run is compared with one
    base_result: Result | None = None
    base_name: str = ""  # "the pinned baseline", "the mission's broken start"
    teach: missionview.Teach = missionview.Teach()  # the guess, hints and standing the mission panel shows
    land: dict[str, dict] | None = None  # the landscape chart's patches (lab.page.teach), when a distribution is known


@dataclass(frozen=True, slots=True)
class Shown:
    """What an embed shows (its URL's `?figure=...&controls=...`): those figures, those controls' boxes."""

    figures: tuple[str, ...]
    controls: tuple[str, ...]


def read_shown(raw: Any) -> tuple[Shown | None, tuple[str, ...]]:
    """An embed's query as sent by the page (`{"figure": "a,b", "controls": "k1,k2"}`), checked name by name.

    None (not an embed) shows the whole page. Without `figure`, an embed shows the headline and the two
    charts over time; without `controls`, the controls its figures declare (or the fleet's first few).
    """
    if not isinstance(raw, Mapping):
        return None, ()
    notices: list[str] = []

    def names(param: str, known: tuple[str, ...]) -> tuple[str, ...] | None:
        text = raw.get(param)
        if not isinstance(text, str):
            return None
        wanted = [n.strip() for n in text.split(",") if n.strip()]
        unknown = [n for n in wanted if n not in known]
        if unknown:
            listed = ", ".join(repr(n[:40]) for n in unknown[:3])
            notices.append(f"The embed's {param}= names {listed}, which this lab does not have; "
                           f"it may name {', '.join(known[:12])}{', ...' if len(known) > 12 else ''}.")
        return tuple(dict.fromkeys(n for n in wanted if n in known))

    figures = names("figure", embed_figures())
    if not figures:
        figures = EMBED_FIGURES
    controls = names("controls", tuple(c.key for c in CONTROLS))
    if controls is None:
        declared = [k for name in figures if name in FIGURES for k in FIGURES[name].controls]
        fleet = any(name not in FIGURES or FIGURES[name].fleet for name in figures)  # the headline is the fleet's
        controls = tuple(dict.fromkeys(declared)) or (EMBED_CONTROLS if fleet else ())
    return Shown(figures, controls), tuple(notices)


def run(scenario: Scenario) -> Result:
    """`simulate` within the page's budget, remembering the last few runs by the keys the simulation reads:
    moving an article figure's slider, or dragging a slider back where it was, reuses a run."""
    return STORE.runs.remember(fleet_key(scenario), lambda: _simulated(scenario))  # type: ignore[no-any-return]


def _simulated(scenario: Scenario) -> Result:
    """`simulate` within the budget; the trees at the run's end, which the same pass gives, go to the store's
    trees, keyed as the tree figure looks, so that drawing the tree does not run the scenario a second time."""
    limit = budget(scenario)
    requests = traffic(scenario, limit) if _open_chat(scenario) else None
    result, trees = simulate_with_trees(scenario, limit=limit, requests=requests)
    STORE.trees.put(figures.tree_key(scenario, None), trees)
    return result


def _open_chat(scenario: Scenario) -> bool:
    """Whether a run takes its requests from `generate` (lab mode's chat): the traffic `traffic` remembers."""
    return not scenario.fleet.decode and scenario.traffic.kind == "chat"


def traffic(scenario: Scenario, limit: int) -> tuple[Request, ...]:
    """`generate(scenario, limit)`, remembered for the last few traffic keys (`STORE.traffic`): a change of the
    fleet or the router sends the same requests, which are tuples, so one run's can serve the next. Raises
    `TooManyRequests` as `generate` does (and remembers nothing then)."""
    return STORE.traffic.remember((traffic_key(scenario), limit), lambda: tuple(generate(scenario, limit)))


# -- entry points ------------------------------------------------------------

def handle_json(request: str, files: Any = None) -> str:
    """`handle` over JSON text: what the worker calls, with the trace files the page holds.

    The answer is a function of the state the request leads to (and of the files it reads), so the last
    answers are remembered by that state (`STORE.answers`): dragging a slider back over values it has shown
    answers at once.
    """
    with _collector_paused():
        state = _state_of(json.loads(request), files)
        return STORE.answers.remember(_state_key(state), lambda: _as_json(answer(state, derive(state))))


@contextlib.contextmanager
def _collector_paused() -> Iterator[None]:
    """Python's cyclic garbage collector off while an answer is worked out, back as it was after.

    A run makes tens of thousands of objects that live until its end (requests, tree nodes, records), and
    the collector, which counts allocations, would walk them again and again while they are made: a tenth
    of a new setup's time with 16 replicas. Nothing is kept from it: the trees' cycles are collected after,
    when the collector next runs.
    """
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def prefetch_json(request: str | None = None, files: Any = None) -> bool:
    """Answer ahead of time what a slider is likely to ask next, while the page asks nothing; True if more is left.

    With `request` (the JSON text of the request just answered), plan: if it moved one slider, the same
    request one step of that slider either way, the way it was going first, as the page would send it after
    this answer (its hash, progress and memo). Without, answer the next planned request into the answer
    memo, as `handle_json` does, and drop it from the plan. The worker calls this in idle time, one answer
    per call, so a request that arrives meanwhile waits for one at most. What a later request returns does
    not change: every memo is keyed by all its value depends on (tests/test_view_prefetch.py).
    """
    if isinstance(request, str):  # anything else (None, or a JavaScript null as Pyodide hands it over): no request
        STORE.warm[:] = _neighbours(json.loads(request), files)
    elif STORE.warm:
        handle_json(STORE.warm.pop(0), files)
    return bool(STORE.warm)


def _neighbours(request: Mapping[str, Any], files: Any) -> list[str]:
    """The requests one slider step either side of `request`'s one slider change (see `prefetch_json`)."""
    controls = request.get("controls")
    if request.get("action") or not isinstance(controls, dict) or len(controls) != 1:
        return []
    [(name, raw)] = controls.items()
    control = _SLIDERS.get(name)
    if control is None or isinstance(raw, bool) or not isinstance(raw, (int, float)):
        return []
    state = _state_of(request, files)
    answered = STORE.answers.get(_state_key(state))
    if answered is None:  # not the request just answered (or already pushed out): nothing to go on
        return []
    reply = json.loads(answered)
    start, end, step = control.range_for("trace" in state.page)
    was = _read_hash(str(request.get("hash") or "")).scenario.get(control.key)
    sides = (step, -step) if not isinstance(was, (int, float)) or raw >= was else (-step, step)
    out = []
    for delta in sides:
        value = raw + delta
        if start - step / 2 <= value <= end + step / 2:
            value = int(value) if isinstance(raw, int) and float(step).is_integer() else value
            out.append(json.dumps({**request, "controls": {name: value}, "hash": reply["hash"],
                                   "progress": reply["progress"], "memo": reply["memo"]}))
    return out


def keep_first_answer(request: str) -> None:
    """Answer `request` (JSON text) now, then forget all but that answer.

    The build's memory snapshot (scripts/snapshot.mjs) answers the page's first request for the default
    setup this way: a restored worker has the answer at hand and has paid every first call's cost (imports
    made on first use, tables built once), without carrying the run, its trees and drawings in the snapshot.
    """
    handle_json(request)
    STORE.forget()
    figures.forget()


def handle(request: Mapping[str, Any], files: Any = None) -> dict:
    """Apply a request's controls or action to its hash, simulate, and describe the page.

    `files` holds the trace files the page has (`files.get(key)` -> a `lab.page.tracepage.Source` or None): "user",
    the one the player chose, and "mission:<id>", the traffic of a mission that replays a trace.
    """
    state = _state_of(request, files)
    return answer(state, derive(state))


def _state_of(request: Mapping[str, Any], files: Any) -> State:
    return pin(settle(update(read_state(request, files), request)), request)


def _state_key(state: State) -> tuple:
    """Everything of `state` that its answer depends on, hashable: equal keys, equal answers.

    The files the page holds enter by name and size (as `trace_run` remembers their replays): the player's
    trace, the trace of the mission the page names, and the missions' sweep. The one thing an answer reads
    besides the state is the clock, in a mission: whether a hint is due (`lab.page.teach`), which enters as such.
    """
    files = tuple((key, None if source is None else (source.name, source.size))
                  for key in ("user", MISSION_KEY + state.page.get("mission", ""), teach.SWEEPS_KEY)
                  for source in [_file(state, key)])
    memo = state.memo
    due = memo.since is not None and missionview.clock() - memo.since >= missionview.HINT_AFTER_S
    return (state.scenario, tuple(sorted(state.page.items())), tuple(sorted(state.progress.items())), state.notices,
            (tuple(sorted(memo.best.items())), memo.played, memo.back, memo.since, due), state.playing, state.scored,
            state.live, state.asking, tuple(sorted(state.used.items())), state.shown, state.baking, files)


def render(scenario: Scenario, page: Mapping[str, str] | None = None, notices: tuple[str, ...] | list[str] = (),
           progress: Mapping[str, int] | None = None) -> dict:
    """The full page description for a scenario (what the build bakes into the page)."""
    state = settle(State(scenario, page or {}, progress or {}, tuple(notices), baking=True))
    return answer(state, derive(state))


# -- the state -----------------------------------------------------------------

def read_state(request: Mapping[str, Any], files: Any = None) -> State:
    """The state a request starts from: its hash, what the browser keeps for the player, the file it holds.

    The setup is being played if the page itself wrote this hash while playing (a reload, or a way back).
    """
    hashed = _read_hash(str(request.get("hash") or ""))
    memo = missionview.read_memo(request.get("memo"))
    playing = "mission" in hashed.page and write_hash(hashed.scenario, hashed.page) in memo.played
    shown, notices = read_shown(request.get("embed"))
    return State(hashed.scenario, hashed.page, missionview.read_progress(request.get("progress")),
                 hashed.notices + notices, memo, playing, shown=shown, files=files)


def _read_hash(text: str) -> HashState:
    """`read_hash(text)`, remembered by the text for the last few hashes (each change sends the hash the answer
    before wrote, and building a scenario checks every field): the page keys come as a fresh dict each time."""
    found = _hash_states(text)
    return dataclasses.replace(found, page=dict(found.page))


@functools.lru_cache(maxsize=16)
def _hash_states(text: str) -> HashState:
    return read_hash(text)


def update(state: State, request: Mapping[str, Any]) -> State:
    """The state after the request's control changes, then its action.

    A settled control change (not `live`) while playing makes the new setup count for stars.
    """
    controls, action = request.get("controls"), request.get("action")
    if isinstance(controls, dict) and any(k in controls for k in TREE_WIDGETS):  # the tree's: page keys, no re-run
        state = dataclasses.replace(state, page=tree_page(state.page, controls))
        controls = {k: v for k, v in controls.items() if k not in TREE_WIDGETS}
    if isinstance(controls, dict) and controls:
        state = _with_controls(state, controls)
        asking = state.page.get("guess") == missionview.ASKING  # changing the setup instead of guessing skips it
        state = dataclasses.replace(state, scored=state.playing and not request.get("live"),
                                    live=bool(request.get("live")),
                                    page={k: v for k, v in state.page.items()
                                          if k != "explain" and not (k == "guess" and asking)})
    if isinstance(action, dict) and action.get("type") in missionview.ACTIONS:
        scenario, page, play, notices = missionview.apply_action(action, state.scenario, state.page, state.play)
        state = dataclasses.replace(state, scenario=scenario, page=page, progress=play.progress, memo=play.memo,
                                    playing=play.playing, scored=play.scored, asking=play.asking).noting(*notices)
    elif isinstance(action, dict) and action.get("type") == "explain":
        state = _with_explain(state, action.get("request"))
    elif isinstance(action, dict) and action.get("type") == "example":
        state = _with_example(state, action.get("figure"))
    elif isinstance(action, dict) and action.get("type") in ("gpu_fit", "gpu_fit_off"):
        state = _with_gpu_fit(state, action)
    elif isinstance(action, dict) and action.get("type") == "defaults":
        state = _with_defaults(state)
    elif isinstance(action, dict) and action.get("type") in ("trace", "trace_off"):
        page = {k: v for k, v in state.page.items() if k not in ("trace", "mission", "explain")}
        if action["type"] == "trace" and isinstance(action.get("name"), str):
            page["trace"] = action["name"][:MAX_TRACE_NAME]
        state = dataclasses.replace(state, page=page, playing=False, scored=False)
    elif isinstance(action, dict) and action:
        state = dataclasses.replace(_with_event_action(state, action), scored=state.playing)
    if not request.get("live"):  # a free-play guess is checked against the first settled setup after it
        state = dataclasses.replace(state, page=missionview.free_guess(state.page, state.scenario))
    return state


def _with_defaults(state: State) -> State:
    """Free play back to the default setup, as a new page opens it (missions opened for the room stay open)."""
    if "mission" in state.page:
        return state.noting("A mission keeps its own setup; leave the mission to go back to the default one.")
    page = {k: v for k, v in state.page.items() if k == "unlock"}
    return dataclasses.replace(state, scenario=Scenario(), page=page, playing=False, scored=False)


def _with_explain(state: State, request: Any) -> State:
    """Ask what the router saw for one request (`explain=<id>` in the URL), or close that panel (None)."""
    page = {k: v for k, v in state.page.items() if k != "explain"}
    if isinstance(request, int) and not isinstance(request, bool) and request >= 0:
        page["explain"] = str(request)
    return dataclasses.replace(state, page=page)


def _with_gpu_fit(state: State, action: Mapping[str, Any]) -> State:
    """Run the measured presets on the GPU fit file a person chose (its JSON text), or on their own GPUs again.

    With a preset no fit prices (the lab's, the article's), the Llama 3 8B preset of the GPU closest to the fit
    is chosen, so that the choice shows.
    """
    if "mission" in state.page:
        return state.noting("A GPU fit changes the hardware a mission keeps fixed; leave the mission to use it.")
    if action["type"] == "gpu_fit_off":
        return dataclasses.replace(state, scenario=state.scenario.with_values({"hardware.gpu_fit": ""}))
    text, name = action.get("text"), str(action.get("name") or "the file")[:MAX_TRACE_NAME]
    if not isinstance(text, str):
        return state.noting(f"{name}: not a GPU fit; make one with prefix-lab profile fit FILE.csv --gpu NAME.")
    try:
        fit = fit_from_json(text[:GPU_FIT_MAX_CHARS], name)
    except ProfileError as exc:
        return state.noting(f"{exc}.")
    values: dict[str, Any] = {"hardware.gpu_fit": fit_text(fit)}
    if not PRESETS[state.scenario.hardware.preset].gpu:
        gpu = nearest_gpu(fit.gemm_flops_per_s)
        values["hardware.preset"] = next(p for p in ("llama8b_a100", "llama8b_h100") if PRESETS[p].gpu == gpu)
    return dataclasses.replace(state, scenario=state.scenario.with_values(values))


def _with_example(state: State, name: Any) -> State:
    """Load the setup a figure offers as its example (free play only: a mission keeps its own keys fixed)."""
    fig = FIGURES.get(name) if isinstance(name, str) else None
    if fig is None or not fig.example:
        return state.noting(f"No figure {str(name)[:40]!r} with an example to load.")
    if "mission" in state.page:
        return state.noting("A figure's example changes keys a mission keeps fixed; leave the mission to load it.")
    return dataclasses.replace(state, scenario=state.scenario.with_text(dict(fig.example)))


def settle(state: State) -> State:
    """Drop what the page cannot show, saying so: a setup too big to simulate per change, a mission not open."""
    state = _with_base(_with_trace(_within_budget(state)))
    mission, notice = missionview.chosen(state.page, state.progress)
    if mission is None and state.playing:
        state = dataclasses.replace(state, playing=False, scored=False)  # free play earns nothing
    if notice is None:
        return state
    page = {k: v for k, v in state.page.items() if k != "mission"}
    return dataclasses.replace(state, page=page).noting(notice)


def _with_base(state: State) -> State:
    """Keep a pinned baseline only if it reads cleanly as a setup; else drop it (and its locked axes), saying so."""
    pinned = state.page.get("base")
    if pinned is None or (pinned and not _read_hash(pinned).notices):
        return state
    page = {k: v for k, v in state.page.items() if k not in ("base", "axes")}
    return dataclasses.replace(state, page=page).noting(
        "The link's baseline (base=) is not a setup this lab can read; it was dropped. Pin one again.")


def _with_trace(state: State) -> State:
    """Keep `trace=<name>` only if the page holds that file and it replays on this setup; else say why.

    A trace brings its own traffic: events and dynamic text (which shape synthetic prompts) are dropped,
    and a mission, which plays its own traffic, closes the trace.
    """
    name = state.page.get("trace")
    if name is None:
        return state
    page = {k: v for k, v in state.page.items() if k != "trace"}
    if "mission" in state.page:
        return dataclasses.replace(state, page=page).noting(
            "A mission plays its own traffic: the trace is put aside (choose it again after the mission).")
    source = _file(state, "user")
    if source is None or source.name != name:
        return dataclasses.replace(state, page=page).noting(
            f"The trace {name[:60]!r} is not loaded in this page: a file you choose never leaves your browser, so "
            "a reload or a link forgets it. Choose the file again (Your own traffic, below the charts).")
    if state.scenario.events or state.scenario.dynamic_text != "none":
        state = dataclasses.replace(state, scenario=state.scenario.with_values(
            {"events": [], "dynamic_text": "none"})).noting(
            "A trace brings its own prompts: its events and dynamic text were dropped.")
    try:
        trace_run(state.scenario, source)
    except (TraceError, ScenarioError) as exc:
        return dataclasses.replace(state, page=page).noting(f"{name[:60]} cannot be replayed: {exc}")
    return state


def _file(state: State, key: str) -> Source | None:
    return None if state.files is None else state.files.get(key)


def trace_run(scenario: Scenario, source: Source, limit: int | None = None) -> TraceRun:
    """`replay_source` within the page's budget (or `limit`), remembered as runs are (by file and by the keys
    the simulation reads)."""
    limit = budget(scenario) if limit is None else min(limit, budget(scenario))
    key = ("trace", source.name, source.size, limit, fleet_key(scenario))
    return STORE.runs.remember(key, lambda: replay_source(scenario, source, limit))  # type: ignore[no-any-return]


def _with_controls(state: State, controls: Mapping[str, Any]) -> State:
    scenario, notices = state.scenario, []
    for key, text in read_controls(controls).items():  # one by one: a bad value leaves the rest standing
        try:
            scenario = scenario.with_text({key: text})
        except ScenarioError as exc:
            notices.append(for_people(str(exc)))
    return dataclasses.replace(state, scenario=scenario).noting(*notices)


def _with_event_action(state: State, action: Mapping[str, Any]) -> State:
    kind, scenario = action.get("type"), state.scenario
    events: list[Any] = list(scenario.events)  # Event values; with_values takes them as they are
    if kind == "add_event":
        event_kind = str(action.get("kind"))
        raw = action.get("inputs")
        used, said = check_event_inputs(raw if isinstance(raw, dict) else {}, scenario,
                                        EVENT_FIELDS.get(event_kind, ()))
        state = dataclasses.replace(state, used=used).noting(*said)
        new = {"kind": event_kind, "at_s": used.get("evt:at")}
        if event_kind in ("surge", "burst"):
            new["duration_s"] = used["evt:duration"]
        if event_kind == "burst":
            new["factor"] = used["evt:factor"]
        try:
            return dataclasses.replace(state, scenario=scenario.with_values({"events": [*events, new]}))
        except ScenarioError as exc:
            return state.noting(f"Could not add that event: {exc}")
    if kind == "remove_event":
        index = action.get("index")
        if isinstance(index, int) and 0 <= index < len(events):
            del events[index]
        return dataclasses.replace(state, scenario=scenario.with_values({"events": events}))
    if kind == "clear_events":
        return dataclasses.replace(state, scenario=scenario.with_values({"events": []}))
    return state.noting(f"Unknown action {str(kind)[:40]!r} ignored.")


def _within_budget(state: State) -> State:
    """Keep the page responsive: a setup sending more than `budget()` requests is shown at the lab's size.

    The requests are counted, not estimated (overlapping bursts multiply the
    rate), and the count stops as soon as it passes the budget. Chat setups at
    most half the budget by the plain rate x duration x turns estimate, the
    lab's own sizes, skip the count. Agent runs and closed users send each
    request when the one before is answered, so they cannot be counted
    without running them: their run is made here (and remembered, so
    `derive` does not make it again) and stops as soon as it passes the budget.
    """
    scenario = state.scenario
    limit = budget(scenario)
    if _fits(scenario, limit):
        return state
    default = Scenario()
    size = {"duration_s": default.duration_s, "traffic.session_rate": default.traffic.session_rate,
            "traffic.turns_mean": default.traffic.turns_mean, "traffic.agent_rate": default.traffic.agent_rate,
            "traffic.users": default.traffic.users}
    kept = [e for e in scenario.events if e.at_s < default.duration_s]
    smaller = scenario.with_values({**size, "events": kept})
    without = "its events"
    if not _fits(smaller, limit):  # its bursts alone multiply the rate past the budget
        smaller = scenario.with_values({**size, "events": [e for e in kept if e.kind != "burst"]})
        without = "its events, bursts left out"
    if not _fits(smaller, limit):  # its traffic's other keys do (agents of 200 calls, each fanning out to 64)
        traffic = {k: v for k, v in default.to_text().items() if k.startswith("traffic.") and k != "traffic.kind"}
        smaller = smaller.with_text(traffic)
        without += ", and the lab's own traffic settings"
    return dataclasses.replace(state, scenario=smaller).noting(
        f"That setup sends more than {limit:,} requests, more than the page simulates per change; showing it "
        f"at the lab's duration and rate with {without}. The command line (prefix-lab run) runs setups of any size.")


def _fits(scenario: Scenario, limit: int) -> bool:
    """Whether `scenario` sends at most `limit` requests (see `_within_budget`)."""
    t = scenario.traffic
    try:
        if t.kind != "chat":
            run(scenario)
        elif scenario.events_of("burst") or t.session_rate * scenario.duration_s * t.turns_mean > limit / 2:
            traffic(scenario, limit)
    except TooManyRequests:
        return False
    return True


# -- what follows from it --------------------------------------------------------

def derive(state: State) -> Derived:
    """Simulate the state's scenario, score it on the chosen mission (its stars count if the state is scored),
    run the baseline it is compared with, and explain one routing decision if the URL asks."""
    mission, _ = missionview.chosen(state.page, state.progress)
    result, traced, fetch = _played(state, state.scenario, mission)
    verdict = None if mission is None or fetch is not None else score(mission, state.scenario, result)
    play = missionview.with_stars(state.play, mission, verdict, state.scenario)
    progress = dict(play.progress)
    base, base_name = _baseline(state, mission)
    base_result = None if base is None or fetch is not None else _played(state, base, mission)[0]
    taught, land = missionview.Teach(), None
    if mission is not None and verdict is not None:
        sweeps = _file(state, teach.SWEEPS_KEY)
        dist = None if sweeps is None else teach.read_sweeps(sweeps).get(mission.id)
        standing = ""
        if dist is not None:
            land, standing = teach.landscape(mission, dist, state.scenario, result)
        elif sweeps is None:
            fetch = {"key": teach.SWEEPS_KEY, "url": teach.SWEEPS_URL, "name": teach.SWEEPS_URL,
                     "missing": "this site was built without the missions' sweep, so no landscape is drawn"}
        guessing = mission.predict is not None and missionview.guessed(state.page) is not None
        start = _played(state, mission.start, mission)[0] if guessing else None
        taught = teach.teach(state.page, play.memo, mission, verdict, start, standing)
    elif mission is None:
        taught = teach.free(state.page, result)
    return Derived(result, _summary(result), mission, verdict, progress,
                   missionview.open_missions(progress, state.page), play, _seen(state, result), traced, fetch,
                   None if base_result is None else _summary(base_result), base_result, base_name, taught, land)


def _played(state: State, scenario: Scenario, mission: Mission | None
            ) -> tuple[Result, TraceRun | None, dict[str, str] | None]:
    """`scenario` run on what the page plays: the player's trace, the mission's trace, or its own traffic.

    Also the replay (if a trace played) and, for a mission whose trace the page has not fetched yet, what
    to fetch: until then the run is the scenario's own traffic, which scores nothing.
    """
    user = _file(state, "user")
    if "trace" in state.page and user is not None:  # settle() kept it only if it replays
        traced = trace_run(scenario, user)
        return traced.result, traced, None
    if mission is not None and mission.trace:
        key = MISSION_KEY + mission.id
        own = _file(state, key)
        if own is None:
            return run(scenario), None, {"key": key, "url": mission_file(mission), "name": mission.trace}
        traced = trace_run(scenario, own, mission.trace_requests)
        return traced.result, traced, None
    return run(scenario), None, None


def _baseline(state: State, mission: Mission | None) -> tuple[Scenario | None, str]:
    """The setup the run is compared with, and its name: the one pinned, else the mission's broken start."""
    pinned = state.page.get("base")
    if pinned:
        return _read_hash(pinned).scenario, "the pinned baseline"
    if mission is not None:
        return mission.start, "the mission's broken start"
    return None, ""


def pin(state: State, request: Mapping[str, Any]) -> State:
    """Pin or clear the baseline, lock or free the axes (actions `pin`, `unpin`, `lock_axes`, `free_axes`).

    Runs after `settle`, as locking needs the settled setup's run: the axes lock where both the current
    run and the baseline fit, and a pinned baseline locks them too.
    """
    action = request.get("action")
    kind = action.get("type") if isinstance(action, dict) else None
    if kind not in ("pin", "unpin", "lock_axes", "free_axes"):
        return state
    cleared = ("base", "axes") if kind in ("pin", "unpin") else ("axes",)
    page = {k: v for k, v in state.page.items() if k not in cleared}
    if kind == "pin":
        page["base"] = write_hash(state.scenario, {}) or "v=1"
    if kind in ("pin", "lock_axes"):
        mission, _ = missionview.chosen(state.page, state.progress)
        probe = dataclasses.replace(state, page=page)
        base, _ = _baseline(probe, mission)
        results = [_played(probe, state.scenario, mission)[0]]
        if base is not None:
            results.append(_played(probe, base, mission)[0])
        page["axes"] = compare.write_axes(compare.bounds(*results))
    return dataclasses.replace(state, page=page)


def _seen(state: State, result: Result) -> dict[str, Any] | None:
    """`explain(...)` for the request `explain=` names, when it exists and every request was served."""
    text = state.page.get("explain", "")
    if not text.isdigit() or int(text) >= result.requests:
        return None
    if "trace" in state.page:
        return {"error": "The routing of a replayed trace is not explained here: the explanation replays the lab's "
                         "own traffic. The slowest requests above are the trace's."}
    if result.rejected:
        return {"error": f"Request {text} cannot be explained here: this setup refused {result.rejected:,} requests "
                         "too big for a replica's memory, so the requests are not one per number. Give the replicas "
                         "more memory."}
    return explain(state.scenario, int(text))


def _summary(result: Result) -> dict:
    data = result.summary()
    data["replica_count"] = len(result.replicas)
    return data


# -- what the page shows ---------------------------------------------------------

def answer(state: State, derived: Derived) -> dict:
    """The answer to the page: its new hash, notices, headline, what to keep for the player, and patches."""
    written = write_hash(state.scenario, dict(state.page))
    return {"hash": written, "notices": list(capped(state.notices)), "summary": dict(derived.summary),
            "progress": dict(derived.progress), "memo": missionview.remember(derived.play, written).to_dict(),
            "patches": patches(state, derived), "fetch": derived.fetch}


def patches(state: State, derived: Derived) -> dict:
    """`{"bokeh": ..., "dom": ...}` for the whole page."""
    scenario, mission = state.scenario, derived.mission
    allowed = None if mission is None else frozenset(mission.controls)
    events_allowed = allowed is None or "events" in allowed
    bokeh = {
        **control_patches(scenario, allowed, traced="trace" in state.page),  # the player's own trace
        **event_input_patches(state.used),
        **{f"act:{kind}": {"disabled": not events_allowed} for kind in EVENT_NAMES},
        "box:events": {"visible": events_allowed},
        **_events_patch(scenario),
        **compare.base_patches(derived.base_result),
    }
    top = compare.tops(_locked_axes(state, derived), compare.bounds(derived.result, derived.base_result))
    bokeh.update(compare.axes_patches(top))
    bokeh.update(compare.off_chart(top, derived.result, derived.base_result))
    context = Context(scenario, derived.result, run, state.page)
    text = scenario.to_text()
    shown = state.shown
    dom: dict[str, dict] = {}
    for fig in FIGURES.values():
        if fig.constant and not state.baking:
            pass  # drawn at build time; nothing it reads can change
        elif fig.costly and state.live:
            pass  # runs the fleet again in other setups: redrawn once the slider settles
        elif shown is None or fig.name in shown.figures:
            data, caption = _drawn(fig, context, text)
            for target, patch in data.items():  # a canvas figure's data is a DOM patch ("#id")
                (dom if target.startswith("#") else bokeh)[target] = patch
            dom[f"#cap-{fig.name}"] = {"text": caption}
        if fig.example:
            dom[f"#try-{fig.name}"] = {"hidden": mission is not None or _holds(text, fig.example),
                                       "html": _example_button(fig.name)}
        if shown is not None:
            dom[f'[data-figure="{fig.name}"]'] = {"hidden": fig.name not in shown.figures}
    if shown is not None:
        dom['[data-figure="headline"]'] = {"hidden": "headline" not in shown.figures}
        for c in CONTROLS:
            if c.key not in shown.controls:
                bokeh[c.box_name] = {"visible": False}
    play = dataclasses.replace(derived.play, playing=state.playing)
    dom |= {
        "#missions": {"hidden": False, "html": missionview.panel_html(mission, derived.verdict, play, derived.open_ids,
                                                                      scenario, derived.teach)},
        "#verdict-chip": {"hidden": mission is None or derived.teach.asking,
                          "html": missionview.chip_html(mission, derived.verdict)},
        "#predict": {"hidden": not derived.teach.asking},
        "#predict-question": {"html": teach.question_html(mission, state.page)},
        "#predict-hint": {"text": "The charts and the number you guess stay hidden until you check it." if mission else
                          "Check it, then change something: the run after your change is compared with it."},
        "main.charts": {"attrs": {"data-veiled": "true" if derived.teach.asking and mission else "false"}},
        "#landscape": {"hidden": derived.land is None},
        ".film-first": {"hidden": mission is not None},  # the film free play shows first; a mission shows its own
    }
    bokeh.update(derived.land or teach.empty_landscape())
    p = teach.asked(mission, state.page) if derived.teach.asking else None
    if p is not None:
        bokeh[missionview.GUESS_INPUT] = {"start": p.lo, "end": p.hi, "step": p.step, "value": (p.lo + p.hi) / 2,
                                          "format": "0%" if p.hi <= 1 else "0,0" if p.step >= 1 else "0,0.0",
                                          "title": _guess_title(p.figure)}
    for key, _, fmt in METRICS:
        value = derived.summary[key]
        dom[f'[data-metric="{key}"]'] = {"text": fmt.format(value), "attrs": {"data-value": _num(value)}}
    if derived.teach.asking and mission is not None and mission.predict is not None:  # held back until the guess
        dom[f'[data-metric="{mission.predict.figure}"]'] = {"text": "?", "attrs": {"data-value": ""}}
    dom |= section_patches(allowed)
    dom["#defaults"] = {"hidden": mission is not None}
    dom["#events-list"] = {"html": _events_html(scenario, removable=events_allowed)}
    dom["#events-hint"] = {"hidden": not events_allowed}
    notes = (in_words(n) for n in derived.result.notes)  # the model writes keys; the page, its controls' names
    notices = capped(state.notices + tuple(n[0].upper() + n[1:] + "." for n in notes))
    dom["#notices"] = {"html": "".join(f"<p>{html.escape(n)}</p>" for n in notices)}
    traced, name = derived.traced, state.page.get("trace")
    if traced is not None and name is None and mission is not None:  # the mission's own trace
        name = f"{mission.trace}, its first {mission.trace_requests:,} requests"
    dom["#readout"] = {"text": _readout(scenario, derived.result, name if traced is not None else None)}
    if derived.fetch is not None and derived.fetch["key"].startswith(MISSION_KEY):
        dom["#readout"] = {"text": f"Loading this mission's traffic, {derived.fetch['name']}…"}
    dom["#trace-summary"] = {"html": "" if traced is None else summary_html(str(name), traced, budget(scenario),
                                                                                   scenario)}
    dom["#trace-off"] = {"hidden": "trace" not in state.page}
    dom.update(_gpu_fit_dom(scenario))
    dom["#deltas"] = {"hidden": derived.base is None,
                      "html": "" if derived.base is None else compare.deltas_html(derived.summary, derived.base,
                                                                                  derived.base_name)}
    dom["#compare-tools"] = {"html": _compare_tools(state, derived)}
    serving = fleetview.serving_html(derived.result)
    dom["#serving"] = {"html": serving, "hidden": not serving}
    held = derived.teach.asking and mission is not None and mission.predict is not None and \
        mission.predict.figure == "router_overestimate"  # the share the player is asked to guess
    dom["#router-info"] = {"html": fleetview.router_html(scenario, derived.result, held_back=held)}
    dom["#slowest"] = {"html": fleetview.slowest_html(derived.result)}
    dom["#replicas"] = {"html": fleetview.replicas_html(derived.result)}
    explained = fleetview.explain_html(derived.seen)
    dom["#explain"] = {"html": explained, "hidden": not explained}
    for patch in dom.values():
        if "html" in patch:
            patch["html"] = _as_browsers_write(patch["html"])
    return {"bokeh": bokeh, "dom": dom}


def _guess_title(figure: str) -> str:
    """The guess slider's title: short, so the value beside it always shows (the question above names the
    figure); its unit when the value does not show one."""
    unit = " (ms)" if figure.endswith("_ms") else " (requests/s)" if figure == "throughput_rps" else ""
    return "Your guess" + unit


def _gpu_fit_dom(scenario: Scenario) -> dict[str, dict]:
    """The "Your own GPU" section: which fit prices the passes, and the way back."""
    hw = scenario.hardware
    if not hw.gpu_fit:
        return {"#gpu-fit-off": {"hidden": True}, "#gpu-fit-status": {"text": ""}}
    fit = fit_of_text(hw.gpu_fit)
    preset = PRESETS[hw.preset]
    said = (f"{preset.label} runs on your GPU fit {fit.name}: {fit.gemm_flops_per_s / 1e12:,.0f} TFLOP/s and "
            f"{fit.gemm_bytes_per_s / 1e12:.2f} TB/s in its matrix products." if preset.gpu else
            f"Your GPU fit {fit.name} is kept, but {hw.preset} is not a measured model: choose a Llama, CodeLlama "
            "or Qwen preset under Model and GPU to run on it.")
    return {"#gpu-fit-off": {"hidden": False}, "#gpu-fit-status": {"text": said}}


_TAG = re.compile(r"<[^<>]+>")
_ATTRIBUTE = re.compile(r"""(\s[^\s="'<>/]+)(="[^"]*"|='[^']*'|=[^\s"'>]+)?""")  # the view quotes values with "
_VOID = frozenset(("area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"))


@functools.lru_cache(maxsize=64)  # most panels read the same from one answer to the next: rewritten once
def _as_browsers_write(text: str) -> str:
    """HTML as the browser writes it back (`innerHTML`). The bridge rewrites a panel only when its HTML
    differs, and a rewritten panel makes the browser lay the page out again before Bokeh can paint: so an
    unchanged panel must read the same. Browsers give a bare attribute an empty value (`disabled=""`), and
    write quotes as themselves where `html.escape` wrote `&#x27;` (and `&quot;` outside attributes)."""
    out, at = [], 0
    for tag in _TAG.finditer(text):
        out.append(text[at:tag.start()].replace("&quot;", '"').replace("&#x27;", "'"))
        written = tag.group()
        if not written.startswith("</"):
            closed = written.endswith("/>")
            written = _ATTRIBUTE.sub(_attribute_as_written, written[:-2].rstrip() + ">" if closed else written)
            if closed:  # `<rect .../>` is written back `<rect ...></rect>`, `<br/>` as `<br>`
                name = written[1:].split(None, 1)[0].rstrip(">")
                written += "" if name in _VOID else f"</{name}>"
        out.append(written)
        at = tag.end()
    out.append(text[at:].replace("&quot;", '"').replace("&#x27;", "'"))
    return "".join(out)


def _attribute_as_written(m: re.Match) -> str:
    value = m.group(2)
    if value is None:
        return m.group(1) + '=""'
    return m.group(1) + (value.replace("&#x27;", "'") if value.startswith('="') else value)


def _drawn(fig: Figure, context: Context, text: Mapping[str, str]) -> tuple[dict[str, dict], str]:
    """`fig`'s data and caption, remembered by what it declares it reads (`text` is the scenario's `to_text()`).

    A figure drawn from the fleet's run is drawn again when the run, a key the simulation reads, a key of its
    `reads` or a page key differs; any other figure when a key of its `reads` does. So moving an article
    figure's slider redraws that figure alone, and a fleet change leaves the article's explainers as they were.
    The last few drawings of each figure are kept (`STORE.drawn`).
    """
    reads = tuple((k, v) for k, v in text.items() if k.startswith(fig.reads)) if fig.reads else ()
    key = (reads, fleet_key(context.scenario), tuple(sorted(context.page.items()))) if fig.fleet else (reads,)
    kept = STORE.drawn(fig.name)
    found = kept.get(key)
    if found is not None and found[0] is (context.result if fig.fleet else None):
        return found[1], found[2]
    data, caption = fig.data(context), fig.caption(context)
    kept.put(key, (context.result if fig.fleet else None, data, caption))
    for target, patch in data.items():
        if not target.startswith("#"):  # a DOM patch's HTML is rewritten in place (`patches`): not kept as text
            STORE.texts.put(id(patch), (patch, None))
    return data, caption


def _as_json(answer: dict) -> str:
    """The answer's JSON, each Bokeh patch's `data` columns packed (`_patch_json`), and each figure's Bokeh patch
    written from the text kept of it.

    Most of an answer's figures are drawings the answer before had too (`_drawn`), and their numbers are most
    of its text. So each drawn patch is written once, and its text is kept beside the patch itself
    (`STORE.texts`, by identity: a drawn patch is never changed).
    """
    parts = []
    for key, value in answer.items():
        if key == "patches":
            text = "{" + ",".join(f"{_key(side)}:{_bokeh_json(p) if side == 'bokeh' else _dumps(p)}"
                                  for side, p in value.items()) + "}"
        else:
            text = _dumps(value)
        parts.append(f"{_key(key)}:{text}")
    return "{" + ",".join(parts) + "}"


_key = json.encoder.encode_basestring_ascii  # an object's key, as JSON writes it


def _bokeh_json(bokeh: dict) -> str:
    """The Bokeh patches' JSON: a drawn patch from its kept text, the others in runs, in order."""
    parts: list[str] = []
    fresh: dict = {}
    for target, patch in bokeh.items():
        kept = STORE.texts.get(id(patch))  # (patch, text): holding the patch, no other object can have its id
        if kept is None:
            fresh[target] = patch
            continue
        if fresh:
            parts.append(_dumps({t: _packed(p) for t, p in fresh.items()})[1:-1])
            fresh = {}
        text = kept[1]
        if text is None:
            text = _dumps(_packed(patch))
            STORE.texts.put(id(patch), (patch, text))
        parts.append(f"{_key(target)}:{text}")
    if fresh:
        parts.append(_dumps({t: _packed(p) for t, p in fresh.items()})[1:-1])
    return "{" + ",".join(parts) + "}"


def _packed(patch: dict) -> dict:
    """A Bokeh patch with its `data` columns packed (`wire.packed`): the one prop the bridge reads them back in."""
    data = patch.get("data")
    return {**patch, "data": wire.packed(data)} if type(data) is dict else patch


_dumps = json.JSONEncoder(separators=(",", ":")).encode  # compact, as the worker sends every answer


def _events_patch(scenario: Scenario) -> dict[str, dict]:
    """The events' spans, which every chart over time shades (one source, shared)."""
    ev = scenario.events
    return {"src:events": {"data": {
        "left": [e.at_s for e in ev],
        "right": [min(e.ends_s(), scenario.duration_s) for e in ev],
        "color": [EVENT_COLOURS[e.kind] for e in ev],
        "label": [EVENT_NAMES[e.kind] for e in ev],
        "y": [round(1 - LABEL_ROW * row, 3) for row in _label_rows([e.at_s for e in ev], scenario.duration_s)],
    }}}


LABEL_ROW = 0.09  # an event label's line, as a share of a chart's height (11px text in about 180px)
LABEL_ROOM = 0.15  # the share of the run's length one label takes across a chart, at most


def _label_rows(starts: list[float], duration_s: float) -> list[int]:
    """A line for each event's label, so that labels of events starting close together do not overprint: each
    takes the first line on which the label before it started at least LABEL_ROOM of the run earlier."""
    last: list[float] = []  # the start of the latest label on each line
    rows = [0] * len(starts)
    for i in sorted(range(len(starts)), key=starts.__getitem__):
        row = next((r for r, t in enumerate(last) if starts[i] - t >= LABEL_ROOM * duration_s), len(last))
        if row == len(last):
            last.append(starts[i])
        last[row] = starts[i]
        rows[i] = row
    return rows


def _locked_axes(state: State, derived: Derived) -> dict[str, float]:
    """The axes' tops as locked in the URL; in a mission compared with its broken start, the start's (the same
    whatever the player changes, so the axes hold still while it is played)."""
    if "axes" in state.page or "base" in state.page or derived.base_result is None:
        return compare.read_axes(state.page.get("axes"))
    return compare.bounds(derived.base_result)


def _compare_tools(state: State, derived: Derived) -> str:
    """The buttons that pin or clear the baseline and lock or free the axes."""
    pinned, locked = "base" in state.page, "axes" in state.page
    guess = ("" if derived.mission is not None or "guess" in state.page else
             ' <button type="button" data-action="guess_next">Guess the next change first</button>')
    pin_button = ('<button type="button" data-action="unpin">Clear the baseline</button>' if pinned else
                  '<button type="button" data-action="pin">Pin this run as the baseline</button>')
    lock_button = (f'<button type="button" data-action="{"free_axes" if locked else "lock_axes"}" '
                   f'aria-pressed="{"true" if locked else "false"}">Lock the axes</button>')
    return pin_button + " " + lock_button + guess


def _holds(text: Mapping[str, str], example: tuple[tuple[str, str], ...]) -> bool:
    """Whether loading `example` would change nothing of the scenario whose `to_text()` is `text`.

    Text is written without loss, so a key holds the example's value exactly when its text is the text
    that value takes once loaded: compared as text, no scenario is built per answer.
    """
    return all(text[key] == value for key, value in _loaded_text(example).items())


@functools.cache
def _loaded_text(example: tuple[tuple[str, str], ...]) -> dict[str, str]:
    """The example's keys as a scenario writes them once the example is loaded (numbers and events canonical)."""
    loaded = Scenario().with_text(dict(example)).to_text()
    return {key: loaded[key] for key, _ in example}


def _example_button(name: str) -> str:
    return (f'<button type="button" data-action="example" data-figure="{html.escape(name)}">'
            f"{html.escape(FIGURES[name].offer)}</button>")


_ARRIVAL = attrgetter("arrival_s")  # a record's arrival time


def _readout(scenario: Scenario, result: Result, trace: str | None = None) -> str:
    if trace is not None:
        return (f"{result.requests:,} requests replayed from {trace}; {result.prefill_gpu_s:,.1f} GPU-seconds of "
                f"prefill, {result.recompute_gpu_s:,.1f} of them recomputing blocks another replica held.")
    rate = scenario.traffic.session_rate * scenario.traffic.turns_mean
    last = max(map(_ARRIVAL, result.records), default=0.0)  # one pass in C: a record's arrival is its first field
    when = (f"in {scenario.duration_s:g} s (about {rate:.1f} per second)" if last < scenario.duration_s else
            # serving mode's sessions wait for their answers: those started in the window send every turn, however late
            f"from the sessions that started in the first {scenario.duration_s:g} s (each turn waits for the answer "
            f"before it, so the last arrived at {last:,.1f} s)")
    return (f"{result.requests:,} requests {when}; {result.prefill_gpu_s:,.1f} GPU-seconds of prefill, "
            f"{result.recompute_gpu_s:,.1f} of them recomputing tokens another replica held.")


def _events_html(scenario: Scenario, removable: bool = True) -> str:
    if not scenario.events:
        return '<li class="empty">No events: steady traffic.</li>'
    items = []
    for i, e in enumerate(scenario.events):
        what = describe_event(e)
        button = (f'<button type="button" data-action="remove_event" data-index="{i}" '
                  f'aria-label="Remove {html.escape(what)}">Remove</button>') if removable else ""
        items.append(f'<li class="event {e.kind}"><span>{html.escape(what)}</span> {button}</li>')
    return "".join(items)


def _num(value: Any) -> str:
    """The unformatted number, as `prefix-lab run --json` writes it."""
    return json.dumps(value)
