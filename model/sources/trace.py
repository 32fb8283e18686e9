"""Mooncake traces: requests read from one, as a stream, and the lab's own traffic written as one.

A trace is JSON Lines, one request a line, in arrival order:
`{"timestamp": 0, "input_length": 6758, "output_length": 500, "hash_ids": [0, 1, ...]}`.
`timestamp` is in milliseconds; `hash_ids` name the prompt's blocks of
`block_tokens` tokens (512 in the public traces), and the ids are chained:
an id stands for its block and everything before it, so two prompts with the
same id at one position share their whole prefix up to there. It is the
format of the Mooncake traces and the one NVIDIA Dynamo's replay reads.

Reading (`read_trace`): a request's prompt keys are its hash ids, each
`block_tokens` tokens except the last, which holds what remains of
`input_length`; so `len(hash_ids)` must be `ceil(input_length /
block_tokens)`. Arrivals count from the first request's timestamp, divided
by `speedup`. The answer (`output_length` tokens) is not cached: a trace
gives no ids for it, and the next prompt of the same conversation carries the
answer's tokens under block ids of its own, so a key made up for the answer
could never be matched; it would only take memory from blocks that can.
What the trace does not know is -1 in every record: `session`, `turn`,
`system_prompt` and `user_tokens`. Affinity routers hash the id of the block
that covers the first `AFFINITY_TOKENS` tokens (the trace's nearest thing to
a system prompt; the conversation trace's first block is the same in every
request).

Lines are checked one by one as they are read; the first bad one raises
`TraceError` naming its line number and what is wrong. Numbers are bounded
(`MAX_TIMESTAMP_MS`, `MAX_INPUT_TOKENS`, `MAX_OUTPUT_TOKENS`), so that no
line of any length of digits reaches the model's arithmetic. Input comes as
chunks of bytes or text of any size (a file read in pieces, or a browser's
file slices); memory holds one line at a time, at most `MAX_LINE_BYTES`.

Replaying (`replay(scenario, open_trace)`) reads the trace twice, as a
stream each time (and, with `keep_records=False`, measures each request as it
is served instead of keeping its record): once to check every line and learn its span (the run's
`duration_s`, which the time series need before the first request is
routed), then to simulate, the run taking each request as the one before it
arrives. So a bad line stops the replay before any simulation, and memory
never holds the file. `open_trace()` gives the trace's chunks afresh on each
call: a file opened again, or slices of a browser's `File`; `progress`
hears of each thousand requests in both passes. Everything of the scenario
applies but its traffic: fleet, memory (`none`: no limit), hardware, router,
view and `seed`, in lab mode or serving mode (which decodes `output_length`
tokens); `traffic.*` are not read, and `events` or `dynamic_text`, which
change synthetic prompts, are refused.

Writing (`trace_lines`): a synthetic request's prompt is a stream of tokens,
segment after segment; it is cut into blocks of `block_tokens`, and each
block's id is a hash (`hashlib`) of its parent block's hash and the pieces
of segments it holds, numbered in order of first appearance as Mooncake does.
"""

import hashlib
import json
import math
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from model.config import Scenario, ScenarioError, spec_of
from model.metrics import RequestRecord, Result
from model.run import simulate
from model.sources.traffic import Request

__all__ = ["AFFINITY_TOKENS", "BLOCK_TOKENS", "MAX_INPUT_TOKENS", "MAX_LINE_BYTES", "MAX_OUTPUT_TOKENS", "MAX_TIMESTAMP_MS", "TraceError", "TraceInfo", "TraceReuse", "read_trace",
           "replay", "replay_scenario", "scan_trace", "trace_lines", "trace_reuse"]

BLOCK_TOKENS = 512  # the public Mooncake traces' block size
MAX_LINE_BYTES = 1 << 20  # longest line read, newline excluded (characters, when given text): 1 MiB
MAX_TIMESTAMP_MS = 2**53  # the largest timestamp a float holds to the millisecond (285,000 years)
MAX_INPUT_TOKENS = 100_000_000  # the most tokens a prompt may have (a full line of ids at 512 tokens each: ~100M)
MAX_OUTPUT_TOKENS = 1_000_000  # the most tokens an answer may have (every model's context is shorter)
AFFINITY_TOKENS = 1024  # affinity routers hash the prefix up to the block covering this many tokens
UNKNOWN = -1  # a record's session, turn, system prompt and user tokens: a trace does not say
FIELDS = ("timestamp", "input_length", "output_length", "hash_ids")
PROGRESS_EVERY = 1000  # requests between two progress reports

Chunks = Iterable[bytes] | Iterable[str]
Progress = Callable[[int, int], None]  # (requests read, bytes or characters read so far)
Phase = Callable[[str, int, int], None]  # the same, after the phase: "checking" or "replaying"


class TraceError(ValueError):
    """A trace line that cannot be used; the message starts with its line number."""

    def __init__(self, line: int, what: str) -> None:
        super().__init__(f"line {line}: {what}" if line else what)
        self.line = line  # 0: the trace as a whole (it has no requests)


@dataclass(frozen=True, slots=True)
class TraceInfo:
    """What one pass over a trace found, before anything is simulated."""

    requests: int
    first_ms: float  # the first request's timestamp: arrivals count from it
    last_ms: float
    prompt_tokens: int
    output_tokens: int
    blocks: int  # hash ids over all requests

    def span_s(self, speedup: float = 1.0) -> float:
        """Seconds from the first arrival to the end of the last one's millisecond, at `speedup`."""
        return (self.last_ms - self.first_ms + 1) / 1000.0 / speedup


def read_trace(chunks: Chunks, block_tokens: int = BLOCK_TOKENS, speedup: float = 1.0,
               progress: Progress | None = None) -> Iterator[Request]:
    """The trace's requests in arrival order, each made as its line is read."""
    _check_settings(block_tokens, speedup)
    first_ms: float | None = None
    rid = read = 0
    affinity_at = math.ceil(AFFINITY_TOKENS / block_tokens) - 1
    for _, read, (ms, prompt, output, ids) in _rows(chunks, block_tokens):
        if first_ms is None:
            first_ms = ms
        n = len(ids)
        sizes = (block_tokens,) * (n - 1) + (prompt - block_tokens * (n - 1),)
        yield Request(rid, (ms - first_ms) / 1000.0 / speedup, UNKNOWN, UNKNOWN, UNKNOWN, tuple(ids), sizes, UNKNOWN,
                      output, None, prompt, prompt, f"block/{ids[min(n - 1, affinity_at)]}")
        rid += 1
        if progress is not None and rid % PROGRESS_EVERY == 0:
            progress(rid, read)
    if progress is not None and rid % PROGRESS_EVERY:
        progress(rid, read)


def scan_trace(chunks: Chunks, block_tokens: int = BLOCK_TOKENS, progress: Progress | None = None) -> TraceInfo:
    """Check every line and sum the trace up; raises `TraceError` at the first bad line."""
    _check_settings(block_tokens, 1.0)
    count = prompt_tokens = output_tokens = blocks = 0
    first = last = 0.0
    read = 0
    for _, read, (ms, prompt, output, ids) in _rows(chunks, block_tokens):
        if not count:
            first = ms
        last = ms
        count += 1
        prompt_tokens += prompt
        output_tokens += output
        blocks += len(ids)
        if progress is not None and count % PROGRESS_EVERY == 0:
            progress(count, read)
    if not count:
        raise TraceError(0, "the trace has no requests")
    if progress is not None and count % PROGRESS_EVERY:
        progress(count, read)
    return TraceInfo(count, first, last, prompt_tokens, output_tokens, blocks)


@dataclass(frozen=True, slots=True)
class TraceReuse:
    """How much of a trace's prompts repeat blocks sent before: what one cache with no limit could serve."""

    requests: int
    distinct_blocks: int
    prompt_tokens: int
    reused_tokens: int  # prompt tokens in blocks an earlier request sent

    @property
    def ceiling(self) -> float:
        """The hit rate of one cache with no limit: reused over prompt tokens."""
        return self.reused_tokens / self.prompt_tokens if self.prompt_tokens else 0.0


def trace_reuse(chunks: Chunks, block_tokens: int = BLOCK_TOKENS, limit: int | None = None) -> TraceReuse:
    """One pass counting the trace's distinct blocks and the prompt tokens of blocks seen before (in its first
    `limit` requests, if given). Ids are chained, so a block seen before means its whole prefix was too: the
    count is the prefix one cache holding every block would match."""
    _check_settings(block_tokens, 1.0)
    seen: set[int] = set()
    count = prompt_tokens = reused = 0
    for _, _, (_, prompt, _, ids) in _rows(chunks, block_tokens):
        if limit is not None and count >= limit:
            break
        last = len(ids) - 1
        for i, block in enumerate(ids):
            if block in seen:
                reused += block_tokens if i < last else prompt - block_tokens * last
            else:
                seen.add(block)
        count += 1
        prompt_tokens += prompt
    if not count:
        raise TraceError(0, "the trace has no requests")
    return TraceReuse(count, len(seen), prompt_tokens, reused)


# -- replay ------------------------------------------------------------------

def replay_scenario(scenario: Scenario, info: TraceInfo, speedup: float = 1.0) -> Scenario:
    """`scenario` with its duration set to the trace's span (at least a second); ScenarioError if it cannot replay one.

    The span ends after the last request's millisecond, so that every request arrives inside the window.
    """
    if scenario.events:
        raise ScenarioError("events: bursts, surges and timestamps shape synthetic traffic; a trace has its own")
    if scenario.dynamic_text != "none":
        raise ScenarioError("dynamic_text: it moves text in synthetic prompts; a trace's prompts are as recorded")
    span, longest = info.span_s(speedup), spec_of("duration_s").hi
    if span > longest:  # type: ignore[operator]
        raise ScenarioError(f"the trace spans {span:,.0f} s at speedup {speedup:g}; the lab runs at most "
                            f"{longest:,.0f} s: use a speedup of {span * speedup / longest:.3g} or more")  # type: ignore[operator]
    return scenario.with_values({"duration_s": max(1.0, span)})


def replay(scenario: Scenario, open_trace: Callable[[], Iterable[bytes] | Iterable[str]],
           block_tokens: int = BLOCK_TOKENS, speedup: float = 1.0, progress: Phase | None = None,
           keep_records: bool = True, on_record: Callable[[RequestRecord], None] | None = None,
           admit: Callable[[TraceInfo], None] | None = None) -> Result:
    """Check the trace, then simulate its requests on `scenario`'s fleet; TraceError at a bad line.

    `admit` hears what the check found before anything runs (raising there stops the replay);
    `keep_records` and `on_record` are `simulate`'s: without records kept, a lab-mode replay's memory
    does not grow with the trace, and every figure is the same.
    """
    checking = replaying = None
    if progress is not None:
        def checking(n: int, read: int) -> None:
            progress("checking", n, read)

        def replaying(n: int, read: int) -> None:
            progress("replaying", n, read)
    info = scan_trace(open_trace(), block_tokens, checking)
    run_scenario = replay_scenario(scenario, info, speedup)
    if admit is not None:
        admit(info)
    return simulate(run_scenario, read_trace(open_trace(), block_tokens, speedup, replaying),
                    keep_records=keep_records, on_record=on_record)


# -- writing -----------------------------------------------------------------

def trace_lines(requests: Iterable[Request], block_tokens: int = BLOCK_TOKENS) -> Iterator[str]:
    """Each request as a trace line (no newline): its prompt as chained block ids of its token stream."""
    _check_settings(block_tokens, 1.0)
    ids: dict[bytes, int] = {}  # block hash -> id, numbered in order of first appearance
    for r in requests:
        hash_ids = [ids.setdefault(digest, len(ids)) for digest in block_hashes(r.keys, r.sizes, block_tokens)]
        yield json.dumps({"timestamp": round(r.arrival_s * 1000), "input_length": r.prompt_tokens,
                          "output_length": r.answer_tokens, "hash_ids": hash_ids}, separators=(", ", ": "))


def block_hashes(keys: Iterable[Any], sizes: Iterable[int], block_tokens: int) -> list[bytes]:
    """The chained hash of every block of a prompt given as segments (the last block may be short).

    A block holds pieces `(segment key, first token, end token)`; its hash covers its
    parent's hash and the `repr` of its pieces, so equal hashes mean equal prefixes.
    """
    hashes: list[bytes] = []
    parent = b""
    pieces: list[tuple[Any, int, int]] = []
    room = block_tokens
    for key, size in zip(keys, sizes):
        at = 0
        while at < size:
            take = min(room, size - at)
            pieces.append((key, at, at + take))
            at += take
            room -= take
            if not room:
                parent = _hash(parent, pieces)
                hashes.append(parent)
                pieces, room = [], block_tokens
    if pieces:
        hashes.append(_hash(parent, pieces))
    return hashes


def _hash(parent: bytes, pieces: list[tuple[Any, int, int]]) -> bytes:
    return hashlib.blake2b(parent + repr(pieces).encode(), digest_size=16).digest()


def _check_settings(block_tokens: int, speedup: float) -> None:
    if isinstance(block_tokens, bool) or not isinstance(block_tokens, int) or block_tokens < 1:
        raise ValueError(f"block_tokens: {block_tokens!r}; use a whole number of tokens, 1 or more")
    if isinstance(speedup, bool) or not isinstance(speedup, (int, float)) or not 0 < speedup < math.inf:
        raise ValueError(f"speedup: {speedup!r}; use a number above 0")


# -- lines and rows ----------------------------------------------------------

def _lines(chunks: Chunks) -> Iterator[tuple[int, int, Any]]:
    """(line number, bytes read so far, line) for every non-blank line; raises on a line past the limit.

    Lines end with a newline, and a carriage return before it is dropped, as is
    a byte-order mark before the first. A line still growing past the limit is
    refused before it is whole.
    """
    pending: Any = None  # the line read so far, not yet ended
    newline: Any = None
    number = read = 0
    for chunk in chunks:
        if not chunk:
            continue
        if newline is None:
            newline, pending = ("\n", "") if isinstance(chunk, str) else (b"\n", b"")
        read += len(chunk)
        parts = chunk.split(newline)
        if len(parts) > 1:
            parts[0] = pending + parts[0]
            for text in parts[:-1]:
                number += 1
                text = _trimmed(text, number)
                if text.strip():
                    yield number, read, text
            pending = parts[-1]
        else:
            pending += parts[0]
        if len(pending) > MAX_LINE_BYTES + 3:  # + 3: a carriage return or a byte-order mark still to be dropped
            raise TraceError(number + 1, _too_long())
    if pending:
        number += 1
        text = _trimmed(pending, number)
        if text.strip():
            yield number, read, text


def _trimmed(line: Any, number: int) -> Any:
    """A line without its carriage return (and the first without a byte-order mark); TraceError if too long."""
    cr, bom = ("\r", "\ufeff") if isinstance(line, str) else (b"\r", b"\xef\xbb\xbf")
    if line.endswith(cr):
        line = line[:-1]
    if number == 1 and line.startswith(bom):
        line = line[len(bom):]
    if len(line) > MAX_LINE_BYTES:
        raise TraceError(number, _too_long())
    return line


def _too_long() -> str:
    return f"longer than {MAX_LINE_BYTES:,} bytes, the most a request line may hold (is this a trace in JSON Lines?)"


def _rows(chunks: Chunks, block_tokens: int) -> Iterator[tuple[int, int, tuple[float, int, int, list[int]]]]:
    """(line number, bytes read, checked fields) for every request line, in order."""
    previous: tuple[int, float] | None = None
    for number, read, text in _lines(chunks):
        row = _fields(number, text, block_tokens)
        if previous is not None and row[0] < previous[1]:
            raise TraceError(number, f"timestamp {_show(row[0])} is before line {previous[0]}'s "
                                     f"{_show(previous[1])}; a trace lists requests in time order")
        previous = (number, row[0])
        yield number, read, row


def _fields(number: int, text: Any, block_tokens: int) -> tuple[float, int, int, list[int]]:
    """The four fields of one line, checked; TraceError naming what is wrong."""
    try:
        obj = json.loads(text.decode() if isinstance(text, bytes) else text)
    except json.JSONDecodeError as exc:
        raise TraceError(number, f"not JSON ({exc.msg} at column {exc.colno})") from None
    except UnicodeDecodeError as exc:
        raise TraceError(number, f"not UTF-8 text (byte {exc.start + 1} of the line)") from None
    except (ValueError, RecursionError) as exc:  # an integer of thousands of digits, arrays nested too deep
        raise TraceError(number, f"not a usable JSON line ({exc})") from None
    if not isinstance(obj, dict):
        raise TraceError(number, f"expected a JSON object with {', '.join(FIELDS)}; got {type(obj).__name__}")
    for name in FIELDS:
        if name not in obj:
            raise TraceError(number, f"missing field {name!r}; every line needs {', '.join(FIELDS)}")
    ms, prompt, output, ids = obj["timestamp"], obj["input_length"], obj["output_length"], obj["hash_ids"]
    if isinstance(ms, bool) or not isinstance(ms, (int, float)) or (isinstance(ms, float) and not math.isfinite(ms)):
        raise TraceError(number, f"timestamp is {_show(ms)}, not a number of milliseconds")
    if ms < 0:
        raise TraceError(number, f"timestamp {_show(ms)} is negative; use milliseconds from 0 on")
    if ms > MAX_TIMESTAMP_MS:
        raise TraceError(number, f"timestamp {_show(ms)} is too large; use milliseconds up to 2^53")
    if not _whole(prompt) or prompt < 1:
        raise TraceError(number, f"input_length is {_show(prompt)}; use a whole number of tokens, 1 or more")
    if prompt > MAX_INPUT_TOKENS:
        raise TraceError(number, f"input_length {_show(prompt)} is more than {MAX_INPUT_TOKENS:,} tokens")
    if not _whole(output) or output < 0:
        raise TraceError(number, f"output_length is {_show(output)}; use a whole number of tokens, 0 or more")
    if output > MAX_OUTPUT_TOKENS:
        raise TraceError(number, f"output_length {_show(output)} is more than {MAX_OUTPUT_TOKENS:,} tokens")
    if not isinstance(ids, list):
        raise TraceError(number, f"hash_ids is {_show(ids)}; use a list of block ids")
    if not ids:
        raise TraceError(number, "hash_ids is empty; a prompt has at least one block")
    if set(map(type, ids)) != _INT:  # one pass in C; look for the culprit only when there is one
        i, h = next((i, h) for i, h in enumerate(ids) if not _whole(h))
        raise TraceError(number, f"hash_ids[{i}] is {_show(h)}, not a whole number")
    need = -(-prompt // block_tokens)
    if len(ids) != need:
        raise TraceError(number, f"{len(ids)} hash_ids, but input_length {prompt} makes {need} blocks of "
                                 f"{block_tokens} tokens; was the trace made with another block size (--block-tokens)?")
    return ms, prompt, output, ids


_INT = {int}


def _whole(value: Any) -> bool:
    return type(value) is int


def _show(value: Any) -> str:
    text = json.dumps(value) if not isinstance(value, float) or math.isfinite(value) else repr(value)
    return text if len(text) <= 40 else text[:37] + "..."
