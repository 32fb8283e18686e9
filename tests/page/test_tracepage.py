"""A trace file on the page: replayed as `prefix-lab replay` replays it, read in slices, cut at the page's budget,
forgotten on a reload, and a bad line said in a notice."""

from pathlib import Path

import pytest
from helpers import TRACES

import lab.page.tracepage as tracepage
import lab.page.view as view
from lab.page.store import STORE
from model import Scenario, replay, trace_reuse

TRACE = TRACES / "conversation_trace.jsonl"


class FileSource:
    """What the worker gives the view: a file read by byte range, and where progress goes."""

    def __init__(self, path: Path, name: str | None = None):
        self.path, self.name, self.size = path, name or path.name, path.stat().st_size
        self.reads: list[tuple[int, int]] = []
        self.heard: list[tuple[str, int]] = []

    def read(self, start, end):
        self.reads.append((start, end))
        with open(self.path, "rb") as f:
            f.seek(start)
            return f.read(end - start)

    def progress(self, phase, requests, read):
        self.heard.append((phase, requests))


@pytest.fixture(scope="module")
def slice_path(tmp_path_factory):
    path = tmp_path_factory.mktemp("traces") / "conversation-1500.jsonl"
    with open(TRACE, "rb") as f:
        path.write_bytes(b"".join(next(f) for _ in range(1500)))
    return path


def request(hash_="", **extra):
    return {"hash": hash_, **extra}


def test_the_page_replays_a_file_as_the_command_line_does(slice_path, monkeypatch):
    monkeypatch.setattr(tracepage, "SLICE_BYTES", 64 * 1024)  # many slices, lines cut across them
    STORE.runs.clear()
    source = FileSource(slice_path)
    answer = view.handle(request("fleet.replicas=3&router.kind=cache_aware",
                                 action={"type": "trace", "name": source.name}), {"user": source})
    assert answer["hash"] == "fleet.replicas=3&router.kind=cache_aware&trace=conversation-1500.jsonl"
    expected = replay(Scenario().with_text({"fleet.replicas": "3", "router.kind": "cache_aware"}),
                      lambda: [slice_path.read_bytes()])
    assert answer["summary"]["requests"] == 1500
    assert {k: answer["summary"][k] for k in ("hit_rate", "ttft_p50_ms", "ttft_p99_ms", "throughput_rps")} == \
        {k: getattr(expected, k) for k in ("hit_rate", "ttft_p50_ms", "ttft_p99_ms", "throughput_rps")}
    assert len(source.reads) > 3 and all(end - start <= 64 * 1024 for start, end in source.reads)
    assert ("checking", 1000) in source.heard and ("replaying", 1500) in source.heard
    summary = answer["patches"]["dom"]["#trace-summary"]["html"]
    reuse = trace_reuse([slice_path.read_bytes()])
    assert f"{reuse.ceiling:.1%}" in summary and f"{reuse.distinct_blocks:,} distinct blocks" in summary
    assert not answer["patches"]["dom"]["#trace-off"]["hidden"]


def test_the_reuse_ceiling_is_one_unlimited_cache(slice_path):
    ceiling = trace_reuse([slice_path.read_bytes()]).ceiling
    one = replay(Scenario().with_text({"fleet.replicas": "1", "fleet.memory_gb": "none"}), lambda: [slice_path.read_bytes()])
    assert ceiling == pytest.approx(one.hit_rate, abs=1e-6) and 0.2 < ceiling < 0.6


def test_past_the_budget_the_page_replays_the_first_requests_and_says_so(slice_path, monkeypatch):
    monkeypatch.setattr(view, "PAGE_BUDGET", 1000)
    STORE.runs.clear()
    source = FileSource(slice_path)
    answer = view.handle(request(action={"type": "trace", "name": source.name}), {"user": source})
    assert answer["summary"]["requests"] == 1000
    first = b"".join(slice_path.read_bytes().splitlines(keepends=True)[:1000])
    assert answer["summary"]["hit_rate"] == replay(Scenario(), lambda: [first]).hit_rate
    assert "(the first 1,000: the page replays no more)" in answer["patches"]["dom"]["#trace-summary"]["html"]
    assert "prefix-lab replay conversation-1500.jsonl" in tracepage.command(source.name, Scenario())


def test_a_reload_forgets_the_file_and_asks_for_it_again(slice_path):
    answer = view.handle(request("fleet.replicas=3&trace=conversation-1500.jsonl"))
    assert answer["hash"] == "fleet.replicas=3"
    assert any("not loaded in this page" in n and "Choose the file again" in n for n in answer["notices"])
    other = view.handle(request("trace=conversation-1500.jsonl"), {"user": FileSource(slice_path, name="another.jsonl")})
    assert "trace=" not in other["hash"]


def test_a_bad_line_is_named_and_the_lab_keeps_its_own_traffic(tmp_path, slice_path):
    bad = tmp_path / "bad.jsonl"
    lines = slice_path.read_bytes().splitlines(keepends=True)
    bad.write_bytes(b"".join(lines[:40]) + b'{"timestamp": 1, "input_length": 5}\n' + b"".join(lines[40:50]))
    answer = view.handle(request(action={"type": "trace", "name": "bad.jsonl"}), {"user": FileSource(bad)})
    assert "trace=" not in answer["hash"]
    said = " ".join(answer["notices"])
    assert "bad.jsonl cannot be replayed: line 41:" in said and "output_length" in said
    assert answer["summary"] == view.handle(request())["summary"]  # back on the lab's traffic


def test_a_trace_drops_events_and_dynamic_text_and_a_mission_puts_it_aside(slice_path):
    source = FileSource(slice_path)
    answer = view.handle(request("events=burst@60+30x3&dynamic_text=top",
                                 action={"type": "trace", "name": source.name}), {"user": source})
    assert answer["hash"] == "trace=conversation-1500.jsonl"
    assert any("dropped" in n for n in answer["notices"])
    opened = view.handle(request(answer["hash"], action={"type": "select_mission", "mission": "cache-on"}),
                         {"user": source})
    assert "trace=" not in opened["hash"] and "mission=cache-on" in opened["hash"]
    off = view.handle(request(answer["hash"], action={"type": "trace_off"}), {"user": source})
    assert off["hash"] == "" and off["patches"]["dom"]["#trace-off"]["hidden"]
