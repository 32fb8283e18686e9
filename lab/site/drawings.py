"""Each figure of the page drawn with Bokeh at build time: its glyphs, colours, axes and hover tips.

One function a figure, `_<name>(sources, data)`, reading its sources by name
(`src:<name>...`, filled by `lab.page.view` on every change) and the view's
first data for its ranges; `DRAW` maps each figure of `lab.page.figures` to its
function, and a test checks that every figure has one. `lab.site.layout` puts
the figures on the page.
"""

from typing import Any

from bokeh.models import (
    BasicTickFormatter,
    ColorBar,
    ColumnDataSource,
    FactorRange,
    FixedTicker,
    HoverTool,
    LabelSet,
    LinearAxis,
    LinearColorMapper,
    NumeralTickFormatter,
    Range1d,
    Span,
)
from bokeh.palettes import Blues256
from bokeh.plotting import figure
from bokeh.transform import dodge

from lab.page.figures import BOKEH_FIGURES, JOIN_WAYS, PALETTE, TREE_COLOURS, replica_colour
from model import SLO_SHARE

__all__ = ["DRAW", "figures"]

BUSY = tuple(reversed(Blues256))  # light: idle, dark: busy
BUSY_PERCENT = (0, 100)  # the busy strip's colour scale: a replica is busy 0 to 100% of a bin


def figures(view: dict, which: tuple[str, ...] = BOKEH_FIGURES) -> dict[str, Any]:
    """The figures named in `which`, by name, drawn from the view's first data."""
    data = view["patches"]["bokeh"]
    sources = {name: ColumnDataSource(patch["data"], name=name) for name, patch in data.items()
               if name.startswith("src:")}
    drawn = {name: DRAW[name](sources, data) for name in which}
    for f in drawn.values():
        _plain_ticks(f)
    return drawn


PLAIN_TICKS = "0,0.[0000]"  # 500,000 and 0.005, never 5.000e+5 (long labels that overlap their neighbours)


def _plain_ticks(f: Any) -> None:
    """Every linear axis of `f` writes its ticks as plain numbers with thousands separators."""
    for axis in (*f.xaxis, *f.yaxis):
        if isinstance(axis, LinearAxis) and isinstance(axis.formatter, BasicTickFormatter):
            axis.formatter = NumeralTickFormatter(format=PLAIN_TICKS)


def _time_figure(title: str, y_label: str, name: str, events: ColumnDataSource, height: int = 230) -> Any:
    fig = figure(title=title, name=name, height=height, sizing_mode="stretch_width", min_width=260,
                 toolbar_location=None, x_axis_label="time (s)", y_axis_label=y_label)
    fig.extra_y_ranges = {"events": Range1d(0, 1)}
    fig.quad(left="left", right="right", bottom=0, top=1, y_range_name="events", source=events,
             fill_color="color", fill_alpha=0.12, line_alpha=0)  # colours match the events list
    fig.add_layout(LabelSet(x="left", y="y", y_range_name="events", text="label", source=events, text_font_size="11px",
                            text_color="color", x_offset=3, y_offset=-14))  # each band says what it is
    fig.y_range.start = 0
    return fig




def _fit_y_to_data(f: Any) -> None:
    """A time chart's y range follows its data, not the event shading drawn on its own 0..1 range."""
    if not isinstance(f.y_range, (Range1d, FactorRange)):
        f.y_range.renderers = [r for r in f.renderers if r.y_range_name == "default"]


def _ttft(sources: dict[str, ColumnDataSource], data: dict) -> Any:
    """TTFT p50 and p99 per bin, the baseline's dashed beneath."""
    events = sources["src:events"]
    f = _time_figure("Time to first token", "ms", "fig:ttft", events)
    f.y_range = _locked_range("ttft", data)
    f.line("t", "p50", source=sources["src:ttft_base"], line_width=2, color=PALETTE[0], alpha=0.3, line_dash="dashed")
    f.line("t", "p99", source=sources["src:ttft_base"], line_width=2, color=PALETTE[3], alpha=0.3, line_dash="dashed")
    f.line("t", "p50", source=sources["src:ttft"], line_width=2, color=PALETTE[0], legend_label="p50")
    f.line("t", "p99", source=sources["src:ttft"], line_width=2, color=PALETTE[3], legend_label="p99")
    _legend_above(f)
    f.add_tools(HoverTool(tooltips=[("time", "@t{0} s"), ("TTFT p50", "@p50{0} ms"), ("TTFT p99", "@p99{0} ms")],
                          mode="vline", renderers=list(f.renderers)))  # not the off-chart marks
    _off_chart(f, sources["src:ttft_over"])
    _fit_y_to_data(f)
    return f


def _hit(sources: dict[str, ColumnDataSource], data: dict) -> Any:
    """The hit rate per bin, the baseline's dashed beneath."""
    events = sources["src:events"]
    f = _time_figure("Prefix cache hit rate", "% of prompt tokens", "fig:hit", events)
    f.y_range.end = 100
    f.line("t", "hit", source=sources["src:hit_base"], line_width=2, color=PALETTE[2], alpha=0.3, line_dash="dashed")
    f.line("t", "hit", source=sources["src:hit"], line_width=2, color=PALETTE[2])
    f.add_tools(HoverTool(tooltips=[("time", "@t{0} s"), ("hit rate", "@hit{0.0}% of prompt tokens")], mode="vline"))
    _fit_y_to_data(f)
    return f


def _load(sources: dict[str, ColumnDataSource], data: dict) -> Any:
    """One row of cells per replica: how busy it was in each bin, its colour swatch at the left."""
    factors = data["yr:load"]["factors"]
    f = figure(title="How busy each replica was", name="fig:load", height=max(150, 60 + 22 * len(factors)),
               sizing_mode="stretch_width", min_width=260, toolbar_location=None, x_axis_label="time (s)",
               y_range=FactorRange(*factors, name="yr:load"))
    mapper = LinearColorMapper(palette=BUSY, low=BUSY_PERCENT[0], high=BUSY_PERCENT[1])
    f.rect(x="t", y="replica", width="width", height=0.9, source=sources["src:load"], line_color=None,
           fill_color={"field": "busy", "transform": mapper})
    f.rect(x="x", y="replica", width="width", height=0.9, source=sources["src:load_key"], line_color=None,
           fill_color="color")  # each replica's own colour, as in the tree and the table
    f.add_layout(ColorBar(color_mapper=mapper, title="% busy", width=8, padding=4), "right")
    f.add_tools(HoverTool(tooltips=[("", "@replica"), ("time", "@t{0} s"), ("busy", "@busy{0}% of the bin"),
                                    ("queued at the end", "@backlog{0.0} s")]))
    f.grid.visible = False
    return f


def _memory(sources: dict[str, ColumnDataSource], data: dict) -> Any:
    """The fleet's KV memory per bin: running requests, the cache besides, what they pin, what was evicted."""
    events = sources["src:events"]
    f = _time_figure("KV memory of the fleet", "thousand tokens", "fig:memory", events)
    f.y_range = _locked_range("memory", data)
    f.varea_stack(["running", "cached"], x="t", source=sources["src:memory"], color=(PALETTE[1], PALETTE[5]),
                  alpha=0.7, legend_label=["running requests", "prefix cache besides"])
    f.line("t", "pinned", source=sources["src:memory"], line_width=2, color=PALETTE[7], line_dash="dotted",
           legend_label="prefixes they pin")
    f.vbar(x="mid", top="evicted", width="width", source=sources["src:memory"], color=PALETTE[4], alpha=0.8,
           legend_label="evicted in the bin")
    f.line("t", "total", source=sources["src:memory_base"], line_width=2, color="#444444", alpha=0.5,
           line_dash="dashed")
    _legend_above(f)
    f.legend.nrows = 2  # four entries: two rows fit a phone
    f.add_tools(HoverTool(tooltips=[("time", "@t{0} s"), ("running", "@running{0.0}k tokens"),
                                    ("pinned", "@pinned{0.0}k tokens"), ("cached", "@cached{0.0}k tokens"),
                                    ("evicted in the bin", "@evicted{0.0}k tokens")],
                          mode="vline", renderers=[f.renderers[-2]]))
    _off_chart(f, sources["src:memory_over"])
    _fit_y_to_data(f)
    return f


def _dist(sources: dict[str, ColumnDataSource], data: dict) -> Any:
    """The TTFT histogram on a log axis, the baseline's outlined."""
    f = figure(title="TTFT distribution", name="fig:dist", height=230, sizing_mode="stretch_width", min_width=260,
               toolbar_location=None, x_axis_type="log", x_axis_label="TTFT (ms, log scale)",
               y_axis_label="% of requests")
    f.y_range = _locked_range("dist", data)
    f.quad(left="left", right="right", bottom=0, top="share", source=sources["src:dist_base"],
           fill_alpha=0, line_color="#444444", line_alpha=0.6, line_dash="dashed")
    f.quad(left="left", right="right", bottom=0, top="share", source=sources["src:dist"],
           fill_color="#1f77b4", fill_alpha=0.7, line_color="white")
    f.add_tools(HoverTool(tooltips=[("TTFT", "@left{0}–@right{0} ms"), ("requests", "@count"),
                                    ("share", "@share{0.0}% of requests")],
                          renderers=list(f.renderers)))  # not the off-chart marks
    _off_chart(f, sources["src:dist_over"])
    f.y_range.start = 0
    # 1-2-5 steps read well on a log axis; Bokeh's default crowds the upper decades.
    f.xaxis.ticker = FixedTicker(ticks=[m * 10 ** e for e in range(0, 6) for m in (1, 2, 5)],
                                 minor_ticks=[m * 10 ** e for e in range(0, 6) for m in range(1, 10)])
    return f


def _off_chart(f: Any, source: ColumnDataSource) -> None:
    """What is above the chart's top, marked at its top edge, the highest with its value (`lab.page.compare`)."""
    f.scatter("x", "y", source=source, marker="triangle", size=10, color="#222222")
    f.add_layout(LabelSet(x="x", y="y", text="label", source=source, text_font_size="11px", text_color="#222222",
                          text_align="right", x_offset=-8, y_offset=-5))


def _locked_range(name: str, data: dict) -> Range1d:
    """A y range the view sets (`yr:<name>`, lab.page.compare): locked, or fitted to the data on every change."""
    patch = data[f"yr:{name}"]
    return Range1d(patch["start"], patch["end"], name=f"yr:{name}")


def _plain(title: str, name: str, height: int = 250, **kw: Any) -> Any:
    return figure(title=title, name=name, height=height, sizing_mode="stretch_width", min_width=260,
                  toolbar_location=None, **kw)


def _crossover(sources: dict[str, ColumnDataSource], data: dict) -> Any:
    f = _plain("TTFT against the share the warm GPU holds", "fig:crossover",
               x_axis_label="share of the prompt the warm GPU holds (%)", y_axis_label="time to first token (s)")
    f.line("cached", "idle", source=sources["src:crossover"], line_width=2, color=PALETTE[1],
           legend_label="idle GPU, recomputing all")
    f.line("cached", "warm", source=sources["src:crossover"], line_width=2, color=PALETTE[0],
           legend_label="warm GPU, after its queue")
    f.segment("x", "y0", "x", "y1", source=sources["src:crossover_even"], color="#555555", line_dash="dashed")
    f.scatter("cached", "ttft", source=sources["src:crossover_now"], size=10, color="color", line_color="white")
    f.add_tools(HoverTool(tooltips=[("held", "@cached{0}%"), ("idle", "@idle{0.00} s"), ("warm", "@warm{0.00} s")],
                          mode="vline", renderers=[f.renderers[1]]))
    f.x_range = Range1d(0, 100)
    f.y_range.start = 0
    _legend_above(f)
    return f


def _transfer(sources: dict[str, ColumnDataSource], data: dict) -> Any:
    routes = sources["src:transfer"].data["route"]
    f = _plain("Time to first token, by route", "fig:transfer", y_range=list(reversed(routes)),
               x_axis_label="seconds")
    f.hbar(y="route", left="zero", right="moved", height=0.6, source=sources["src:transfer"], color=PALETTE[2],
           legend_label="moving KV")
    f.hbar(y="route", left="moved", right="ttft", height=0.6, source=sources["src:transfer"], color=PALETTE[1],
           legend_label="computing")
    f.add_tools(HoverTool(tooltips=[("", "@route"), ("moving", "@moved{0.000} s"), ("first token", "@ttft{0.000} s")]))
    f.x_range.start = 0
    _legend_above(f)
    return f


def _fanout(sources: dict[str, ColumnDataSource], data: dict) -> Any:
    f = _plain("Sub-calls that found their prefix cached", "fig:fanout", height=200,
               y_range=["first call first", "all at once"], x_axis_label="sub-calls")
    f.hbar(y="way", left="zero", right="read", height=0.6, source=sources["src:fanout"], color=PALETTE[2],
           legend_label="read it from the cache")
    f.hbar(y="way", left="read", right="total", height=0.6, source=sources["src:fanout"], color=PALETTE[3],
           legend_label="computed it again")
    f.add_tools(HoverTool(tooltips=[("", "@way"), ("read", "@read sub-calls"), ("computed", "@computed sub-calls"),
                                    ("fan-out span p50", "@span{0} ms")]))
    f.x_range.start = 0
    _legend_above(f)
    return f


def _api(sources: dict[str, ColumnDataSource], data: dict) -> Any:
    f = _plain("An agent run's API bill, call by call", "fig:api", x_axis_label="call", y_axis_label="US dollars so far")
    f.line("call", "plain", source=sources["src:api"], line_width=2, color=PALETTE[1], legend_label="no caching")
    f.line("call", "cached", source=sources["src:api"], line_width=2, color=PALETTE[0],
           legend_label="prompt caching")
    f.add_tools(HoverTool(tooltips=[("call", "@call"), ("no caching", "$@plain{0.00}"), ("caching", "$@cached{0.00}")],
                          mode="vline", renderers=[f.renderers[0]]))
    f.y_range.start = 0
    _legend_above(f)
    return f


def _gpu(sources: dict[str, ColumnDataSource], data: dict) -> Any:
    what = sources["src:gpu"].data["what"]
    f = _plain("GPU dollars a month at this run's pace", "fig:gpu", height=200, y_range=list(reversed(what)),
               x_axis_label="US dollars a month")
    f.hbar(y="what", left="zero", right="usd", height=0.6, source=sources["src:gpu"], color="color")
    f.add_tools(HoverTool(tooltips=[("", "@what"), ("a month", "$@usd{0,0}")]))
    f.x_range.start = 0
    return f


def _legend_above(f: Any) -> None:
    f.legend.orientation = "horizontal"
    f.legend.border_line_alpha = 0
    f.legend.padding = 2
    f.legend.margin = 0
    f.add_layout(f.legend[0], "above")  # above the plot, never over the lines


def _locality(sources: dict[str, ColumnDataSource], data: dict) -> Any:
    routers = sources["src:locality"].data["router"]
    f = _plain("Requests that found their prefix", "fig:locality", height=230,
               y_range=FactorRange(*reversed(routers)), x_axis_label="% of continuing requests")
    f.hbar(y=dodge("router", 0.17, range=f.y_range), left="zero", right="lab", height=0.3,
           source=sources["src:locality"], color=PALETTE[0], legend_label="this lab")
    f.hbar(y=dodge("router", -0.17, range=f.y_range), left="zero", right="note", height=0.3,
           source=sources["src:locality"], color=PALETTE[1], legend_label="the note")
    f.add_tools(HoverTool(tooltips=[("", "@router"), ("this lab", "@lab{0.0}%"), ("the note", "@note{0.0}%"),
                                    ("prompt tokens cached", "@tokens{0.0}%"),
                                    ("p99", "@p99{0,0} ms"), ("requests/s", "@rps{0.00}")]))
    f.x_range = Range1d(0, 100)
    _legend_above(f)
    return f


def _roofline(sources: dict[str, ColumnDataSource], data: dict) -> Any:
    f = _plain("Attainable TFLOP/s against arithmetic intensity", "fig:roofline", height=260, x_axis_type="log",
               y_axis_type="log", x_axis_label="FLOPs per byte read", y_axis_label="TFLOP/s")
    f.line("intensity", "tflops", source=sources["src:roofline"], line_width=2, color="#444444", legend_label="the roof")
    f.line("x", "y", source=sources["src:roofline_ridge"], line_dash="dashed", color="#888888", legend_label="ridge")
    f.line("intensity", "tflops", source=sources["src:roofline_model"], line_width=2, color=PALETTE[1],
           legend_label="fitted to measured kernels")
    f.scatter("intensity", "tflops", source=sources["src:roofline_measured"], size=5, color=PALETTE[0],
              legend_label="measured (Vidur)")
    measured = f.renderers[-1]
    f.scatter("intensity", "tflops", source=sources["src:roofline_points"], size=11, color="color", line_color="white")
    f.add_tools(HoverTool(tooltips=[("", "@what"), ("FLOPs a byte", "@intensity{0,0.0}"), ("TFLOP/s", "@tflops{0,0.0}"),
                                    ("of the peak", "@share{0.00}%")], renderers=[f.renderers[-1]]))
    f.add_tools(HoverTool(tooltips=[("measured, tokens", "@tokens{0,0}"), ("TFLOP/s", "@tflops{0,0.0}")],
                          renderers=[measured]))
    _legend_above(f)
    _name_items(f, {"fitted to measured kernels": "li:roofline_model", "measured (Vidur)": "li:roofline_measured"})
    return f


def _name_items(f: Any, names: dict[str, str]) -> None:
    """Name legend items by their label, so the view can hide one whose glyphs have nothing to draw."""
    for item in f.legend[0].items:
        if item.label.value in names:
            item.name = names[item.label.value]


def _prefill(sources: dict[str, ColumnDataSource], data: dict) -> Any:
    f = _plain("Seconds to prefill one prompt alone", "fig:prefill", height=260, x_axis_type="log", y_axis_type="log",
               x_axis_label="prompt tokens", y_axis_label="seconds")
    f.line("tokens", "seconds", source=sources["src:prefill"], line_width=2, color=PALETTE[1],
           legend_label="the whole pass")
    f.line("tokens", "seconds", source=sources["src:prefill_core"], line_width=2, line_dash="dashed", color="#444444",
           legend_label="attention aside")
    f.scatter("tokens", "seconds", source=sources["src:prefill_measured"], size=6, color=PALETTE[0],
              legend_label="measured (Vidur)")
    f.scatter("tokens", "seconds", source=sources["src:prefill_now"], size=11, color=PALETTE[1], line_color="white")
    f.add_tools(HoverTool(tooltips=[("tokens", "@tokens{0,0}"), ("seconds", "@seconds{0.0000}")]))
    _legend_above(f)
    _name_items(f, {"attention aside": "li:prefill_core", "measured (Vidur)": "li:prefill_measured"})
    return f


def _join(sources: dict[str, ColumnDataSource], data: dict) -> Any:
    f = _plain("Gap before each token of the answers decoding", "fig:join", height=260, y_axis_type="log",
               x_axis_label="seconds since the long prompt arrived", y_axis_label="gap between tokens (ms)")
    for (way, label), color in zip(JOIN_WAYS, ("#888888", PALETTE[0], PALETTE[3])):
        f.step("t", "gap", source=sources[f"src:join_{way}"], mode="before", line_width=2, color=color,
               legend_label=label)  # a gap is the time up to its token
    f.line("t", "gap", source=sources["src:join_slo"], line_dash="dashed", color="#444444", legend_label="target")
    f.add_tools(HoverTool(tooltips=[("", "$name"), ("after", "@t{0.000} s"), ("gap", "@gap{0,0.0} ms")],
                          renderers=f.renderers[:3]))
    for r, (_, label) in zip(f.renderers, JOIN_WAYS):
        r.name = label
    _legend_above(f)
    return f


def _stall(sources: dict[str, ColumnDataSource], data: dict) -> Any:
    f = _plain("Longest and mean gap of each answer", "fig:stall", height=260,
               x_axis_label="time the request arrived (s)", y_axis_label="gap between tokens (ms)")
    f.scatter("t", "tpot", source=sources["src:stall"], size=4, color=PALETTE[5], alpha=0.5, legend_label="mean gap")
    f.scatter("t", "stall", source=sources["src:stall"], size=4, color=PALETTE[3], alpha=0.7,
              legend_label="longest gap")
    f.line("t", "gap", source=sources["src:stall_slo"], line_dash="dashed", color="#444444", legend_label="target")
    f.add_tools(HoverTool(tooltips=[("arrived", "@t{0.0} s"), ("replica", "@replica"), ("longest gap", "@stall{0,0} ms"),
                                    ("mean gap", "@tpot{0.0} ms")], renderers=f.renderers[:2]))
    f.y_range.start = 0
    _legend_above(f)
    return f


def _split(sources: dict[str, ColumnDataSource], data: dict) -> Any:
    f = _plain("Requests within each target", "fig:split", height=210, x_axis_label="% of requests",
               y_range=FactorRange(*data["yr:split"]["factors"], name="yr:split"))
    f.hbar(y=dodge("setup", 0.17, range=f.y_range), left="zero", right="ttft", height=0.3,
           source=sources["src:split"], color=PALETTE[0], legend_label="first token in time")
    f.hbar(y=dodge("setup", -0.17, range=f.y_range), left="zero", right="tbt", height=0.3,
           source=sources["src:split"], color=PALETTE[1], legend_label="no gap over the target")
    f.add_layout(Span(location=SLO_SHARE * 100, dimension="height", line_dash="dashed", line_color="#444444"))
    f.add_tools(HoverTool(tooltips=[("", "@setup"), ("first token in time", "@ttft{0.0}%"),
                                    ("no long gap", "@tbt{0.0}%"), ("TTFT p99", "@ttft_p99{0,0} ms"),
                                    ("longest gap p99", "@stall_p99{0,0} ms"), ("hit rate", "@hit{0.0}%")]))
    f.x_range = Range1d(0, 100)
    _legend_above(f)
    return f


def _queue(sources: dict[str, ColumnDataSource], data: dict) -> Any:
    f = _plain("TTFT p99 over time, by queue order", "fig:queue", height=250, x_axis_label="time (s)",
               y_axis_label="ms")
    f.line("t", "p99", source=sources["src:queue_fcfs"], line_width=2, color=PALETTE[1],
           legend_label="first come first served")
    f.line("t", "p99", source=sources["src:queue_longest_prefix_first"], line_width=2, color=PALETTE[0],
           line_dash="dashed", legend_label="longest prefix first")
    f.add_tools(HoverTool(tooltips=[("time", "@t{0} s"), ("TTFT p99", "@p99{0,0} ms")], mode="vline"))
    f.y_range.start = 0
    _legend_above(f)
    return f


def _tree(sources: dict[str, ColumnDataSource], data: dict) -> Any:
    """An icicle: a block per node (or per bunch of small branches), as wide as the tokens below it, one level
    per row from the root's children down; the row above the trunk shows what was evicted recently."""
    frame = sources["src:tree_frame"].data
    x_end, y_start = (frame["x_end"] or [1])[0], (frame["y_start"] or [1.5])[0]
    f = _plain("Cached tokens, system prompts down to turns", "fig:tree", height=320,
               x_axis_label="tokens (the axis ends at the replica's capacity)",
               x_range=Range1d(0, x_end, name="xr:tree"), y_range=Range1d(y_start, -1.6, name="yr:tree"))
    gone = f.rect(x="x", y=-1, width="width", height=0.8, source=sources["src:tree_gone"], fill_color="#ffffff",
                  line_color="#777777", hatch_pattern="/", hatch_color="#999999", hatch_alpha=0.6,
                  legend_label="evicted")
    held = f.rect(x="x", y="y", width="width", height=0.9, source=sources["src:tree"], fill_color="color",
                  line_color="line", line_width=2)
    for state, label in (("hit", "hit"), ("cold", "cold"), ("pinned", "pinned")):
        f.rect(x=[0], y=[0], width=0, height=0, fill_color=TREE_COLOURS[state], line_color=None, legend_label=label)
    f.rect(x=[0], y=[0], width=0, height=0, fill_color="#ffffff", line_color=PALETTE[2], line_width=2,
           legend_label="new")
    f.add_layout(LabelSet(x="x", y="y", text="label", source=sources["src:tree"], text_font_size="10px",
                          text_align="center", text_baseline="middle", text_color="#ffffff"))
    f.add_tools(HoverTool(renderers=[held], tooltips=[("", "@name"), ("tokens", "@tokens{0,0}"), ("", "@state")]))
    f.add_tools(HoverTool(renderers=[gone], tooltips=[("evicted from", "@name"), ("tokens", "@tokens{0,0}")]))
    f.yaxis.visible = False
    f.ygrid.visible = False
    f.outline_line_width = 3
    f.outline_line_color = replica_colour(0)  # the view frames it in its replica's colour (`fig:tree`)
    f.x_range.bounds = None
    _legend_above(f)
    return f


DRAW = {"ttft": _ttft, "hit": _hit, "load": _load, "memory": _memory, "dist": _dist, "crossover": _crossover,
        "transfer": _transfer, "fanout": _fanout, "api": _api, "gpu": _gpu, "roofline": _roofline,
        "prefill": _prefill, "join": _join, "stall": _stall, "split": _split, "queue": _queue, "locality": _locality,
        "tree": _tree}
