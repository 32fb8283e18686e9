"""The missions panel of the page: which mission is chosen, which are open, what a player earns.

Pure functions: none changes its arguments, each returns new values. Run by
`lab.page.view`, in the browser under Pyodide and at build time.

What the browser keeps for the player, in localStorage, and sends with every
request:

- progress (`prefix-lab:progress`): the best stars by mission id. Keyed by
  id, never by position: an id the catalog does not know (a mission of a
  later version of the lab) is kept and handed back untouched, but shown
  nowhere.
- the memo (`prefix-lab:memo`, a `Memo`): the setup that earned each
  mission's best stars (`best`, for "Replay my best"), the hashes the page
  wrote while a mission was being played (`played`), and the setup before the
  player chose a mission (`back`).

A mission opens when every mission it `requires` has a star, or all at once
with `#unlock=all` for a workshop facilitator. The chosen mission is
`#mission=<id>` in the URL, so a link opens it; while a mission is chosen,
only the keys it allows stay enabled.

Stars are earned by playing, not by arriving: choosing a mission (or "Load
mission setup") loads its broken start, and a setup counts only when the
page's own controls reached it from there and it has settled (a slider let
go, not one it passed through). A setup whose hash is in `played` was
reached that way; a link or an edited address shows its verdict but earns
nothing until the mission's setup is loaded.
"""

import dataclasses
import hashlib
import html
import math
import re
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from lab.page.controls import control_of, describe, describe_event
from lab.page.glossary import term
from lab.page.urlstate import read_hash, write_hash
from missions import FIGURES, MISSIONS, Mission, Prediction, Verdict, changed_fixed_keys, find_mission, unlocked
from model import Scenario

__all__ = ["ACTIONS", "ASKING", "GUESS_INPUT", "HINT_AFTER_S", "Memo", "Play", "Teach", "apply_action", "asks", "clock",
           "guessed", "chosen", "chip_html", "open_missions", "panel_html",
           "read_memo", "read_progress", "with_stars"]

ACTIONS = ("select_mission", "load_mission", "replay_best", "go_back", "ask_reset", "keep_progress", "reset_progress",
           "predict", "skip_predict", "hint", "guess_next", "guess_figure")
ASKING = "ask"  # page key `guess` while the page waits for the player's guess; then the guess itself
GUESS_INPUT = "predict:guess"  # the slider the guess is read from (lab.site.layout)
GUESS_RANGE = {"start": 0.0, "end": 1.0, "step": 0.01, "value": 0.5}  # the slider as built; each mission sets its own
HINT_AFTER_S = 120  # a mission not passed after this long offers a hint
# In free play the player may guess any headline figure of the next run: the figure, its slider, its question.
FREE_GUESSES = {p.figure: p for p in (
    Prediction("hit_rate", "What hit rate will the next change give?", 0.0, 1.0, 0.01),
    Prediction("ttft_p50_ms", "What TTFT p50 will the next change give?", 0, 2000, 10),
    Prediction("ttft_p99_ms", "What TTFT p99 will the next change give?", 0, 10000, 50),
    Prediction("throughput_rps", "What throughput will the next change give?", 0, 20, 0.1),
)}
REVEALED = "shown:"  # `guess_base` once the guess was checked against the run of the setup after this prefix
UNLOCK_HINT = "Running a workshop? Add &unlock=all to the address to open every mission."
LOCK = ('<svg aria-hidden="true" width="10" height="12" viewBox="0 0 10 12"><rect x="1" y="5" width="8" height="6" '
        'rx="1" fill="currentColor"/><path d="M3 5V3.5a2 2 0 0 1 4 0V5" stroke="currentColor" fill="none"/></svg>')
PLAYED_KEPT = 40  # hashes remembered as played: enough to go back and forth within a few missions
_ID = re.compile(r"[a-z0-9][a-z0-9_-]{0,63}")  # what a mission id may look like, known or not
_HASH_MAX = 2000  # a kept hash longer than this is not one the page wrote


@dataclass(frozen=True, slots=True)
class Memo:
    """What the browser keeps besides progress. Its mapping is a read-only view."""

    best: Mapping[str, str] = field(default_factory=dict)  # mission id -> hash of the setup that earned its best stars
    played: tuple[str, ...] = ()  # hashes written while a mission was played from its start, newest last
    back: str | None = None  # the hash before the player chose a mission, for "Back to my setup"
    since: float | None = None  # when the player chose the mission they are in (seconds since the epoch)

    def __post_init__(self) -> None:
        object.__setattr__(self, "best", MappingProxyType(dict(self.best)))

    def to_dict(self) -> dict[str, Any]:
        return {"best": dict(self.best), "played": list(self.played), "back": self.back, "since": self.since}


@dataclass(frozen=True, slots=True)
class Teach:
    """What the panel shows around the verdict: the prediction, the hints, where the setup stands."""

    asking: bool = False  # the page waits for a guess: the verdict and the guessed figure are held back
    guess: float | None = None
    truth: float | None = None  # the guessed figure on the broken start
    hints: int = 0  # hints shown so far
    offer: bool = False  # the mission has gone unpassed long enough to offer a hint
    standing: str = ""  # where the setup lands among the swept ones, in words (HTML)
    figure: str = ""  # free play: the figure guessed (FREE_GUESSES)


@dataclass(frozen=True, slots=True)
class Play:
    """The player's side of one request: what is kept, and whether this setup may earn stars."""

    progress: Mapping[str, int]
    memo: Memo
    playing: bool = False  # the setup was reached from the chosen mission's start by the page's controls and actions
    scored: bool = False  # ...and by a settled control change just now: its stars count
    asking: bool = False  # "Reset progress" was pressed: ask before forgetting every star


def read_progress(raw: Any) -> dict[str, int]:
    """Best stars by mission id from whatever the browser sent: unknown ids kept, malformed entries dropped."""
    if not isinstance(raw, dict):
        return {}
    return {k: v for k, v in raw.items() if isinstance(k, str) and _ID.fullmatch(k)
            and isinstance(v, int) and not isinstance(v, bool) and 0 <= v <= 3}


def read_memo(raw: Any) -> Memo:
    """The memo from whatever the browser sent; anything malformed is dropped."""
    if not isinstance(raw, dict):
        return Memo()
    best, played, back, since = raw.get("best"), raw.get("played"), raw.get("back"), raw.get("since")
    best = best if isinstance(best, dict) else {}
    played = played if isinstance(played, list) else []
    if not (isinstance(since, (int, float)) and not isinstance(since, bool) and math.isfinite(since)):
        since = None
    return Memo({k: v for k, v in best.items() if isinstance(k, str) and _ID.fullmatch(k) and _is_hash(v)},
                tuple(h for h in played if _is_hash(h))[-PLAYED_KEPT:], back if _is_hash(back) else None,
                None if since is None else float(since))


def _is_hash(value: Any) -> bool:
    return isinstance(value, str) and len(value) <= _HASH_MAX


def normal(hash_text: str) -> str:
    """The hash the page would write for `hash_text`: equal setups, equal text."""
    hashed = read_hash(hash_text)
    return write_hash(hashed.scenario, hashed.page)


def open_missions(progress: Mapping[str, int], page: Mapping[str, str]) -> frozenset[str]:
    """Ids of the missions a player may open."""
    if page.get("unlock") == "all":
        return frozenset(m.id for m in MISSIONS)
    return unlocked(progress, MISSIONS)


def chosen(page: Mapping[str, str], progress: Mapping[str, int]) -> tuple[Mission | None, str | None]:
    """The mission the page chose if it can be opened; else none, and a notice saying why."""
    mission_id = page.get("mission")
    if not mission_id:
        return None, None
    mission = find_mission(mission_id, MISSIONS)
    if mission is None:
        return None, f"There is no mission '{mission_id[:40]}'; showing free play."
    if mission.id not in open_missions(progress, page):
        return None, f"'{mission.title}' unlocks when you pass {_still_needed(mission, progress)}. {UNLOCK_HINT}"
    return mission, None


def apply_action(action: Mapping[str, Any], scenario: Scenario, page: Mapping[str, str],
                 play: Play) -> tuple[Scenario, dict[str, str], Play, tuple[str, ...]]:
    """A missions action's new scenario, page keys, player state, and notices."""
    kind = action.get("type")
    page, memo = dict(page), play.memo
    notices: tuple[str, ...] = ()
    here = write_hash(scenario, page)
    playing, progress, asking = False, play.progress, False
    if kind == "select_mission":
        wanted = str(action.get("mission") or "")
        for key in ("mission", "guess", "hint"):
            page.pop(key, None)
        if wanted:
            page["mission"] = wanted
            mission, _ = chosen(page, progress)
            if mission is not None:  # a locked or unknown one is refused by `settle`, with a notice
                if not here.endswith(f"mission={mission.id}"):
                    memo = dataclasses.replace(memo, back=here)
                memo = dataclasses.replace(memo, since=clock())
                scenario, playing = mission.start, True
                if asks(mission, page, progress):
                    page["guess"] = ASKING
    elif kind == "load_mission":
        mission, _ = chosen(page, progress)
        if mission is not None:
            scenario, playing = mission.start, True
    elif kind == "replay_best":
        wanted = str(action.get("mission") or "")
        page["mission"] = wanted
        mission, _ = chosen(page, progress)
        if mission is not None and wanted in memo.best:
            hashed = read_hash(memo.best[wanted])
            scenario, playing, notices = hashed.scenario, True, hashed.notices
    elif kind == "go_back" and memo.back is not None:
        hashed = read_hash(memo.back)
        scenario, page, notices = hashed.scenario, dict(hashed.page), hashed.notices
        playing = normal(memo.back) in memo.played
        memo = Memo(memo.best, memo.played, None)  # out of the mission: its clock goes too
    elif kind == "ask_reset":
        playing, asking = play.playing, True
    elif kind == "keep_progress":
        playing = play.playing
    elif kind == "reset_progress":
        progress, memo, playing = {}, dataclasses.replace(memo, best={}), play.playing
    elif kind in ("guess_next", "guess_figure") and page.get("mission") is None:
        playing = play.playing
        figure = str(action.get("figure") or page.get("guess_figure") or "hit_rate")
        page["guess_figure"] = figure if figure in FREE_GUESSES else "hit_rate"
        page["guess"] = ASKING
        page.pop("guess_base", None)
    elif kind in ("predict", "skip_predict") and page.get("mission") is None:
        playing = play.playing
        p = FREE_GUESSES.get(page.get("guess_figure", ""))
        guess = None if p is None else _read_guess(action, p)
        if kind == "skip_predict" or p is None:
            for key in ("guess", "guess_figure", "guess_base"):
                page.pop(key, None)
        elif guess is not None:
            page["guess"] = guess
            page["guess_base"] = setup_digest(scenario)  # the guess is for the first setup that differs from this
        else:
            notices = ("Set your guess on the slider, then check it.",)
    elif kind in ("predict", "skip_predict", "hint"):
        playing = play.playing
        mission, _ = chosen(page, progress)
        if mission is not None and kind == "hint":
            shown = page.get("hint", "0")
            page["hint"] = str(min(len(mission.hints), (int(shown) if shown.isdigit() else 0) + 1))
        elif mission is not None and mission.predict is not None and page.get("guess") == ASKING:
            guess = _read_guess(action, mission.predict)
            if kind == "skip_predict":
                page.pop("guess")
            elif guess is not None:
                page["guess"] = guess
            else:
                notices = ("Set your guess on the slider, then check it.",)
    return scenario, page, Play(progress, memo, playing, False, asking), notices


def _read_guess(action: Mapping[str, Any], p: Prediction) -> str | None:
    """The guess the action carries from the slider, on the prediction's range and step, as the page key holds
    it; None if it carries no number."""
    inputs = action.get("inputs")
    guess = inputs.get(GUESS_INPUT) if isinstance(inputs, dict) else None
    if not isinstance(guess, (int, float)) or isinstance(guess, bool) or not math.isfinite(guess):
        return None
    return f"{min(p.hi, max(p.lo, round(guess / p.step) * p.step)):.6g}"


def clock() -> float:
    """Seconds since the epoch (the browser's clock under Pyodide); tests replace it."""
    return time.time()


def asks(mission: Mission, page: Mapping[str, str], progress: Mapping[str, int]) -> bool:
    """Whether choosing `mission` asks for a guess first: on its first play, or always with `predict=on`
    (a facilitator's setting for the room), never with `predict=off`."""
    setting = page.get("predict")
    if mission.predict is None or setting == "off":
        return False
    return setting == "on" or progress.get(mission.id, 0) == 0


def setup_digest(scenario: Scenario) -> str:
    """A short name for a setup, to tell in the address whether it changed since a guess."""
    return hashlib.sha256(write_hash(scenario).encode()).hexdigest()[:10]


def free_guess(page: Mapping[str, str], scenario: Scenario) -> dict[str, str]:
    """The page keys after a settled change in free play: a guess made for "the next change" is checked
    against this setup if it differs from the one the guess was made on; once checked, the next change
    forgets it."""
    base = page.get("guess_base", "")
    if not base or "mission" in page:
        return dict(page)
    now = setup_digest(scenario)
    if base.startswith(REVEALED):
        if base != REVEALED + now:
            return {k: v for k, v in page.items() if k not in ("guess", "guess_figure", "guess_base")}
        return dict(page)
    return {**page, "guess_base": REVEALED + now} if base != now else dict(page)


def guessed(page: Mapping[str, str]) -> float | None:
    """The player's guess, once made."""
    try:
        value = float(page.get("guess", ""))
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def with_stars(play: Play, mission: Mission | None, verdict: Verdict | None, scenario: Scenario) -> Play:
    """`play` with this verdict's stars counted if it may earn them: a worse setup never takes stars away."""
    if mission is None or verdict is None or not play.scored:
        return play
    progress, best = dict(play.progress), dict(play.memo.best)
    if verdict.stars > progress.get(mission.id, 0) or (verdict.stars and mission.id not in best
                                                       and verdict.stars == progress.get(mission.id)):
        best[mission.id] = write_hash(scenario)
    if verdict.stars > progress.get(mission.id, 0):
        progress[mission.id] = verdict.stars
    return Play(progress, dataclasses.replace(play.memo, best=best), play.playing, play.scored, play.asking)


def remember(play: Play, written: str) -> Memo:
    """The memo to keep after the page wrote hash `written`: a played setup is remembered as played."""
    memo = play.memo
    if not play.playing:
        return memo
    played = tuple(h for h in memo.played if h != written) + (written,)
    return dataclasses.replace(memo, played=played[-PLAYED_KEPT:])


# -- the panel's HTML ------------------------------------------------------------------------------------

def panel_html(mission: Mission | None, verdict: Verdict | None, play: Play, open_ids: frozenset[str],
               scenario: Scenario, teach: Teach = Teach()) -> str:
    """The missions panel: the list (open, locked, stars) and, in a mission, its verdict, brief and buttons."""
    progress = play.progress
    items = []
    for n, m in enumerate(MISSIONS, 1):
        stars = progress.get(m.id, 0)
        picked = mission is not None and m.id == mission.id
        name = f"{n}. {m.title}, {stars} of 3 stars"
        shown = f'<span class="n">{n}.</span> <span class="title">{html.escape(m.title)}</span> ' \
                f'<span class="stars" aria-hidden="true">{_stars(stars)}</span>'
        if m.id in open_ids:
            items.append(f'<li><button type="button" class="mission{" chosen" if picked else ""}" '
                         f'data-action="select_mission" data-mission="{m.id}" aria-pressed="{str(picked).lower()}" '
                         f'aria-label="{html.escape(name)}" title="{html.escape(" ".join([m.title, opened_early(m)]).strip())}" '
                         f'data-stars="{stars}">'
                         f'{shown}</button></li>')
        else:
            why = f"Pass {_still_needed(m, progress)} to unlock this one."
            items.append(f'<li><button type="button" class="mission locked" disabled data-mission="{m.id}" '
                         f'aria-label="locked: {html.escape(name)}" title="{html.escape(why)}">{LOCK} {shown}'
                         '</button></li>')
    if mission is not None:
        items.append('<li><button type="button" class="mission free" data-action="select_mission" data-mission="">'
                     'Free play</button></li>')
    lead = mission is None and not play.asking  # where focus goes if the button that had it is gone
    head = ('<div class="mission-head"><h2 tabindex="-1"' + (" data-autofocus" if lead else "") + '>Missions</h2>'
            f'{_reset(play)}</div>')
    listed = f'<ol class="mission-list{" compact" if mission else ""}">{"".join(items)}</ol>'
    if mission is None or verdict is None:
        p = FREE_GUESSES.get(teach.figure)
        guess = "" if p is None else _prediction(p, teach, "the next change")
        detail = guess + ('<p class="hint">Pick a mission: it loads a broken setup, and you fix it with the controls it '
                  'names. One star for the goal, three for doing it with less.</p>'
                  '<details class="facilitator"><summary>Running a workshop?</summary><p>Add '
                  '<code>#unlock=all</code> to the page\'s address (or <code>&amp;unlock=all</code> after a '
                  'setup) to open every mission for the room. Progress stays in each browser. '
                  '<a href="docs/workshop.html">The workshop guide</a> has the rest.</p></details>')
        return head + listed + f'<div class="mission-detail">{detail}</div>'
    return head + listed + f'<div class="mission-detail">{_detail(mission, verdict, play, scenario, teach)}</div>'


def _reset(play: Play) -> str:
    if not play.asking:
        return '<button type="button" class="reset" data-action="ask_reset">Reset progress</button>'
    stars = sum(v for v in play.progress.values())
    return (f'<div class="confirm" role="group" aria-label="Reset progress?"><span>Forget all {stars} '
            f'star{"" if stars == 1 else "s"}?</span> '
            '<button type="button" class="danger" data-action="reset_progress">Yes, forget them</button> '
            '<button type="button" data-action="keep_progress" data-autofocus>Keep my stars</button></div>')


def _still_needed(mission: Mission, progress: Mapping[str, int]) -> str:
    """The prerequisites of `mission` without a star, by title: 'A', or 'A' and 'B'."""
    missing = [find_mission(r, MISSIONS) for r in mission.requires if progress.get(r, 0) < 1]
    titles = [f"'{m.title}'" for m in missing if m is not None] or ["the missions before it"]
    return titles[0] if len(titles) == 1 else ", ".join(titles[:-1]) + " and " + titles[-1]


def opened_early(mission: Mission) -> str:
    """Why `mission` opens before the missions listed above it, when it does: the ones it builds on; else ""."""
    ids = [m.id for m in MISSIONS]
    before = ids[:ids.index(mission.id)]
    if not mission.requires or not before or list(mission.requires) == before[-1:]:
        return ""
    names = [f"{ids.index(r) + 1}. {m.title}" for r in mission.requires if (m := find_mission(r, MISSIONS))]
    return (f"It opens early, once {' and '.join(names)} has a star: it needs only what that one teaches, "
            "not the missions listed between them.")


def _opens(mission: Mission) -> str:
    """The missions a star here opens, by number and title, each saying why when it opens out of order."""
    ids = [m.id for m in MISSIONS]
    after = [(ids.index(m.id) + 1, m) for m in MISSIONS if mission.id in m.requires]
    if not after:
        return ""
    said = "; ".join(f"{n}. {html.escape(m.title)}" + (" (it builds only on this one)" if opened_early(m) else "")
                     for n, m in after)
    return f'<p class="opens">A star here opens {said}.</p>'


def _detail(mission: Mission, verdict: Verdict, play: Play, scenario: Scenario, teach: Teach) -> str:
    number = next(n for n, m in enumerate(MISSIONS, 1) if m.id == mission.id)
    levels = (f"<li>★ {html.escape(mission.goal_text())}</li>"
              f"<li>★★ also {html.escape('; '.join(t.text() for t in mission.two_stars))}</li>"
              f"<li>★★★ also {html.escape('; '.join(t.text() for t in mission.three_stars))}</li>")
    fixed = changed_fixed_keys(mission, scenario)
    if fixed:
        names = ", ".join(_words(k) for k in fixed)
        head = '<p class="verdict-head"><strong>Not scored</strong></p>'
        reasons = (f"<li>This setup changes {html.escape(names)}, which this mission keeps as it was. Load the "
                   "mission setup and change only what the mission lets you.</li>")
    else:
        reasons = "".join(f"<li>{html.escape(r)}</li>" for r in verdict.reasons)
        head = (f'<p class="verdict-head"><strong>Mission passed</strong> <span class="stars big" '
                f'aria-label="{verdict.stars} of 3 stars">{_stars(verdict.stars)}</span></p>' if verdict.passed
                else '<p class="verdict-head"><strong>Not passed yet</strong></p>')
    note = "" if play.playing else ('<p class="note">This setup came from a link or an edited address: its stars '
                                    'are shown, not kept. Load mission setup to play it and earn stars.</p>')
    lesson = (f'<p class="lesson">{html.escape(mission.lesson)}</p>{_opens(mission)}' if verdict.passed and not fixed
              else "")
    verdict_html = (f'<div class="verdict {"passed" if verdict.passed else "failed"}" '
                    f'data-passed="{str(verdict.passed).lower()}" data-stars="{verdict.stars}" role="status">'
                    f'{head}<ul class="reasons">{reasons}</ul>{note}{lesson}</div>')
    if teach.asking and mission.predict is not None:
        verdict_html = ('<div class="verdict asking" role="status"><p class="verdict-head"><strong>First, a guess'
                        '</strong></p><p class="hint">The question is above the missions: guess, then see.</p></div>')
    verdict_html += (_prediction(mission.predict, teach, "the broken start") + ("" if teach.asking else teach.standing)
                     + _hints(mission, verdict, teach))
    allowed = ", ".join(_words(k) for k in mission.controls)
    kept = [k for k in mission.start.to_text() if k not in mission.controls]
    fixed_words = _fixed_words(mission.start, kept)
    buttons = ['<button type="button" class="load" data-action="load_mission">Load mission setup</button>']
    best = play.memo.best.get(mission.id)
    stars = play.progress.get(mission.id, 0)
    best_line = ""
    if best is not None and stars:
        shown = describe(read_hash(best).scenario, mission.controls) or ["the mission's setup"]
        best_line = (f'<p class="best">Your best, {_stars(stars)}: {html.escape(", ".join(shown))}.</p>')
        buttons.append(f'<button type="button" data-action="replay_best" data-mission="{mission.id}">'
                       'Replay my best</button>')
    if play.memo.back is not None:
        buttons.append('<button type="button" data-action="go_back">Back to my setup</button>')
    return (f'<h3 tabindex="-1"{"" if play.asking else " data-autofocus"}>{number}. {html.escape(mission.title)}</h3>'
            f'{verdict_html}'
            f'<p class="brief">{html.escape(mission.brief)}</p><ul class="levels">{levels}</ul>'
            + (f'<p class="opened">{html.escape(early)}</p>' if (early := opened_early(mission)) else "") +
            f'<p class="allowed"><strong>You change:</strong> {html.escape(allowed)}.'
            + (f' <strong>Fixed:</strong> {html.escape(fixed_words)}.' if fixed_words else "") + '</p>'
            f'{best_line}<p class="actions">{" ".join(buttons)}</p>')


def _prediction(p: Prediction | None, teach: Teach, subject: str) -> str:
    """The guess beside the truth for `subject` (the run it was about), and how far off it was."""
    if p is None or teach.guess is None:
        return ""
    label, show = FIGURES[p.figure]
    if teach.truth is None:
        return (f'<p class="prediction" data-guess="{teach.guess:g}">Your guess for the {html.escape(label)} of '
                f"{subject}: {html.escape(show(teach.guess))}. Now change something.</p>")
    off = abs(teach.guess - teach.truth)
    gap = f"{off * 100:.1f} points" if p.hi <= 1 else show(off)
    verdict = "spot on" if off <= p.step / 2 else f"{gap} {'high' if teach.guess > teach.truth else 'low'}"
    return (f'<p class="prediction" data-guess="{teach.guess:g}" data-truth="{teach.truth:g}">You guessed '
            f'{html.escape(show(teach.guess))} for the {html.escape(label)} of {subject}; it was '
            f'<strong>{html.escape(show(teach.truth))}</strong>: {html.escape(verdict)}.</p>')


def _hints(mission: Mission, verdict: Verdict, teach: Teach) -> str:
    """The hints asked for so far, in order, and a button for the next one while any is left."""
    if not mission.hints or teach.asking:
        return ""
    shown = mission.hints[:teach.hints]
    listed = ('<ol class="hints" aria-label="Hints">' + "".join(f"<li>{html.escape(h)}</li>" for h in shown) + "</ol>"
              if shown else "")
    offer = ('<p class="offer">Two minutes and not passed yet: a hint is here if you want one.</p>'
             if teach.offer and not shown and not verdict.passed else "")
    more = ""
    if len(shown) < len(mission.hints):
        label = "A hint" if not shown else "Another hint"
        more = (f'<p class="actions"><button type="button" data-action="hint">{label}</button> '
                f'<span class="hint">{len(mission.hints) - len(shown)} left; each points at a control or a chart, '
                'never at a value.</span></p>')
    return f'<div class="hints-box">{offer}{listed}{more}</div>'


def _words(key: str) -> str:
    c = control_of(key)
    return c.words if c is not None else term(key)


def _fixed_words(start: Scenario, keys: list[str]) -> str:
    """What a mission keeps fixed, where it differs from the lab's defaults: '8 sessions per second, 120 s'."""
    default = Scenario()
    differs = [k for k in keys if start.get(k) != default.get(k)]
    words = describe(start, differs)
    if "duration_s" in differs:
        words.append(f"{start.duration_s:g} s of traffic")
    words += [describe_event(e) for e in start.events] if "events" in differs else []
    return ", ".join(words)


def chip_html(mission: Mission | None, verdict: Verdict | None) -> str:
    """The verdict in a few words for the headline, which stays on screen while controls change."""
    if mission is None or verdict is None:
        return ""
    number = next(n for n, m in enumerate(MISSIONS, 1) if m.id == mission.id)
    state = "passed" if verdict.passed else "not yet"
    return (f'<span class="label">Mission {number}</span><span class="value">{state} '
            f'<span class="stars" aria-label="{verdict.stars} of 3 stars">{_stars(verdict.stars)}</span></span>')


def _stars(n: int) -> str:
    return "★" * n + "☆" * (3 - n)
