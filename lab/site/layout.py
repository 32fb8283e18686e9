"""The page's widgets and charts, laid out with Panel and Bokeh at build time.

`lab_page(view)` and `embed_page(view)` return a Panel template holding the
controls and figures, with the first view's numbers already in them (the
same `lab.page.view` code the browser runs later). Widgets carry a Bokeh tag
(`ctl:<key>`, `ctl:<key>:off`, `evt:<input>`, `act:<event kind>`), each
control's box a tag `box:<key>` and its help line the name `help:<key>`;
sources and figures a Bokeh name (`src:ttft`). That is how
`static/bridge.js` finds them to read and patch. Which widget each key gets,
its range and its special behaviour come from `lab.page.controls`, its help line
from `lab.page.glossary`; nothing here names a key.

Every widget change calls `window.prefixLab.changed(name, value, prop,
live)`: a slider calls it with `live` while it moves and once more, settled,
when it is let go (Bokeh's `value_throttled`); every button calls
`window.prefixLab.action(request, input names)`. One line of JS each, the
rest is generic. A widget's second tag, `{"aria": {"label", "description"}}`,
is what the bridge gives assistive technology for it: Bokeh leaves sliders,
spinner buttons and button groups unnamed.

Each figure is a root of its own, so the page's CSS lays the charts out (two
across on a wide screen, one on a phone) and each has a caption in the page
(`#cap-<chart>`) that the view fills with its numbers.
"""

import html
import json
from pathlib import Path
from typing import Any

import panel as pn
from bokeh.models import (
    ColumnDataSource,
    Div,
    HoverTool,
    LabelSet,
    Range1d,
)
from bokeh.plotting import figure

from lab.page.controls import CONTROLS, EVENT_INPUTS, SECTIONS, Control
from lab.page.figures import (
    ARTICLE_FIGURES,
    EMBED_CONTROLS,
    EMBED_FIGURES,
    FLEET_CHARTS,
    PALETTE,
)
from lab.page.missionview import GUESS_INPUT, GUESS_RANGE
from lab.site.drawings import figures
from lab.site.film import film_html
from model import Scenario

__all__ = ["embed_page", "lab_page"]

STATIC = Path(__file__).resolve().parents[2] / "static"
CHANGED = "window.prefixLab && window.prefixLab.changed({name!r}, cb_obj.{source}, {prop!r}, {live})"
EVENT_BUTTONS = (("timestamp", "Inject timestamp"), ("surge", "Tenant surge"), ("burst", "Burst"))
HELP_STYLE = {"font-size": "12px", "color": "#5b6570", "line-height": "1.35"}


class _Released:
    """A Panel slider whose release a JS callback can follow: Panel maps no name to Bokeh's `value_throttled`
    (set when a handle is let go, or moved by a key), so `jscallback(value_throttled=...)` needs one; Bokeh
    itself sets it, so it is never sent to the model."""

    _rename = {"value_throttled": "value_throttled"}

    def _process_param_change(self, params: dict[str, Any]) -> dict[str, Any]:
        params = super()._process_param_change(params)  # type: ignore[misc]
        params.pop("value_throttled", None)
        return params


class FloatSlider(_Released, pn.widgets.FloatSlider):
    _rename = {**pn.widgets.FloatSlider._rename, **_Released._rename}


class IntSlider(_Released, pn.widgets.IntSlider):
    _rename = {**pn.widgets.IntSlider._rename, **_Released._rename}


def _aria(label: str, description: str = "") -> dict:
    """The tag the bridge reads to name a widget's focusable parts."""
    return {"aria": {"label": label, "description": description}}


def _widget(c: Control) -> Any:
    common: dict[str, Any] = {"name": c.label, "tags": [c.name, _aria(c.label, c.help())],
                              "sizing_mode": "stretch_width", "margin": (4, 8)}
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
            w = IntSlider(**common, start=int(start), end=int(end), step=int(step))
        else:
            w = FloatSlider(**common, start=start, end=end, step=step)
    if c.widget == "slider":  # moving: live; let go (or a key press): settled. One call each: Panel keeps
        # only the last of several properties given to one jscallback.
        w.jscallback(value=CHANGED.format(name=c.name, source="value", prop="value", live="true"))
        w.jscallback(value_throttled=CHANGED.format(name=c.name, source="value_throttled", prop="value_throttled",
                                                    live="false"))
    else:
        w.jscallback(value=CHANGED.format(name=c.name, source=c.prop, prop=c.prop, live="false"))
    return w


def _off_switch(c: Control) -> Any:
    box = pn.widgets.Checkbox(name=c.off_label, tags=[c.off_name, _aria(c.off_label)], margin=(0, 8, 4, 8))
    box.jscallback(value=CHANGED.format(name=c.off_name, source="active", prop="active", live="false"))
    return box


def _help(c: Control) -> Any:
    """The control's help line: a Bokeh Div the view can rewrite (a menu's follows its choice)."""
    return pn.pane.Bokeh(Div(text=html.escape(c.help(Scenario())), name=c.help_name, styles=HELP_STYLE,
                             sizing_mode="stretch_width", margin=(0, 8, 6, 8)), sizing_mode="stretch_width",
                         margin=0)


def controls(keys: tuple[str, ...] | None = None, helped: bool = True, beside: str | None = None,
             shown: tuple[str, ...] | None = None, section: str | None = None) -> pn.Column:
    """The controls (those for `keys`, or those beside figure `beside` ("" the fleet's column), or all; of those,
    with `section`, the ones waiting in it), each in its box with its off switch and help line; with `shown`, the
    boxes of other keys start hidden."""
    boxes = []
    for c in CONTROLS:
        if (keys is not None and c.key not in keys) or (beside is not None and c.figure != beside) or (
                section is not None and c.section != section):
            continue
        items: list[Any] = []
        if c.widget == "buttons":  # a button group shows no title of its own
            items.append(pn.pane.HTML(f'<div style="font-size: 13px">{html.escape(c.label)}</div>',
                                      margin=(4, 8, 0, 8)))
        items.append(_widget(c))
        if c.off_label:
            items.append(_off_switch(c))
        if helped:
            items.append(_help(c))
        boxes.append(pn.Column(*items, tags=[c.box_name], sizing_mode="stretch_width", margin=0,
                               visible=shown is None or c.key in shown))
    return pn.Column(*boxes, sizing_mode="stretch_width", margin=0)


def event_controls() -> pn.Column:
    # No start/end on the inputs: Bokeh would silently keep its old value for one out of range, and the
    # view could not say what it used instead. The view checks them against EVENT_INPUTS' bounds.
    inputs = [pn.widgets.FloatInput(name=i.label, value=i.default, step=i.step, tags=[i.name, _aria(i.label)],
                                    sizing_mode="stretch_width", min_width=0, margin=(5, 4))
              for i in EVENT_INPUTS]
    names = json.dumps([i.name for i in EVENT_INPUTS])
    buttons = []
    for kind, label in EVENT_BUTTONS:
        b = pn.widgets.Button(name=label, tags=[f"act:{kind}"], button_type="primary" if kind == "timestamp" else "default",
                              sizing_mode="stretch_width", margin=(5, 4))
        b.js_on_click(code=f"window.prefixLab && window.prefixLab.action({{type: 'add_event', kind: '{kind}'}}, {names})")
        buttons.append(b)
    return pn.Column(pn.GridBox(*inputs, ncols=len(inputs), sizing_mode="stretch_width", margin=(0, 6)), buttons[0],
                     pn.Row(*buttons[1:], sizing_mode="stretch_width", margin=0),
                     tags=["box:events"], sizing_mode="stretch_width", margin=0)



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


def predict_controls() -> pn.Column:
    """A mission's guess: a slider (its range, step, format and title set by the view) and the button that
    sends its value with the `predict` action."""
    guess = FloatSlider(name="Your guess", **GUESS_RANGE, tags=[GUESS_INPUT, _aria("Your guess")],
                        sizing_mode="stretch_width", margin=(4, 8))
    check = pn.widgets.Button(name="Check my guess", button_type="primary", sizing_mode="stretch_width",
                              margin=(6, 8), tags=["act:predict"])
    check.js_on_click(code=f"window.prefixLab && window.prefixLab.action({{type: 'predict'}}, ['{GUESS_INPUT}'])")
    return pn.Column(guess, check, sizing_mode="stretch_width", margin=0)


def landscape(view: dict) -> Any:
    """Every swept setup of the open mission on its two conflicting figures (lab.page.teach fills it)."""
    data = view["patches"]["bokeh"]
    sources = {name: ColumnDataSource(data[name]["data"], name=name)
               for name in ("src:land", "src:land_front", "src:land_start", "src:land_you")}
    f = figure(name="fig:land", height=240, sizing_mode="stretch_width", min_width=220, toolbar_location=None,
               y_range=Range1d(data["yr:land"]["start"], data["yr:land"]["end"], name="yr:land"))
    f.xaxis.name, f.yaxis.name = "ax:land_x", "ax:land_y"
    f.xaxis.axis_label, f.yaxis.axis_label = data["ax:land_x"]["axis_label"], data["ax:land_y"]["axis_label"]
    f.line("x", "y", source=sources["src:land_front"], color="#444444", line_width=1.5)
    dots = f.scatter("x", "y", source=sources["src:land"], size=7, color="color", alpha=0.8, line_color="#666666",
                     line_width=0.5)
    f.scatter("x", "y", source=sources["src:land_start"], marker="square", size=11, color="#ffffff",
              line_color=PALETTE[3], line_width=2)
    f.scatter("x", "y", source=sources["src:land_you"], marker="diamond", size=16, color=PALETTE[7],
              line_color="#ffffff")
    f.add_tools(HoverTool(renderers=[dots], tooltips=[("", "@setup"), ("stars", "@stars")]))
    over = ColumnDataSource(data["src:land_over"]["data"], name="src:land_over")  # far worse setups, above the axis
    f.scatter("x", "y", source=over, marker="triangle", size=10, color="#222222")
    f.add_layout(LabelSet(x="x", y="y", text="label", source=over, text_font_size="11px", text_color="#222222",
                          text_align="left", x_offset=8, y_offset=-5))
    return f


def lab_page(view: dict) -> pn.Template:
    template = pn.Template((STATIC / "index.html.j2").read_text(encoding="utf-8"),
                           nb_template=None)
    ctl = controls(beside="", section="")  # the seed's own: what a newcomer sees first
    _apply_widget_values(ctl, view)
    template.add_panel("controls", ctl)
    for name in SECTIONS:  # the rest, one root a section, each drawn once its section is opened
        more = controls(beside="", section=name)
        _apply_widget_values(more, view)
        template.add_panel(f"more_{name}", more)
    template.add_variable("sections", list(SECTIONS.items()))
    template.add_panel("events", event_controls())
    template.add_panel("predict", predict_controls())
    template.add_panel("landscape", pn.pane.Bokeh(landscape(view), sizing_mode="stretch_width", margin=0))
    _add_figures(template, view, beside=True)
    return template


def embed_page(view: dict) -> pn.Template:
    """Every figure and every control: the embed's URL says which it shows (`lab.page.view.read_shown`)."""
    template = pn.Template((STATIC / "embed.html.j2").read_text(encoding="utf-8"), nb_template=None)
    ctl = controls(helped=False, shown=EMBED_CONTROLS)
    _apply_widget_values(ctl, view)
    template.add_panel("controls", ctl)
    _add_figures(template, view, beside=False)
    return template


def _height(model: Any) -> int:
    """The height a figure (or a row or column of them) takes once drawn, in px; 0 if it does not say."""
    if isinstance(getattr(model, "height", None), int):
        return int(model.height)
    children = [_height(child) for child in getattr(model, "children", ()) if not isinstance(child, tuple)]
    if not children:
        return 0
    return max(children) if type(model).__name__ == "Row" else sum(children)


def _add_figures(template: pn.Template, view: dict, beside: bool) -> None:
    """Each figure as root `chart_<name>`, and its height (`heights`: its place keeps that room from the first
    paint); with `beside`, each article figure's own controls as `ctl_<name>`."""
    heights = {}
    for name, fig in figures(view).items():
        template.add_panel(f"chart_{name}", pn.pane.Bokeh(fig, sizing_mode="stretch_width", margin=0))
        heights[name] = _height(fig)
    template.add_variable("heights", heights)
    beside_names = []
    if beside:
        for f in ARTICLE_FIGURES:
            ctl = FIGURE_CONTROLS[f.name](view) if f.name in FIGURE_CONTROLS else controls(beside=f.name)
            if not ctl.objects:  # all its controls are the fleet's: no root for it (an empty one is Bokeh's W-1002)
                continue
            _apply_widget_values(ctl, view)
            template.add_panel(f"ctl_{f.name}", ctl)
            beside_names.append(f.name)
    if not beside:  # an embed shows a figure's own widgets (not scenario controls) with the figure
        for name, make in FIGURE_CONTROLS.items():
            template.add_panel(f"ctl_{name}", make(view))
    template.add_variable("fleet_charts", [(f.name, f.title) for f in FLEET_CHARTS])
    template.add_variable("article_figures", [(f.name, f.title) for f in ARTICLE_FIGURES])
    template.add_variable("embed_figures", EMBED_FIGURES)
    template.add_variable("figure_controls", tuple(FIGURE_CONTROLS))
    template.add_variable("canvas_figures", {"film": film_html(view, compact=beside)})  # drawn by static/film.js
    template.add_variable("beside_controls", tuple(beside_names))


# -- the radix tree, drawn ------------------------------------------------------------------


def _tree_controls(view: dict) -> pn.Column:
    """The tree's replica and moment: page keys (`tree_replica`, `tree_at`), not scenario keys."""
    patches = view["patches"]["bokeh"]
    chosen, at = patches["tree:replica"], patches["tree:at"]
    replica = pn.widgets.Select(name="Replica", options=chosen["options"], value=chosen["value"],
                                tags=["tree:replica", _aria("Replica whose tree is drawn")],
                                sizing_mode="stretch_width", margin=(4, 8))
    replica.jscallback(value=CHANGED.format(name="tree:replica", source="value", prop="value", live="false"))
    moment = FloatSlider(name="At (s)", start=at["start"], end=at["end"], step=at["step"], value=at["value"],
                         tags=["tree:at", _aria("Moment of the run the tree is drawn at, in seconds")],
                         sizing_mode="stretch_width", margin=(4, 8))
    # settled moves only: each one re-runs the scenario up to that moment
    moment.jscallback(value_throttled=CHANGED.format(name="tree:at", source="value_throttled",
                                                     prop="value_throttled", live="false"))
    return pn.Column(replica, moment, sizing_mode="stretch_width", margin=0)


FIGURE_CONTROLS = {"tree": _tree_controls}  # figures with widgets of their own, beside them and in embeds
