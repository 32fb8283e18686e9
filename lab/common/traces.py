"""Traces on the command line: `prefix-lab replay FILE` and `prefix-lab run --trace-out FILE`.

The model reads and writes trace lines (`model.read_trace`, `model.trace_lines`);
this module opens the files. A trace file is read in chunks of `CHUNK_BYTES`,
twice (once to check it, once to replay it), and a lab-mode replay keeps no
record (each is written out as it is measured, if asked for), so a trace of
any length runs in the memory of one line plus a few numbers a request, up to
the declared bound (lab/common/runbound.py). A bad line ends the
command with one line naming the file, the line number and what is wrong.

As the build and the server do, this module leaves the CLI alone: it raises
`CommandError`, which `lab.cli.main` shows as its one-line error, and gives its
output as lines, which `lab.cli.main` prints.
"""

import argparse
import json
from collections.abc import Callable, Iterator
from typing import Any

from model import BLOCK_TOKENS, Result, Scenario, ScenarioError, TraceError, generate, replay, trace_lines

RequestRecord = Any  # model.metrics.RequestRecord: a request's figures, as `prefix-lab replay --requests` writes them

__all__ = ["CHUNK_BYTES", "CommandError", "add_replay_verb", "add_trace_options", "open_trace", "positive_int",
           "replay_file", "replay_keys_only", "replay_output", "trace_problem", "write_trace"]

CHUNK_BYTES = 1 << 20
REPLAY_KEYS = ("fleet.", "router.", "hardware.", "seed")  # what a replay reads: the rest is synthetic traffic


class CommandError(Exception):
    """Bad input to `replay`, `sweep` or `run --trace-out`; the CLI shows the message as it is."""


def open_trace(path: str) -> Callable[[], Iterator[bytes]]:
    """A function giving the file's chunks afresh on each call; CommandError now if it cannot be read."""
    try:
        with open(path, "rb") as f:
            f.read(1)
    except (OSError, ValueError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise CommandError(f"cannot read trace {path}: {reason}") from None

    def chunks() -> Iterator[bytes]:
        with open(path, "rb") as f:
            while chunk := f.read(CHUNK_BYTES):
                yield chunk
    return chunks


def replay_keys_only(sets: list[str], flag: str = "--set") -> None:
    """CommandError if a `key=value` sets something a replay does not read (traffic, events, duration)."""
    for item in sets:
        key = item.partition("=")[0].strip()
        if key and not key.startswith(REPLAY_KEYS):
            raise CommandError(f"{flag} {key}: replayed traffic comes from the trace; set fleet.*, router.*, hardware.* or seed")


def trace_problem(path: str, exc: Exception) -> str:
    """One line naming the file, and the line in it when the problem is one line."""
    return f"{path} {exc}" if isinstance(exc, TraceError) and exc.line else f"{path}: {exc}"


def replay_file(scenario: Scenario, path: str, block_tokens: int = BLOCK_TOKENS, speedup: float = 1.0,
                on_record: Callable[[RequestRecord], None] | None = None) -> Result:
    """Replay the trace at `path` on `scenario`; CommandError naming the file and line if it is bad, or if the
    replay would pass the declared bound (lab/common/runbound.py).

    In lab mode the replay streams: it keeps no records (`Result.records` is empty), each one going to
    `on_record` as it is measured; in serving mode they are kept, and handed to `on_record` at the end.
    """
    from lab.common.runbound import RunTooLarge, check_replay

    streamed = not scenario.fleet.decode
    chunks = open_trace(path)
    sink = None if on_record is None else _Sink(on_record)
    try:
        return replay(scenario, chunks, block_tokens, speedup, keep_records=not streamed, on_record=sink,
                      admit=lambda info: check_replay(scenario, info, streamed))
    except (TraceError, ScenarioError) as exc:
        raise CommandError(trace_problem(path, exc)) from None
    except RunTooLarge as exc:
        raise CommandError(f"{path}: {exc}") from None
    except OSError as exc:  # the file went away between the two passes
        raise CommandError(f"cannot read trace {path}: {exc.strerror or exc}") from None
    except _SinkError as exc:  # where the records go failed (a full disk, a closed pipe): as it is
        raise exc.error from None


class _SinkError(Exception):
    """A record's destination failed; `error` is what it raised (kept apart from errors reading the trace)."""

    def __init__(self, error: BaseException) -> None:
        super().__init__(str(error))
        self.error = error


class _Sink:
    def __init__(self, write: Callable[[RequestRecord], None]) -> None:
        self.write = write

    def __call__(self, rec: RequestRecord) -> None:
        try:
            self.write(rec)
        except OSError as exc:
            raise _SinkError(exc) from None


def write_trace(scenario: Scenario, path: str, block_tokens: int = BLOCK_TOKENS) -> int:
    """Write the scenario's synthetic traffic to `path` as a trace; returns the requests written."""
    count = 0
    try:
        with open(path, "w", encoding="utf-8") as f:
            for line in trace_lines(generate(scenario), block_tokens):
                f.write(line + "\n")
                count += 1
    except OSError as exc:
        raise CommandError(f"cannot write {path}: {exc.strerror or exc}") from None
    return count


def replay_output(args: argparse.Namespace, scenario: Scenario, summary: Callable[[Result], str],
                  emit: Callable[[str], None]) -> Iterator[str]:
    """Replay `args.trace` on `scenario`; the lines `prefix-lab replay` prints (a summary or JSON). With
    `--requests`, each request's record goes out as it is measured: to `emit` for `-`, else to that file."""
    if args.requests == "-":
        result = replay_file(scenario, args.trace, args.block_tokens, args.speedup,
                             lambda rec: emit(json.dumps(rec.to_dict())))
    elif args.requests:
        try:
            with open(args.requests, "w", encoding="utf-8") as out:
                def write(rec: RequestRecord) -> None:
                    out.write(json.dumps(rec.to_dict()) + "\n")
                result = replay_file(scenario, args.trace, args.block_tokens, args.speedup, write)
        except OSError as exc:
            raise CommandError(f"cannot write {args.requests}: {exc.strerror or exc}") from None
    else:
        result = replay_file(scenario, args.trace, args.block_tokens, args.speedup)
    if args.json:
        data = result.to_dict()
        data["trace"] = {"file": args.trace, "block_tokens": args.block_tokens, "speedup": args.speedup}
        yield json.dumps(data, indent=1)
    elif args.requests != "-":
        yield f"trace {args.trace}, {args.block_tokens}-token blocks, speedup {args.speedup:g}"
        yield summary(result)


def positive_int(text: str) -> int:
    """argparse type: a whole number, 1 or more."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value} is below 1")
    return value


def positive_float(text: str) -> float:
    """argparse type: a finite number above 0."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not 0 < value < float("inf"):
        raise argparse.ArgumentTypeError(f"{text} is not a number above 0")
    return value


def add_trace_options(p: Any, speedup: bool = True) -> None:
    """--block-tokens (and --speedup) with their help, shared by replay, run and sweep."""
    p.add_argument("--block-tokens", type=positive_int, default=BLOCK_TOKENS, metavar="N",
                   help=f"tokens per hash id (default {BLOCK_TOKENS}, the public Mooncake traces')")
    if speedup:
        p.add_argument("--speedup", type=positive_float, default=1.0, metavar="X",
                       help="divide every timestamp by X (default 1)")


def add_replay_verb(verbs: Any) -> Any:
    """Register `prefix-lab replay`; the CLI sets what runs it."""
    p = verbs.add_parser("replay", help="replay a Mooncake trace (JSON Lines) on a fleet",
                         description="Replay a trace: each line's request arrives at its timestamp, its prompt "
                                     "is its hash_ids. Every fleet, router and memory setting applies; "
                                     "fleet.memory_gb=none is a cache with no limit.")
    p.add_argument("trace", metavar="FILE", help="trace file: one JSON object a line with timestamp (ms), "
                                                "input_length, output_length and hash_ids")
    add_trace_options(p)
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help="set a fleet.* or router.* key, e.g. fleet.replicas=8 (repeatable)")
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.add_argument("--requests", metavar="FILE", help="write one JSON line per request to FILE ('-' for stdout)")
    return p
