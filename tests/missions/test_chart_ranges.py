"""No chart hides a value without a word (issue 29, finding 1).

Every figure the page shows is drawn here with its Bokeh drawing (`lab.site.drawings`) from the view's answer for
a setup, with the ranges that answer sets (locked, fitted to the runs, or fixed by the drawing). Every value each
glyph and label plots must lie inside the range it is drawn on, or the chart must mark it at its top edge
(`src:<figure>_over`, `lab.page.compare.off_chart`). The setups: every mission's broken start and its
three-star setup, the one prefill and one decode GPU of mission 14 the issue met, and a pinned baseline with a
change that leaves its axes far too short.
"""

import math
from numbers import Number

import pytest
from bokeh.models import BasicTickFormatter, DataRange1d, FactorRange, LabelSet, LinearAxis, LogScale, Range1d
from helpers import ROOT
from test_missions import SOLUTIONS

import lab.page.view as view
from lab.common.tracemission import BytesSource, mission_sources
from lab.page.teach import SWEEPS_KEY
from lab.page.urlstate import write_hash
from lab.site.drawings import DRAW, figures
from lab.site.layout import landscape
from missions import MISSIONS, find_mission

X = ("x", "left", "right", "x0", "x1")
Y = ("y", "top", "bottom", "y0", "y1", "y2")


def at(mission, changes):
    """The page's request for `mission` opened on its start with `changes` made."""
    return {"hash": write_hash(mission.start.with_text(changes), {"mission": mission.id, "unlock": "all"})}


def cases():
    for m in MISSIONS:
        three = SOLUTIONS[m.id][1]  # a one-star setup lies between the two: the issue asks for these
        for label, changes in (("start", {}), ("three stars", three)):
            yield f"{m.id}, {label}", at(m, changes)
    yield "split-decode, one prefill and one decode GPU", at(
        find_mission("split-decode"), {"fleet.prefill_replicas": "1", "fleet.decode_replicas": "1"})


CASES = dict(cases())


def values(spec, data, n):
    """The numbers (or factors) a glyph property plots, one per row; None where it plots nothing."""
    if isinstance(spec, str):
        return list(data[spec]) if spec in data else None
    if isinstance(spec, Number):
        return [spec] * n
    expr = getattr(spec, "expr", None)
    if expr is not None and hasattr(expr, "fields"):  # a stack: the running total of its fields
        return [sum(data[f][i] for f in expr.fields) for i in range(n)]
    field = getattr(spec, "field", None)
    if isinstance(field, str):
        return list(data[field])
    return None


def shows(rng, scale):
    """Whether a value shows on range `rng` (an axis of scale `scale`): a test of one value, read off the range once
    (Bokeh's properties are slow to read, and a figure plots thousands of values)."""
    if isinstance(rng, FactorRange):
        factors = set(rng.factors)
        return lambda v: v in factors
    lo, hi, positive = rng.start, rng.end, isinstance(scale, LogScale)
    if isinstance(rng, Range1d):
        lo, hi = min(lo, hi), max(lo, hi)
    elif isinstance(rng, DataRange1d):  # fitted by Bokeh to the data, but for an end the drawing fixed
        lo = -math.inf if lo is None or math.isnan(lo) else lo  # unset: fitted
        hi = math.inf if hi is None or math.isnan(hi) else hi

    def test(v):
        if not isinstance(v, Number) or isinstance(v, bool) or not math.isfinite(v) or (positive and v <= 0):
            return False
        return lo - 1e-9 <= v <= hi + 1e-9
    return test


def plotted(fig):
    """(y range name, the x values of a row, y property, its y value) for each row of every glyph and label."""
    items = [(r.y_range_name, r.glyph, r.data_source.data) for r in fig.renderers]
    items += [(a.y_range_name, a, a.source.data) for a in fig.center if isinstance(a, LabelSet)]
    for range_name, glyph, data in items:
        n = len(next(iter(data.values()), []))
        xs = [v for a in X if a in glyph.properties() and (v := values(getattr(glyph, a), data, n)) is not None]
        for ya in Y:
            ys = values(getattr(glyph, ya), data, n) if ya in glyph.properties() else None
            if ys is not None and xs:
                for i, y in enumerate(ys):
                    yield range_name, [x[i] for x in xs], ya, y


def hidden(fig, name):
    """What `fig` plots off its ranges with no off-chart mark, described."""
    # `_off_chart`'s source, among the figure's renderers (select_one would walk every model of the figure: slow)
    over = next((r.data_source for r in fig.renderers if r.data_source.name == f"src:{name}_over"), None)
    marks = list(over.data["x"]) if over is not None else []
    bad = []
    on_x, y_ranges, on_y = shows(fig.x_range, fig.x_scale), {"default": fig.y_range, **fig.extra_y_ranges}, {}
    for range_name, xs, ya, y in plotted(fig):
        y_range = y_ranges[range_name]
        if any(x is None for x in xs) or y is None or (isinstance(y, float) and math.isnan(y)):
            continue  # a gap in a line: nothing is drawn there
        off_x = [x for x in xs if not on_x(x)]
        if range_name not in on_y:
            on_y[range_name] = shows(y_range, fig.y_scale)
        if off_x:
            bad.append(f"x={off_x} off the x axis")
        elif not on_y[range_name](y):
            numeric = [x for x in xs if isinstance(x, Number)]
            if not (numeric and any(min(numeric) <= m <= max(numeric) for m in marks)):
                bad.append(f"{ya}={y} at x={xs} off the y axis {y_range.start}..{y_range.end}")
    return bad


def shown_figures(answer):
    dom = answer["patches"]["dom"]
    return tuple(name for name in DRAW if f"#cap-{name}" in dom
                 and not dom.get(f'[data-figure="{name}"]', {}).get("hidden", False))


def check(answer):
    drawn = figures(answer, shown_figures(answer))
    return {name: bad for name, fig in drawn.items() if (bad := hidden(fig, name))}


@pytest.fixture(scope="module")
def files():
    return mission_sources()


@pytest.mark.parametrize("case", CASES, ids=list(CASES))
def test_every_value_a_figure_plots_is_on_its_axes_or_marked_above_them(case, files):
    answer = view.handle(CASES[case], files)
    assert shown_figures(answer)
    assert check(answer) == {}


def test_the_issues_case_marks_the_p99_that_the_missions_axis_leaves_out(files):
    answer = view.handle(CASES["split-decode, one prefill and one decode GPU"], files)
    top = answer["patches"]["bokeh"]["yr:ttft"]["end"]
    worst = max(v for v in answer["patches"]["bokeh"]["src:ttft"]["data"]["p99"] if v is not None)
    over = answer["patches"]["bokeh"]["src:ttft_over"]["data"]
    assert worst > top and over["x"]  # the mission's axes hold still at the start's, and the run goes past them
    assert [label for label in over["label"] if label] == [f"above: {worst:,.0f} ms"]
    assert all(0 < y < top for y in over["y"])


def test_a_pinned_baseline_keeps_its_axes_and_marks_what_a_change_sends_past_them():
    pinned = view.handle({"hash": "", "action": {"type": "pin"}})
    changed = view.handle({"hash": pinned["hash"], "controls": {"ctl:fleet.cache": False, "ctl:fleet.replicas": 2}})
    assert changed["patches"]["bokeh"]["yr:ttft"] == pinned["patches"]["bokeh"]["yr:ttft"]
    assert changed["patches"]["bokeh"]["src:ttft_over"]["data"]["x"]
    assert check(changed) == {}
    assert check(pinned) == {} and not pinned["patches"]["bokeh"]["src:ttft_over"]["data"]["x"]


@pytest.fixture(scope="module")
def with_sweeps(files):
    blob = (ROOT / "lab" / "data" / "mission-sweeps.json").read_bytes()
    return {**files, SWEEPS_KEY: BytesSource("mission-sweeps.json", blob)}


@pytest.mark.parametrize("mission", MISSIONS, ids=lambda m: m.id)
def test_where_your_setup_lands_shows_every_setup_or_marks_it_and_squashes_none_against_the_axis(mission, with_sweeps):
    answer = view.handle(at(mission, {}), with_sweeps)
    assert not answer["patches"]["dom"]["#landscape"]["hidden"]
    fig = landscape(answer)
    assert hidden(fig, "land") == []
    ys = [y for r in fig.renderers if r.data_source.name in ("src:land", "src:land_start")
          for y in r.data_source.data["y"]]
    top = fig.y_range.end if isinstance(fig.y_range, Range1d) else max(ys)
    shown = sorted(y for y in ys if y <= top)
    assert shown[len(shown) // 2] >= top / 10, f"half the setups sit in the bottom tenth of a 0..{top} axis"


def test_no_chart_writes_its_ticks_in_scientific_notation(files):
    answer = view.handle(CASES["split-decode, one prefill and one decode GPU"], files)
    for name, fig in figures(answer, shown_figures(answer)).items():
        for axis in (*fig.xaxis, *fig.yaxis):
            if isinstance(axis, LinearAxis):  # Bokeh's own writes 500,000 as 5.000e+5, labels that overlap
                assert not isinstance(axis.formatter, BasicTickFormatter), name
