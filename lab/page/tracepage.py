"""A trace dropped on the page: replayed in the browser, read in slices, never sent anywhere.

The worker holds the `File` the player chose and hands the view a `Source`:
its name and size, `read(start, end)` giving those bytes of it (the worker
reads them with `FileReaderSync`, so a file of any size is never held whole)
and `progress(phase, requests, bytes)`, which the page shows as a bar. The
page key `trace=<name>` says the setup plays that file; a reload forgets the
file (it never leaves the browser), so the view then asks for it again.

The replay is `model.replay` on the scenario's fleet, router, hardware and
seed, as `prefix-lab replay FILE` runs it, on at most `limit` requests (the
page's budget: the first ones of a longer trace, said in a notice that gives
the command for all of them). The summary adds the trace's reuse ceiling,
the hit rate of one cache with no limit (`model.trace_reuse`).

Standard library, `model` and the page's controls: this runs in the browser too.
"""

import math
from collections.abc import Iterator
from typing import Any, NamedTuple, Protocol

from lab.page.controls import CONTROLS
from model import BLOCK_TOKENS, PRESETS, Result, Scenario, TraceReuse, default_text, replay, trace_reuse

__all__ = ["MISSION_KEY", "SLICE_BYTES", "Source", "TraceRun", "as_bytes", "command", "mission_file", "replay_source",
           "summary_html"]

SLICE_BYTES = 1 << 20  # read from the file at a time
MISSION_KEY = "mission:"  # the page's files: "user" (the one chosen), "mission:<id>" (a mission's traffic)


def mission_file(mission: Any) -> str:
    """Where the built site keeps a trace mission's traffic (the slice it replays), relative to the page."""
    return f"traces/{mission.id}.jsonl"


class Source(Protocol):
    """The file the page holds (see the module's docstring)."""

    name: str
    size: int

    def read(self, start: int, end: int) -> Any: ...  # bytes, or what converts to them (a JS Uint8Array)

    def progress(self, phase: str, requests: int, read: int) -> None: ...


class TraceRun(NamedTuple):
    result: Result
    reuse: TraceReuse
    cut: bool  # the trace has more requests than were replayed


def as_bytes(data: Any) -> bytes:
    if isinstance(data, (bytes, bytearray, memoryview)):
        return bytes(data)
    return bytes(data.to_py())  # a JS typed array under Pyodide


def _slices(source: Source, limit: int | None) -> Iterator[bytes]:
    """The file in slices, ending after `limit` lines (blank ones count, so a few may be left out early)."""
    lines = 0
    for start in range(0, source.size, SLICE_BYTES):
        chunk = as_bytes(source.read(start, min(start + SLICE_BYTES, source.size)))
        if limit is not None:
            ends = chunk.count(b"\n")
            if lines + ends >= limit:
                cut = -1
                for _ in range(limit - lines):
                    cut = chunk.index(b"\n", cut + 1)
                yield chunk[:cut + 1]
                return
            lines += ends
        yield chunk


def replay_source(scenario: Scenario, source: Source, limit: int) -> TraceRun:
    """Replay the first `limit` requests of the page's file on `scenario`'s fleet; TraceError or ScenarioError
    for a file or a setup that cannot be replayed."""
    reuse = trace_reuse(_slices(source, None), BLOCK_TOKENS, limit + 1)
    cut = reuse.requests > limit
    if cut:
        reuse = trace_reuse(_slices(source, None), BLOCK_TOKENS, limit)
    result = replay(scenario, lambda: _slices(source, limit if cut else None), BLOCK_TOKENS, 1.0,
                    lambda phase, n, read: source.progress(phase, n, read))
    return TraceRun(result, reuse, cut)


def command(name: str, scenario: Scenario) -> str:
    """The `prefix-lab replay` command for the whole file on this setup."""
    text = scenario.to_text()
    default = default_text()
    sets = [f"--set {k}={v}" for k, v in text.items() if v != default[k] and k.startswith(("fleet.", "router.",
                                                                                          "hardware.", "seed"))]
    return " ".join(["prefix-lab replay", _quoted(name), *sets])


def _quoted(name: str) -> str:
    safe = all(c.isalnum() or c in "._-/" for c in name)
    return name if safe else "'" + name.replace("'", "'\\''") + "'"


def summary_html(name: str, run: TraceRun, limit: int, scenario: Scenario | None = None) -> str:
    """The trace in a few numbers: requests, distinct blocks, the reuse ceiling against the fleet's hit rate; and
    with the `scenario` it ran on, what keeps the fleet from that ceiling (`fit_html`)."""
    import html
    r, reuse = run.result, run.reuse
    cut = (f" (the first {limit:,}: the page replays no more)" if run.cut else "")
    return (f"<p><strong>{html.escape(name)}</strong>: {reuse.requests:,} requests{cut}, "
            f"{reuse.prompt_tokens:,} prompt tokens in {reuse.distinct_blocks:,} distinct blocks of "
            f"{BLOCK_TOKENS} tokens. One cache with no limit would serve <strong>{reuse.ceiling:.1%}</strong> "
            f"of the prompt tokens (the reuse ceiling); this fleet served <strong>{r.hit_rate:.1%}</strong>. "
            f"The run spans {r.series.bin_s * len(r.series.start_s):,.0f} s.</p>"
            + ("" if scenario is None else fit_html(scenario, r)))


def fit_html(scenario: Scenario, r: Result) -> str:
    """Why a trace's figures can run to extremes on this fleet, when they do: prompts longer than a replica's
    whole prefix cache, and more prefill than the fleet can do in the trace's span ("" when neither)."""
    import html
    p, fleet = PRESETS[scenario.hardware.preset], scenario.fleet
    per_gb = 2 ** 30 / (2 * p.layers * p.kv_heads * p.head_dim * p.bytes_per_value)  # tokens of KV in a GB
    capacity = fleet.memory_gb * per_gb if math.isfinite(fleet.memory_gb) else math.inf
    prompts = [rec.prompt_tokens for rec in r.records]
    said = []
    over = sum(1 for n in prompts if n > capacity)
    if fleet.cache and over:
        said.append(f"{over:,} of the prompts ({over / len(prompts):.0%}; the longest {max(prompts):,} tokens) are "
                    f"longer than a replica's whole prefix cache ({capacity:,.0f} tokens in {fleet.memory_gb:g} GB): "
                    "each one evicts everything cached before it, so the next request finds little.")
    span = r.series.bin_s * len(r.series.start_s)
    busy = sum(rs.prefill_gpu_s for rs in r.replicas) / max(span, 1e-9) / max(len(r.replicas), 1)
    if busy > 1:
        said.append(f"Prefilling what was not cached keeps each replica busy {busy:,.1f} times the trace's span, so "
                    "requests queue: that is where the long time to first token comes from.")
    if not said:
        return ""
    return ('<p class="trace-fit">' + html.escape(" ".join(said)) + " More Prefix memory per replica and more "
            "Replicas bring the fleet toward the reuse ceiling: while a trace plays, their sliders reach further "
            f"(up to {_reach('fleet.memory_gb'):g} GB and {_reach('fleet.replicas'):g} replicas), and the address "
            "takes more still (for example <code>fleet.memory_gb=512</code>).</p>")


def _reach(key: str) -> float:
    """Where `key`'s slider ends while a trace plays."""
    return next(c.range_for(True)[1] for c in CONTROLS if c.key == key)
