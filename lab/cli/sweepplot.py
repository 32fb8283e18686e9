"""The sweep's trade-off as one standalone HTML page (Bokeh, resources inline: it opens offline).

Three panels share the x axis, the sweep's first numeric grid key (replicas
or memory): TTFT p99 (log scale), hit rate and prefill GPU-seconds, one line
per value of the other grid keys (one per router, say). A target on one of
those figures is a dashed line; the cheapest setup meeting every target is a
star on each panel and is named in the heading.
"""

from pathlib import PurePath
from typing import Any

__all__ = ["plot_html"]

PANELS = (  # figure, axis label, scale
    ("ttft_p99_ms", "TTFT p99 (ms)", "log"),
    ("hit_rate", "hit rate", "linear"),
    ("prefill_gpu_s", "prefill GPU-seconds", "linear"),
)
PALETTE = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
           "#bcbd22", "#17becf")
X_PREFERRED = ("fleet.replicas", "fleet.memory_gb")
LABELS = {"fleet.replicas": "replicas", "fleet.memory_gb": "prefix memory per replica (GB)"}


def plot_html(sweep: dict[str, Any]) -> str:
    """The page for a sweep as `prefix-lab sweep` saves it (its JSON); ValueError if nothing is numeric."""
    import numpy as np
    from bokeh.embed import file_html
    from bokeh.layouts import column
    from bokeh.models import Div, Label, NumeralTickFormatter, Span
    from bokeh.plotting import figure
    from bokeh.resources import INLINE

    rows, keys = sweep["rows"], list(sweep["grid"])
    x_key = _x_key(rows, keys)
    others = [k for k in keys if k != x_key]
    lines: dict[tuple, list[int]] = {}
    for i, row in enumerate(rows):
        lines.setdefault(tuple(row[k] for k in others), []).append(i)
    best = sweep.get("cheapest")
    targets = [_target(t) for t in sweep.get("targets", [])]

    panels: list[Any] = []
    for n, (name, label, scale) in enumerate(PANELS):
        shared = {"x_range": panels[0].x_range} if panels else {}
        fig = figure(width=860, height=250, y_axis_type=scale, toolbar_location=None, y_axis_label=label, **shared)
        if n == len(PANELS) - 1:
            fig.xaxis.axis_label = LABELS.get(x_key, x_key)
        for colour, (values, members) in zip(_colours(len(lines)), lines.items()):
            x = np.array([rows[i][x_key] for i in members], dtype=float)
            y = np.array([rows[i][name] for i in members], dtype=float)
            order = np.argsort(x, kind="stable")
            legend = _legend(others, values)
            fig.line(x[order], y[order], line_width=2, color=colour, legend_label=legend)
            fig.scatter(x[order], y[order], size=6, color=colour, legend_label=legend)
        for figure_name, op, value in targets:
            if figure_name == name:
                fig.add_layout(Span(location=value, dimension="width", line_dash="dashed", line_color="#444"))
                fig.add_layout(Label(x=8, y=value, x_units="screen", text=f"target {op} {value:g}",
                                     text_font_size="11px", text_color="#444", y_offset=4,
                                     background_fill_color="white", background_fill_alpha=0.8))
        if best is not None:
            fig.scatter([rows[best][x_key]], [rows[best][name]], marker="star", size=20, color="#d62728",
                        line_color="black", legend_label="cheapest meeting the targets")
        if name == "hit_rate":
            fig.yaxis.formatter = NumeralTickFormatter(format="0%")
        legend = fig.legend[0]
        if panels:  # one legend, above the first panel
            legend.visible = False
        else:
            legend.orientation = "horizontal"
            legend.label_text_font_size = "12px"
            fig.add_layout(legend, "above")
        panels.append(fig)
    heading = Div(text=_heading(sweep, x_key, keys), width=860)
    return file_html(column(heading, *panels), resources=INLINE, title="prefix-lab sweep")


def _x_key(rows: list[dict[str, Any]], keys: list[str]) -> str:
    def numeric(key: str) -> bool:
        return all(isinstance(r[key], (int, float)) and not isinstance(r[key], bool) for r in rows)

    for key in [*X_PREFERRED, *keys]:
        if key in keys and numeric(key):
            return key
    raise ValueError("the plot needs a numeric grid key for its x axis, such as fleet.replicas or fleet.memory_gb")


def _target(text: str) -> tuple[str, str, float]:
    op = "<=" if "<=" in text else ">="
    name, _, value = text.partition(op)
    return name, op, float(value)


def _legend(keys: list[str], values: tuple) -> str:
    if not keys:
        return "all"
    if len(keys) == 1:
        return _text(values[0])
    return ", ".join(f"{k}={_text(v)}" for k, v in zip(keys, values))


def _text(value: Any) -> str:
    return "none" if value is None else f"{value:g}" if isinstance(value, float) else str(value)


def _colours(n: int) -> list[str]:
    return [PALETTE[i % len(PALETTE)] for i in range(n)]


def _heading(sweep: dict[str, Any], x_key: str, keys: list[str]) -> str:
    traffic = sweep.get("traffic")
    source = (f"replayed trace <code>{_escape(PurePath(traffic['file']).name)}</code> ({traffic['block_tokens']}-token "
              f"blocks, speedup {traffic['speedup']:g})" if traffic else "the lab's synthetic chat traffic")
    text = f"<h3 style='margin:4px 0'>prefix-lab sweep: {len(sweep['rows'])} setups on {source}</h3>"
    fixed = _fixed(sweep, keys)
    if fixed:
        text += f"<p style='margin:2px 0'>Every setup: {_escape(fixed)}.</p>"
    best = sweep.get("cheapest")
    targets = " and ".join(sweep.get("targets", []))
    if targets:
        if best is None:
            text += f"<p style='margin:2px 0'>No setup meets {_escape(targets)}.</p>"
        else:
            row = sweep["rows"][best]
            chosen = ", ".join(f"{k}={_text(row[k])}" for k in keys)
            text += (f"<p style='margin:2px 0'>&#9733; Cheapest meeting {_escape(targets)} (fewest replicas, then "
                     f"least memory, then fewest GPU-seconds): <b>{_escape(chosen)}</b>: p99 "
                     f"{row['ttft_p99_ms']:,.0f} ms, hit rate {row['hit_rate'] * 100:.1f}%, "
                     f"{row['prefill_gpu_s']:,.0f} GPU-s of prefill.</p>")
    return text


def _fixed(sweep: dict[str, Any], keys: list[str]) -> str:
    """The base scenario's keys that differ from the defaults (traffic keys too, unless a trace replaces them)."""
    from model import Scenario

    base, default = Scenario.from_dict(sweep["base"]).to_text(), Scenario().to_text()
    skip = ("traffic.", "duration_s", "dynamic_text", "events") if sweep.get("traffic") else ()
    return ", ".join(f"{k}={v}" for k, v in base.items()
                     if v != default[k] and k not in keys and not k.startswith(skip))


def _escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
