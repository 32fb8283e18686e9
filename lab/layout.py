"""The page's widgets and charts, laid out with Panel and Bokeh at build time.

`lab_page(view)` and `embed_page(view)` return a Panel template holding the
controls and figures, with the first view's numbers already in them (the
same `lab.view` code the browser runs later). Widgets carry a Bokeh tag
(`ctl:<key>`, `ctl:<key>:off`, `evt:<input>`, `act:<event kind>`), sources
and figures a Bokeh name (`src:ttft`), which is how `static/bridge.js` finds
them to read and patch. Which widget each key gets, its range and its
special behaviour come from `lab.controls`; nothing here names a key. Every
widget change calls `window.prefixLab.changed(name, value, prop)`; every
button `window.prefixLab.action(request, input names)`: one line of JS
each, the rest is generic.
"""

import json
from pathlib import Path
from typing import Any

import panel as pn
from bokeh.models import ColumnDataSource, FixedTicker, HoverTool, Range1d
from bokeh.plotting import figure

from .controls import CONTROLS, EVENT_INPUTS, Control

__all__ = ["embed_page", "lab_page"]

STATIC = Path(__file__).resolve().parent.parent / "static"
CHANGED = "window.prefixLab && window.prefixLab.changed({name!r}, cb_obj.{prop}, {prop!r})"
EVENT_BUTTONS = (("timestamp", "Inject timestamp"), ("surge", "Tenant surge"), ("burst", "Burst"))


def _widget(c: Control) -> Any:
    common: dict[str, Any] = {"name": c.label, "tags": [c.name], "sizing_mode": "stretch_width"}
    if c.widget == "checkbox":
        w = pn.widgets.Checkbox(**common, value=bool(c.default))
    elif c.widget == "buttons":
        w = pn.widgets.RadioButtonGroup(**common, options=dict(zip(c.labels, c.options)), button_type="default")
    elif c.widget == "select":
        w = pn.widgets.Select(**common, options=dict(zip(c.labels, c.options)))
    else:
        start, end, step = c.range
        if c.widget == "number":
            w = pn.widgets.IntInput(**common, start=int(start), end=int(end), step=int(step), value=c.default)
        elif isinstance(c.default, int):
            w = pn.widgets.IntSlider(**common, start=int(start), end=int(end), step=int(step))
        else:
            w = pn.widgets.FloatSlider(**common, start=start, end=end, step=step)
    w.jscallback(value=CHANGED.format(name=c.name, prop=c.prop))
    return w


def _off_switch(c: Control) -> Any:
    box = pn.widgets.Checkbox(name=c.off_label, tags=[c.off_name])
    box.jscallback(value=CHANGED.format(name=c.off_name, prop="active"))
    return box


def controls(keys: tuple[str, ...] | None = None) -> pn.Column:
    chosen = [c for c in CONTROLS if keys is None or c.key in keys]
    items: list[Any] = []
    for c in chosen:
        if c.widget == "buttons":  # a button group shows no title of its own
            items.append(pn.pane.HTML(f'<div style="font-size: 13px">{c.label}</div>', margin=(6, 10, 0, 10)))
        items.append(_widget(c))
        if c.off_label:
            items.append(_off_switch(c))
    return pn.Column(*items, sizing_mode="stretch_width", margin=0)


def event_controls() -> pn.Column:
    inputs = [pn.widgets.FloatInput(name=i.label, value=i.default, start=i.low, end=i.high, step=i.step, tags=[i.name],
                                    sizing_mode="stretch_width", min_width=70) for i in EVENT_INPUTS]
    names = json.dumps([i.name for i in EVENT_INPUTS])
    buttons = []
    for kind, label in EVENT_BUTTONS:
        b = pn.widgets.Button(name=label, tags=[f"act:{kind}"], button_type="primary" if kind == "timestamp" else "default",
                              sizing_mode="stretch_width", margin=(5, 4))
        b.js_on_click(code=f"window.prefixLab && window.prefixLab.action({{type: 'add_event', kind: '{kind}'}}, {names})")
        buttons.append(b)
    return pn.Column(pn.Row(*inputs, sizing_mode="stretch_width", margin=0), buttons[0], pn.Row(*buttons[1:], margin=0),
                     sizing_mode="stretch_width", margin=0)


def _time_figure(title: str, y_label: str, name: str, events: ColumnDataSource, height: int = 210) -> Any:
    fig = figure(title=title, name=name, height=height, sizing_mode="stretch_width",
                 toolbar_location=None, x_axis_label="time (s)", y_axis_label=y_label)
    fig.extra_y_ranges = {"events": Range1d(0, 1)}
    fig.quad(left="left", right="right", bottom=0, top=1, y_range_name="events", source=events,
             fill_color="color", fill_alpha=0.12, line_alpha=0)  # colours match the events list
    fig.y_range.start = 0
    return fig


def figures(view: dict, which: tuple[str, ...] = ("ttft", "hit", "backlog", "dist", "memory")) -> list[Any]:
    data = view["patches"]["bokeh"]
    sources = {name: ColumnDataSource(data[name]["data"], name=name)
               for name in ("src:ttft", "src:hit", "src:backlog", "src:events", "src:dist", "src:memory")}
    events = sources["src:events"]  # shared by the time charts: events shade each of them
    out = []
    if "ttft" in which:
        f = _time_figure("Time to first token", "ms", "fig:ttft", events)
        f.line("t", "p50", source=sources["src:ttft"], line_width=2, color="#1f77b4", legend_label="p50")
        f.line("t", "p99", source=sources["src:ttft"], line_width=2, color="#d62728", legend_label="p99")
        f.legend.location = "top_left"
        f.legend.background_fill_alpha = 0.6
        f.add_tools(HoverTool(tooltips=[("t", "@t{0} s"), ("p50", "@p50{0} ms"), ("p99", "@p99{0} ms")], mode="vline"))
        out.append(f)
    if "hit" in which:
        f = _time_figure("Prefix cache hit rate", "% of prompt tokens", "fig:hit", events)
        f.y_range.end = 100
        f.line("t", "hit", source=sources["src:hit"], line_width=2, color="#2ca02c")
        f.add_tools(HoverTool(tooltips=[("t", "@t{0} s"), ("hit rate", "@hit{0.0}%")], mode="vline"))
        out.append(f)
    if "backlog" in which:
        f = _time_figure("Queued work per replica", "seconds of backlog", "fig:backlog", events)
        f.multi_line("xs", "ys", source=sources["src:backlog"], color="color", line_width=1.5)
        f.add_tools(HoverTool(tooltips=[("", "@label")]))
        out.append(f)
    if "memory" in which:
        f = _time_figure("KV memory of the fleet", "thousand tokens", "fig:memory", events)
        f.varea_stack(["running", "cached"], x="t", source=sources["src:memory"], color=("#d95f02", "#7570b3"),
                      alpha=0.7, legend_label=["held by running requests", "prefix cache besides"])
        f.legend.location = "top_left"
        f.legend.background_fill_alpha = 0.6
        f.add_tools(HoverTool(tooltips=[("t", "@t{0} s"), ("running", "@running{0.0}k"), ("cached", "@cached{0.0}k")],
                              mode="vline"))
        out.append(f)
    for f in out:  # y ranges follow the data, not the event shading drawn on its own 0..1 range
        f.y_range.renderers = [r for r in f.renderers if r.y_range_name == "default"]
    if "dist" in which:
        f = figure(title="TTFT distribution", name="fig:dist", height=210, sizing_mode="stretch_width",
                   toolbar_location=None, x_axis_type="log", x_axis_label="TTFT (ms, log scale)",
                   y_axis_label="% of requests")
        f.quad(left="left", right="right", bottom=0, top="share", source=sources["src:dist"],
               fill_color="#1f77b4", fill_alpha=0.7, line_color="white")
        f.add_tools(HoverTool(tooltips=[("TTFT", "@left{0}–@right{0} ms"), ("requests", "@count"), ("share", "@share{0.0}%")]))
        f.y_range.start = 0
        # 1-2-5 steps read well on a log axis; Bokeh's default crowds the upper decades.
        f.xaxis.ticker = FixedTicker(ticks=[m * 10 ** e for e in range(0, 6) for m in (1, 2, 5)],
                                     minor_ticks=[m * 10 ** e for e in range(0, 6) for m in range(1, 10)])
        out.append(f)
    return out


def _apply_widget_values(column: pn.Column, view: dict) -> None:
    """Start the widgets at the view's values (the default scenario's)."""
    patches = view["patches"]["bokeh"]
    for w in column.select(pn.widgets.Widget):
        tag = (w.tags or [None])[0]
        patch = patches.get(tag)
        if not patch:
            continue
        if "active" in patch and isinstance(w, pn.widgets.RadioButtonGroup):
            w.value = list(w.options.values())[patch["active"]]
        elif "active" in patch:
            w.value = patch["active"]
        elif "value" in patch:
            w.value = patch["value"]
        if "disabled" in patch:
            w.disabled = patch["disabled"]


def lab_page(view: dict) -> pn.Template:
    template = pn.Template((STATIC / "index.html.j2").read_text(encoding="utf-8"),
                           nb_template=None)
    ctl = controls()
    _apply_widget_values(ctl, view)
    template.add_panel("controls", ctl)
    template.add_panel("events", event_controls())
    figs = figures(view)
    template.add_panel("charts", pn.GridBox(*figs, ncols=2, sizing_mode="stretch_width"))
    return template


EMBED_KEYS = ("fleet.cache", "fleet.replicas", "router.kind", "dynamic_text")


def embed_page(view: dict) -> pn.Template:
    template = pn.Template((STATIC / "embed.html.j2").read_text(encoding="utf-8"), nb_template=None)
    ctl = controls(EMBED_KEYS)
    _apply_widget_values(ctl, view)
    template.add_panel("controls", ctl)
    figs = figures(view, which=("ttft", "hit"))
    template.add_panel("charts", pn.Column(*figs, sizing_mode="stretch_width", margin=0))
    return template
