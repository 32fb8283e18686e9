"""The real router binaries (sgl-router 0.3.2, vLLM's router 0.1.17) run against fake workers, their decisions recorded.

    from router_harness import RouterSession, Send, Release, record, write_decisions

Nothing here is a model of a router: it launches the router the user would
run (`python -m sglang_router.launch_router`, `python -m vllm_router.launch_router`,
`--policy cache_aware`), puts fake workers behind it and writes down where the
router sent each request and how loaded it believed each worker was.

Pieces, all on 127.0.0.1:

- `FakeWorker`: a small asyncio HTTP/1.1 server per worker (a free port each).
  sgl-router asks each worker `/health`, then tries HTTP/2 (a gRPC probe, which
  the fake refuses by closing), then `/server_info` and `/model_info`; vLLM's
  router asks `/health` only. The fake answers those (and `/health_generate`,
  `/get_server_info`, `/get_model_info`, `/v1/models`) at once, and none reports
  a `model_path`, so no router tries to fetch a tokenizer. Prompts come to
  `/generate` (`{"text": ...}`, what sgl-router matches on) or `/v1/completions`
  (`{"prompt": ...}`, for vLLM's router, which matches token ids it gets by
  asking every worker `/v1/completions/render`, answered 404, then `/tokenize`,
  answered by `tokens`). Every prompt is held until the harness releases it and
  recorded (arrival order, request id, text). Each reply is one write of header
  and body together (a header-then-body reply costs a delayed ACK, about 40 ms,
  on every request).
- The router: launched with `--host 127.0.0.1 --prometheus-host 127.0.0.1` and
  free ports (it would bind 0.0.0.0 and port 29000 otherwise), its output kept.
  Ready when its own worker list (`GET /workers`) shows every fake healthy and
  (sgl-router, which registers workers in the background) its log says each
  worker's policy step is done. Always killed at the end, errors included.
- `RouterSession.send(text)`: one request at a time. Before it goes, the
  harness waits until the router's own per-worker load (`GET /workers`, the
  counter its policy reads) equals the harness's count of requests sent and not
  fully answered; that count is recorded as the decision's `in_flight`, so it is
  exactly the router's. After it goes, the send returns once a fake has the
  request (by its `rid`): the index of that fake is the decision.
- `RouterSession.release(i)`: the fake answers request `i`; returns once the
  client has the whole answer. The router may still be decrementing its counter
  then: the next send's wait above covers that (no sleep stands in for it; the
  count of polls that found the router behind is kept in `stats`; the only
  sleeps pace a schedule, poll the router's start-up and its eviction log).
- The tie order: right after start-up the session sends empty-text probes and
  holds them. An empty text matches nothing, every load ties, so each probe goes
  to the first worker, in the router's own order, that has none held: their
  arrival order is the order the router breaks ties in. They are padded to a
  multiple of four (sgl-router's tree stamps two epochs per request, and one
  match in eight refreshes the LRU: eight epochs leave that phase as it was) and
  repeated after the stream, which must find the same order.

- Eviction: run at `--log-level debug`, the router logs each pass of its
  eviction timer (the characters each worker held before and after), which the
  session reads as it goes. `first_request_after_launch_s` counts from the
  timer's start, one interval before its first pass (the launcher's Python
  start-up, half a second or more, comes before it and does not count). With
  `eviction_guard_s`, no request goes near a pass (see `_clear_of_eviction`).

A decision file (`write_decisions`) is JSON lines: a header, then one line per
decision, `{"t", "text", "in_flight", "chosen"}`; see `header` for the header.
"""

from __future__ import annotations

import asyncio
import gzip
import importlib.metadata
import importlib.util
import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = [
    "ROUTERS", "Decision", "FakeWorker", "HarnessError", "Recording", "Release", "RouterKind", "RouterSession", "Send",
    "header", "installed", "read_decisions", "record", "write_decisions",
]

HOST = "127.0.0.1"
WAIT_S = 20.0  # longest wait for anything the router should do at once (a request arriving, a count settling)
START_S = 60.0  # longest wait for the router to come up
ANSI = re.compile(r"\x1b\[[0-9;]*m")


class HarnessError(RuntimeError):
    """The router, a fake or the stream did not do what the harness needs; the message says what."""


@dataclass(frozen=True, slots=True)
class RouterKind:
    """One router binary: how to launch it and what its launcher defaults to."""

    label: str  # the header's "router", without the version
    distribution: str  # the PyPI name, for the version and for messages
    module: str  # `python -m <module>` launches it
    max_tree_size: int  # the launcher's defaults for the two keys a header leaves out when they are the defaults
    eviction_interval_secs: int
    policy_marker: str  # a log line each worker's registration writes once the policy knows it ("" = none needed)
    endpoint: str  # where prompts go: a path of GENERATE
    load_metric: str  # the Prometheus gauge of requests in flight per worker

    @property
    def version(self) -> str:
        return importlib.metadata.version(self.distribution)

    @property
    def name(self) -> str:
        return f"{self.label} {self.version}"


ROUTERS = {
    "sglang": RouterKind("sglang-router", "sglang-router", "sglang_router.launch_router", 2**26, 60,
                         "step_id=update_policies duration_ms", "/generate", "smg_worker_requests_active"),
    # vLLM's router matches token ids, which it asks the workers for (`/tokenize`); its /generate gets none
    "vllm": RouterKind("vllm-router", "vllm-router", "vllm_router.launch_router", 2**25, 120, "", "/v1/completions",
                       "vllm_router_running_requests"),
}

# The router's own statement of its policy at start-up (both print it the same way).
_POLICY_LINE = re.compile(r"policy: CacheAware \{ cache_threshold: ([0-9.eE+-]+), balance_abs_threshold: (\d+), "
                          r"balance_rel_threshold: ([0-9.eE+-]+), eviction_interval_secs: (\d+), max_tree_size: (\d+) \}")
_EVICTION_LINE = "Before eviction - Used size per tenant"
_TENANT_SIZE = re.compile(r"Tenant: \S+, Size: (\d+)")


def installed(kind: str) -> bool:
    """Whether the router `kind` (a key of ROUTERS) is installed in this interpreter."""
    return importlib.util.find_spec(ROUTERS[kind].module.split(".")[0]) is not None


@dataclass(frozen=True, slots=True)
class Send:
    """Send request `i` (the i-th send of the stream, from 0) with prompt `text`; `at_s`: not before this many
    seconds after the stream's first send (None: at once)."""

    i: int
    text: str
    at_s: float | None = None


@dataclass(frozen=True, slots=True)
class Release:
    """Let the fake holding request `j` answer it."""

    j: int


@dataclass(frozen=True, slots=True)
class Decision:
    t: float  # seconds since the stream's first send, wall clock, taken just before this send
    text: str
    in_flight: tuple[int, ...]  # per worker index, just before deciding (the router's own counts)
    chosen: int  # the worker index the router sent it to

    def line(self) -> dict[str, Any]:
        return {"t": round(self.t, 6), "text": self.text, "in_flight": list(self.in_flight), "chosen": self.chosen}


@dataclass(frozen=True, slots=True)
class Arrival:
    """A request as a fake received it."""

    order: int  # arrival order over all fakes of the session
    rid: str
    text: str
    at: float  # time.monotonic()


@dataclass(slots=True)
class Recording:
    """What a session recorded: enough for a decision file, plus figures for the report."""

    router: str
    workers: int
    tie_order: list[int]
    config: dict[str, float | int]
    launch_args: list[str]
    max_tree_size: int
    eviction_interval_secs: int
    default_tree_size: int
    default_eviction_interval_secs: int
    first_request_after_launch_s: float
    decisions: list[Decision]
    stats: dict[str, Any] = field(default_factory=dict)


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


# --- HTTP/1.1, just enough: one message read from a stream, one reply written in one piece ---

async def _read_message(reader: asyncio.StreamReader, *, response: bool) -> tuple[str, dict[str, str], bytes] | None:
    """(start line, lower-cased headers, body), or None when the peer closed before a new message."""
    start = await reader.readline()
    if not start:
        return None
    headers: dict[str, str] = {}
    while True:
        line = await reader.readline()
        if line in (b"\r\n", b"\n"):
            break
        if not line:
            raise ConnectionError("connection closed inside a message's headers")
        name, _, value = line.decode("latin-1").partition(":")
        headers[name.strip().lower()] = value.strip()
    if "content-length" in headers:
        body = await reader.readexactly(int(headers["content-length"]))
    elif headers.get("transfer-encoding", "").lower() == "chunked":
        parts = []
        while size := int((await reader.readline()).split(b";")[0].strip() or b"0", 16):
            parts.append(await reader.readexactly(size))
            await reader.readline()
        while (await reader.readline()) not in (b"\r\n", b"\n", b""):
            pass  # trailers
        body = b"".join(parts)
    else:
        body = await reader.read() if response else b""
    return start.decode("latin-1").strip(), headers, body


def _reply(status: str, body: bytes, content_type: str = "application/json") -> bytes:
    head = f"HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\nContent-Length: {len(body)}\r\n\r\n"
    return head.encode("latin-1") + body


def tokens(text: str) -> list[int]:
    """A fake tokenizer: one token per 4 characters (the lab's rule), its id the code point of its first character.

    Prompts rendered by `model.routing.text.Renderer` start every segment on a 4-character boundary with a character of
    its own, so two prompts share exactly as many leading tokens as they share leading characters, over four.
    """
    return [ord(text[k]) for k in range(0, len(text), 4)]


def _tokenize(body: bytes) -> bytes:
    ids = tokens(json.loads(body).get("prompt", ""))
    return _reply("200 OK", json.dumps({"count": len(ids), "max_model_len": 1 << 24, "tokens": ids}).encode())


_STATIC = {  # what the routers ask a worker at start-up and in health checks; no model_path anywhere
    "/health": _reply("200 OK", b"OK", "text/plain"),
    "/health_generate": _reply("200 OK", b"OK", "text/plain"),
    "/server_info": _reply("200 OK", b"{}"),
    "/get_server_info": _reply("200 OK", b"{}"),
    "/model_info": _reply("200 OK", b"{}"),
    "/get_model_info": _reply("200 OK", b"{}"),
    "/v1/models": _reply("200 OK", b'{"object": "list", "data": []}'),
}


GENERATE = {"/generate": "text", "/v1/completions": "prompt"}  # the generate endpoints, with the field holding the prompt


class FakeWorker:
    """One fake worker: answers the start-up and health endpoints at once, holds every /generate until released."""

    def __init__(self, index: int, session: RouterSession) -> None:
        self.index = index
        self.port = 0
        self.received: list[Arrival] = []  # every prompt, in arrival order
        self.asked: dict[str, int] = {}  # every other path the router asked, with its count (404s included)
        self._session = session
        self._server: asyncio.Server | None = None
        self._held: dict[str, asyncio.Event] = {}  # rid -> its release

    @property
    def url(self) -> str:
        return f"http://{HOST}:{self.port}"

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._serve, HOST, 0)
        self.port = self._server.sockets[0].getsockname()[1]

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
            for event in self._held.values():
                event.set()

    def release(self, rid: str) -> None:
        self._held[rid].set()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while message := await _read_message(reader, response=False):
                start, headers, body = message
                method, path = (start.split() + ["", ""])[:2]
                if method == "PRI":  # an HTTP/2 (gRPC) probe: this worker speaks HTTP/1.1 only
                    return
                path = path.split("?")[0]
                if path in GENERATE and method == "POST":
                    writer.write(await self._generate(path, headers, body))
                elif path == "/tokenize" and method == "POST":
                    self.asked[path] = self.asked.get(path, 0) + 1
                    writer.write(_tokenize(body))
                else:
                    self.asked[path] = self.asked.get(path, 0) + 1
                    writer.write(_STATIC.get(path, _reply("404 Not Found", b'{"error": "not a fake endpoint"}')))
                await writer.drain()
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            writer.close()

    async def _generate(self, path: str, headers: dict[str, str], body: bytes) -> bytes:
        request = json.loads(body)
        rid = headers.get("x-request-id") or str(request.get("rid"))
        text = request.get(GENERATE[path], "")
        release = self._held[rid] = asyncio.Event()
        arrival = Arrival(self._session._next_order(), rid, text, time.monotonic())
        self.received.append(arrival)
        self._session._arrived(self.index, arrival)
        await release.wait()
        del self._held[rid]
        answer: dict[str, Any]
        if path == "/generate":
            answer = {"text": "", "meta_info": {"id": rid, "prompt_tokens": len(text), "completion_tokens": 1,
                                                "finish_reason": {"type": "length", "length": 1}}}
        else:
            answer = {"id": rid, "object": "text_completion", "model": "fake",
                      "choices": [{"index": 0, "text": "", "finish_reason": "length"}],
                      "usage": {"prompt_tokens": len(text), "completion_tokens": 1, "total_tokens": len(text) + 1}}
        return _reply("200 OK", json.dumps(answer).encode())


class _Router:
    """The router process: launched, read, killed."""

    def __init__(self, kind: RouterKind, argv: list[str]) -> None:
        self.kind = kind
        self.argv = argv
        self.lines: list[tuple[float, str]] = []  # (time.monotonic(), line without colours)
        self.launched = time.monotonic()
        self.proc = subprocess.Popen([sys.executable, "-m", kind.module, *argv], stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for raw in self.proc.stdout:
            self.lines.append((time.monotonic(), ANSI.sub("", raw.decode("utf-8", "replace")).rstrip()))

    def tail(self, n: int = 15) -> str:
        return "\n".join(line for _, line in self.lines[-n:])

    def count(self, needle: str) -> int:
        return sum(needle in line for _, line in self.lines)

    def kill(self) -> None:
        """End the router's process group (only the process this harness started and its children)."""
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGTERM)
                self.proc.wait(timeout=3)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(timeout=10)
            except ProcessLookupError:
                pass
        self._reader.join(timeout=5)


class RouterSession:
    """A real router in front of `workers` fake workers; `send` and `release` drive it one step at a time.

    Use as a context manager: entering starts the fakes and the router and finds the tie order; leaving
    releases whatever is held and stops everything, whether the block raised or not.
    """

    def __init__(self, router: str = "sglang", workers: int = 4, args: Sequence[str] = (),
                 log_level: str | None = "debug", endpoint: str | None = None,
                 eviction_guard_s: tuple[float, float] | None = None) -> None:
        if endpoint is not None and endpoint not in GENERATE:
            raise HarnessError(f"endpoint {endpoint!r}: choose one of {', '.join(GENERATE)}")
        if router not in ROUTERS:
            raise HarnessError(f"router {router!r}: choose one of {', '.join(ROUTERS)}")
        if not installed(router):
            raise HarnessError(f"{ROUTERS[router].distribution} is not installed: pip install -e '.[test]'")
        if workers < 1:
            raise HarnessError("workers: at least one")
        self.kind = ROUTERS[router]
        self.n = workers
        self.args = list(args)
        self.log_level = log_level
        self.endpoint = endpoint or ROUTERS[router].endpoint
        # (before, after): no send from this long before an eviction pass is due until this long after it ended
        self.eviction_guard_s = eviction_guard_s
        if eviction_guard_s is not None and log_level != "debug":
            raise HarnessError("eviction_guard_s needs log_level='debug': the passes are seen in the router's log")
        self.fakes: list[FakeWorker] = []
        self.decisions: list[Decision] = []
        self.tie_order: list[int] = []
        self.stats: dict[str, Any] = {"settle_polls": 0, "settle_behind": 0, "probes": 0, "eviction_holds": 0}
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._router: _Router | None = None
        self._order = 0
        self._waiting: dict[str, asyncio.Future[tuple[int, Arrival]]] = {}  # rid -> (fake index, arrival)
        self._answers: dict[str, asyncio.Task[bytes]] = {}  # rid -> the client's read of its answer
        self._worker_of: dict[str, int] = {}  # rid -> fake index that got it
        self._open: set[str] = set()  # rids sent and not fully answered
        self._sent = 0
        self._first_send: float | None = None
        self._config: dict[str, Any] = {}

    # --- the sync surface ---

    def __enter__(self) -> RouterSession:
        self._thread.start()
        try:
            self._call(self._start_fakes())
            port, metrics = _free_port(), _free_port()
            argv = ["--worker-urls", *[f.url for f in self.fakes], "--policy", "cache_aware", "--host", HOST,
                    "--port", str(port), "--prometheus-host", HOST, "--prometheus-port", str(metrics), *self.args]
            if self.log_level:
                argv += ["--log-level", self.log_level]
            self.port, self.metrics_port = port, metrics
            self._router = _Router(self.kind, argv)
            self._call(self._wait_ready(), timeout=START_S + 5)
            self._config = self._policy_config()
            self.tie_order = self._probe_ties()
            index = {f.url: f.index for f in self.fakes}
            self.stats["worker_list_order"] = [index[w["url"].rstrip("/")] for w in self._call(self._workers())]
        except BaseException:
            self._shutdown()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self._shutdown()

    def send(self, text: str, at_s: float | None = None) -> int:
        """Send the next request (after the router's counts match ours); returns the worker index it went to."""
        if at_s is not None and self._first_send is not None:
            delay = self._first_send + at_s - time.monotonic()
            if delay > 0:
                time.sleep(delay)  # pacing a schedule, not waiting for the router
        if self.eviction_guard_s is not None:
            self._clear_of_eviction(*self.eviction_guard_s)
        loads = self._call(self._settle())
        now = time.monotonic()
        if self._first_send is None:
            self._first_send = now
        rid = f"h{self._sent}"
        self._sent += 1
        chosen = self._call(self._send(rid, text))
        self.decisions.append(Decision(now - self._first_send, text, tuple(loads), chosen))
        return chosen

    def release(self, i: int) -> None:
        """Let request `i` (the i-th send) be answered; returns once the client has the whole answer."""
        self._call(self._release(f"h{i}"))

    def release_all(self) -> None:
        for rid in sorted(self._open, key=lambda r: int(r[1:]) if r[1:].isdigit() else -1):
            self._call(self._release(rid))

    def in_flight(self) -> list[int]:
        """The harness's own count per worker: requests a fake received whose answer the client does not have."""
        counts = [0] * self.n
        for rid in self._open:
            counts[self._worker_of[rid]] += 1
        return counts

    def router_loads(self) -> list[int]:
        """The router's own load per worker index, as its worker list reports it."""
        return self._call(self._router_loads())

    def held(self, worker: int) -> int:
        """How many requests fake `worker` is holding now."""
        return len(self.fakes[worker]._held)

    def metrics(self) -> str:
        """The router's Prometheus page."""
        return self._call(self._get(self.metrics_port, "/metrics")).decode()

    def metric_loads(self) -> list[int]:
        """The router's in-flight gauge per worker index, from its Prometheus page (a second source beside
        `router_loads`)."""
        index = {f.url: f.index for f in self.fakes}
        loads = [0] * self.n
        pattern = re.compile(rf'^{self.kind.load_metric}\{{worker="([^"]+)"\}} (\S+)$', re.M)
        for url, value in pattern.findall(self.metrics()):
            loads[index[url.rstrip("/")]] = int(float(value))
        return loads

    def router_log(self) -> list[tuple[float, str]]:
        assert self._router is not None
        return list(self._router.lines)

    def recording(self) -> Recording:
        assert self._router is not None and self._first_send is not None, "nothing sent yet"
        c = self._config
        origin = self._timer_origin()
        passes = self.eviction_passes()
        stats = dict(self.stats)
        stats["router_start_after_process_s"] = origin - self._router.launched
        stats["eviction_passes_s"] = [round(t - self._first_send, 4) for t, _ in passes]  # since the first send
        stats["evicting_passes"] = sum(before != after for _, (before, after) in passes)
        return Recording(
            router=self.kind.name, workers=self.n, tie_order=list(self.tie_order),
            config={"cache_threshold": c["cache_threshold"], "balance_abs_threshold": c["balance_abs_threshold"],
                    "balance_rel_threshold": c["balance_rel_threshold"]},
            launch_args=list(self._router.argv), max_tree_size=c["max_tree_size"],
            eviction_interval_secs=c["eviction_interval_secs"], default_tree_size=self.kind.max_tree_size,
            default_eviction_interval_secs=self.kind.eviction_interval_secs,
            first_request_after_launch_s=self._first_send - origin, decisions=list(self.decisions), stats=stats)

    def eviction_passes(self) -> list[tuple[float, tuple[int, int]]]:
        """Each eviction pass the router logged (needs log_level='debug'): (time.monotonic(), (characters held
        over all workers before it, after it))."""
        assert self._router is not None
        passes: list[tuple[float, list[int]]] = []  # (time, [before, after])
        side = 0  # which of the two the size lines that follow belong to
        for t, line in self._router.lines:
            if _EVICTION_LINE in line:
                passes.append((t, [0, 0]))
                side = 0
            elif "After eviction - Used size per tenant" in line:
                side = 1
            elif passes and (size := _TENANT_SIZE.search(line)):
                passes[-1][1][side] += int(size.group(1))
        return [(t, (before, after)) for t, (before, after) in passes]

    def _clear_of_eviction(self, before: float, after: float) -> None:
        """If an eviction pass is due within `before` seconds, wait until the router logs its end, then `after`
        more: no decision falls near a pass, so a replay that places the passes a few milliseconds off (the
        router's timer drifts about a millisecond a pass) still puts each decision on the same side of each."""
        assert self._router is not None
        ends = self._eviction_ends()
        due = (ends[-1] if ends else self._start_logged()) + self._config["eviction_interval_secs"]
        if time.monotonic() < due - before:
            return
        deadline = due + before + 5.0
        while len(self._eviction_ends()) == len(ends):
            if time.monotonic() > deadline:
                raise HarnessError("an eviction pass was due and the router logged none")
            time.sleep(0.002)  # the pass is the router's own timer: nothing to wait on but its log
        wait = self._eviction_ends()[len(ends)] + after - time.monotonic()
        if wait > 0:
            time.sleep(wait)
        self.stats["eviction_holds"] += 1

    def _eviction_ends(self) -> list[float]:
        assert self._router is not None
        return [t for t, line in self._router.lines if "Cache eviction completed" in line]

    def _start_logged(self) -> float:
        """When the router logged its start (time.monotonic()), or else when its process started."""
        assert self._router is not None
        return next((t for t, line in self._router.lines if "Starting router on" in line), self._router.launched)

    def _timer_origin(self) -> float:
        """When the router's eviction timer started (time.monotonic()): one interval before its first logged pass,
        or else when the router logged its start (some 10-60 ms before the timer; the launcher's Python start-up,
        half a second or more, comes before both)."""
        assert self._router is not None
        passes = self.eviction_passes()
        if passes:
            return passes[0][0] - self._config["eviction_interval_secs"]
        return self._start_logged()

    # --- the async side, on the session's own loop thread ---

    def _call(self, coro: Any, timeout: float = WAIT_S * 3) -> Any:
        """Run `coro` on the session's loop; a lost connection or a stray request becomes a HarnessError."""
        try:
            result = asyncio.run_coroutine_threadsafe(coro, self._loop).result(timeout)
        except TimeoutError as e:  # before OSError, of which it is a kind
            raise HarnessError(f"no answer from the router within {timeout:.0f} s") from e
        except OSError as e:
            tail = self._router.tail() if self._router is not None else ""
            raise HarnessError(f"talking to the router: {e}\n{tail}") from e
        if self.stats.get("unexpected"):
            raise HarnessError(f"a fake got {self.stats['unexpected']} request(s) the harness did not send or "
                               "sent twice (a retry?): the loads are no longer the harness's")
        return result

    def _next_order(self) -> int:
        self._order += 1
        return self._order - 1

    def _arrived(self, index: int, arrival: Arrival) -> None:
        waiting = self._waiting.get(arrival.rid)
        if waiting is None or waiting.done():
            self.stats["unexpected"] = self.stats.get("unexpected", 0) + 1  # a retry or a request not ours
            return
        waiting.set_result((index, arrival))

    async def _start_fakes(self) -> None:
        self.fakes = [FakeWorker(i, self) for i in range(self.n)]
        for fake in self.fakes:
            await fake.start()

    async def _get(self, port: int, path: str) -> bytes:
        reader, writer = await asyncio.open_connection(HOST, port)
        try:
            writer.write(f"GET {path} HTTP/1.1\r\nHost: {HOST}:{port}\r\nConnection: close\r\n\r\n".encode())
            message = await asyncio.wait_for(_read_message(reader, response=True), WAIT_S)
        finally:
            writer.close()
        if message is None or " 200 " not in message[0] + " ":
            raise HarnessError(f"GET {path} on the router: {message[0] if message else 'no answer'}")
        return message[2]

    async def _workers(self) -> list[dict[str, Any]]:
        return json.loads(await self._get(self.port, "/workers"))["workers"]

    async def _router_loads(self) -> list[int]:
        index = {f.url: f.index for f in self.fakes}
        loads = [0] * self.n
        for w in await self._workers():
            loads[index[w["url"].rstrip("/")]] = int(w["load"])
        return loads

    async def _wait_ready(self) -> None:
        assert self._router is not None
        router, deadline = self._router, time.monotonic() + START_S
        while True:
            if router.proc.poll() is not None:
                raise HarnessError(f"{self.kind.distribution} exited with status {router.proc.returncode}:\n"
                                   f"{router.tail()}")
            try:
                workers = await self._workers()
                healthy = sum(bool(w.get("is_healthy")) for w in workers)
                marked = router.count(self.kind.policy_marker) if self.kind.policy_marker else self.n
                if healthy == self.n and len(workers) == self.n and marked >= self.n and _POLICY_LINE.search(
                        "\n".join(line for _, line in router.lines)):
                    return
            except (OSError, HarnessError, ValueError, KeyError):
                pass
            if time.monotonic() > deadline:
                raise HarnessError(f"{self.kind.distribution} not ready after {START_S:.0f} s:\n{router.tail()}")
            await asyncio.sleep(0.02)  # start-up takes a second or so; nothing to wait on but its answers

    def _policy_config(self) -> dict[str, Any]:
        assert self._router is not None
        found = _POLICY_LINE.search("\n".join(line for _, line in self._router.lines))
        if found is None:
            raise HarnessError(f"{self.kind.distribution} did not print its cache_aware configuration")
        thr, abs_, rel, interval, size = found.groups()
        return {"cache_threshold": float(thr), "balance_abs_threshold": int(abs_),
                "balance_rel_threshold": float(rel), "eviction_interval_secs": int(interval),
                "max_tree_size": int(size)}

    async def _settle(self) -> list[int]:
        """Wait until the router's loads equal the harness's in-flight counts; return them."""
        want, deadline = self.in_flight(), time.monotonic() + WAIT_S
        while True:
            loads = await self._router_loads()
            self.stats["settle_polls"] += 1
            if loads == want:
                return loads
            self.stats["settle_behind"] += 1
            if time.monotonic() > deadline:
                raise HarnessError(f"the router's loads {loads} never matched the requests in flight {want}")

    async def _send(self, rid: str, text: str) -> int:
        arrived = self._waiting[rid] = self._loop.create_future()
        if self.endpoint == "/generate":
            request: dict[str, Any] = {"text": text, "rid": rid, "sampling_params": {"max_new_tokens": 1}}
        else:
            request = {"model": "fake", "prompt": text, "max_tokens": 1}
        body = json.dumps(request).encode()
        reader, writer = await asyncio.open_connection(HOST, self.port)
        writer.write(f"POST {self.endpoint} HTTP/1.1\r\nHost: {HOST}:{self.port}\r\nContent-Type: application/json\r\n"
                     f"X-Request-Id: {rid}\r\nContent-Length: {len(body)}\r\nConnection: close\r\n\r\n".encode() + body)
        self._answers[rid] = self._loop.create_task(self._answer(rid, reader, writer))
        self._open.add(rid)
        done, _ = await asyncio.wait({arrived, self._answers[rid]}, timeout=WAIT_S,
                                     return_when=asyncio.FIRST_COMPLETED)
        if arrived not in done:
            answer = self._answers[rid]
            why = answer.exception() or answer.result()[:300] if answer.done() else "no fake got it"
            raise HarnessError(f"request {rid} ({len(text)} characters) did not reach a worker: {why!r}")
        index, arrival = arrived.result()
        if arrival.text != text:
            raise HarnessError(f"request {rid}: the fake got a different text than was sent")
        self._worker_of[rid] = index
        return index

    async def _answer(self, rid: str, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> bytes:
        try:
            message = await _read_message(reader, response=True)
        finally:
            writer.close()
        if message is None or " 200 " not in message[0] + " ":
            raise HarnessError(f"request {rid}: the router answered {message[0] if message else 'nothing'}")
        return message[2]

    async def _release(self, rid: str) -> None:
        if rid not in self._open:
            raise HarnessError(f"release of {rid}: not in flight (never sent, or released already)")
        fake = self.fakes[self._worker_of[rid]]
        fake.release(rid)
        await asyncio.wait_for(self._answers.pop(rid), WAIT_S)
        self._open.discard(rid)

    def _probe_ties(self) -> list[int]:
        """The router's tie order, from held empty-text probes (see the module's docstring)."""
        probes = -(-self.n // 4) * 4
        order = []
        for k in range(probes):
            rid = f"probe{self.stats['probes']}"
            self.stats["probes"] += 1
            self._call(self._settle())
            index = self._call(self._send(rid, ""))
            if k < self.n:
                order.append(index)
            else:
                self._call(self._release(rid))
        for rid in [r for r in self._open if r.startswith("probe")]:
            self._call(self._release(rid))
        self._call(self._settle())
        if sorted(order) != list(range(self.n)):
            raise HarnessError(f"held probes went to workers {order}: not one each, so no tie order")
        return order

    def _shutdown(self) -> None:
        try:
            if self._router is not None and self._router.proc.poll() is None and self._thread.is_alive():
                try:
                    self.release_all()
                    if self.tie_order and self.decisions:
                        self._call(self._settle())
                        after = self._probe_ties()
                        self.stats["tie_order_after"] = after
                except Exception as e:  # the stream's own error matters more; keep this one for the report
                    self.stats["shutdown_error"] = repr(e)
        finally:
            if self._router is not None:
                self._router.kill()
            if self._thread.is_alive():
                try:
                    self._call(self._stop_fakes(), timeout=10)
                finally:
                    self._loop.call_soon_threadsafe(self._loop.stop)
                    self._thread.join(timeout=10)

    async def _stop_fakes(self) -> None:
        for fake in self.fakes:
            await fake.stop()
        for task in self._answers.values():
            task.cancel()


def record(router: str, workers: int, steps: Iterable[Send | Release], args: Sequence[str] = (),
           log_level: str | None = "debug", eviction_guard_s: tuple[float, float] | None = None) -> Recording:
    """Run `steps` through a fresh router session and return what it recorded."""
    with RouterSession(router, workers, args, log_level, eviction_guard_s=eviction_guard_s) as session:
        for step in steps:
            if isinstance(step, Send):
                if step.i != session._sent:
                    raise HarnessError(f"send {step.i} out of order: the next send is {session._sent}")
                session.send(step.text, step.at_s)
            else:
                session.release(step.j)
        session.release_all()
        recording = session.recording()
    recording.stats.update(session.stats)
    if recording.stats.get("tie_order_after", recording.tie_order) != recording.tie_order:
        raise HarnessError(f"the tie order moved during the stream: {recording.tie_order} before, "
                           f"{recording.stats['tie_order_after']} after")
    return recording


def header(rec: Recording) -> dict[str, Any]:
    """The decision file's first line."""
    head: dict[str, Any] = {"router": rec.router, "policy": "cache_aware", "workers": rec.workers,
                            "tie_order": rec.tie_order, "config": rec.config, "launch_args": rec.launch_args}
    if rec.max_tree_size != rec.default_tree_size:
        head["max_tree_size"] = rec.max_tree_size
    if rec.eviction_interval_secs != rec.default_eviction_interval_secs:
        head["eviction_interval_secs"] = rec.eviction_interval_secs
    head["first_request_after_launch_s"] = round(rec.first_request_after_launch_s, 6)
    return head


def write_decisions(path: Path, rec: Recording) -> None:
    """Write `rec` as a decision file (gzipped when the name ends in .gz)."""
    lines = [header(rec)] + [d.line() for d in rec.decisions]
    data = "".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines).encode("utf-8")
    if path.name.endswith(".gz"):
        data = gzip.compress(data, compresslevel=9, mtime=0)
    path.write_bytes(data)


def read_decisions(path: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """A decision file's header and decision lines."""
    data = path.read_bytes()
    if path.name.endswith(".gz"):
        data = gzip.decompress(data)
    lines = [json.loads(line) for line in data.decode("utf-8").splitlines() if line.strip()]
    return lines[0], lines[1:]
