"""The room's scorer: the setups reports claim stars with, run in worker processes, fairly, each in a time box.

Checking a claim means simulating the setup (`lab.server.room.verify`), which takes
from a few milliseconds to seconds. So that one participant cannot make the
others wait, the scorer:

- runs the setups in `workers` processes of their own (`python -m
  lab.server.roomscore`), at a lower CPU priority than the server, each one capped in
  memory: the server's event loop is never the one simulating;
- takes the waiting setups one client address at a time, in turn (round
  robin), and never runs two of one address's at once: with two workers, one
  address can hold one of them at most, and a setup waits behind at most one
  running setup of each other address;
- gives each setup `time_box_s` seconds: a worker still busy then is killed
  and replaced, and the setup is `Unchecked` (the report is stored, those
  stars are not counted);
- bounds what waits: `queue` setups in all (more: 503, try again later),
  `per_participant` and `per_address` at once (more: 429), and a budget of
  worker seconds per address (`seconds_rate` a second, up to
  `seconds_burst`; once spent: 429 with the time it takes to refill).

The same setup asked twice while it is being scored is scored once.

The workers talk JSON lines over their standard input and output: a request
`{"mission", "setup"}`, an answer `{"ok": [stars, replicas, p99_ms]}` or
`{"refused": message, "status": n}`. A worker says `{"ready": true}` once it
has imported the model, and the time box starts only then.
"""

import argparse
import asyncio
import json
import os
import select
import subprocess
import sys
import threading
import time
from collections import OrderedDict, deque
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lab.server.room import RoomError, Verified

__all__ = ["ScoreLimits", "Scorer", "Unchecked", "worker_main"]

WORKER_MEMORY_BYTES = 1 << 30  # address space a worker may use: a setup within the page's budget needs ~200 MB
STARTUP_S = 60.0  # for a worker to import the model and say it is ready


@dataclass(frozen=True, slots=True)
class ScoreLimits:
    """How much scoring the room does, and how much of it one participant or address may ask for."""

    workers: int = 2  # processes scoring at once (one address holds one at most)
    time_box_s: float = 3.0  # a setup still running after this is stopped and left unchecked
    queue: int = 64  # setups waiting in all; more are answered 503
    per_participant: int = 2  # setups one participant may have waiting or running
    per_address: int = 8  # the same, for one client address
    seconds_rate: float = 0.25  # worker seconds an address earns a second (a quarter of one core)
    seconds_burst: float = 12.0  # worker seconds an address may spend at once (four full time boxes)


class Unchecked(RoomError):
    """A setup the room could not score (its time box ran out, or the worker failed): its stars are not counted."""

    def __init__(self, message: str) -> None:
        super().__init__(message, 202)


@dataclass(slots=True)
class _Job:
    address: str
    participant: str
    mission: str
    setup: str
    future: "asyncio.Future[Verified]"
    loop: asyncio.AbstractEventLoop


class Scorer:
    """Setups scored in worker processes, one address at a time in turn; see the module's docstring."""

    def __init__(self, site: Path | None = None, limits: ScoreLimits = ScoreLimits(),
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.site, self.limits, self.clock = site, limits, clock
        self._lock = threading.Condition()
        self._waiting: OrderedDict[str, deque[_Job]] = OrderedDict()  # address -> its setups, in turn
        self._running: dict[str, int] = {}  # address -> setups running now
        self._by_participant: dict[str, int] = {}  # participant -> setups waiting or running
        self._by_address: dict[str, int] = {}  # address -> setups waiting or running
        self._jobs: dict[tuple[str, str], _Job] = {}  # (mission, setup) -> its job, while waiting or running
        self._seconds: dict[str, tuple[float, float]] = {}  # address -> (worker seconds left, when counted)
        self._threads: list[threading.Thread] = []
        self._procs: list[subprocess.Popen | None] = []
        self._closed = False
        self.started = 0  # workers started so far (a killed one is replaced)
        self.scored = 0  # setups given to a worker so far

    # -- asking --------------------------------------------------------------------------------

    async def score(self, address: str, participant: str, mission_id: str, setup: str) -> Verified:
        """The setup's score on the mission; RoomError if it is refused, Unchecked if it could not be scored,
        RoomError 429 or 503 (with `retry_after_s`) if it cannot be taken now."""
        loop = asyncio.get_running_loop()
        with self._lock:
            self._admit(address, participant)
            job = self._jobs.get((mission_id, setup))
            if job is None:
                job = _Job(address, participant, mission_id, setup, loop.create_future(), loop)
                self._jobs[(mission_id, setup)] = job
                self._waiting.setdefault(address, deque()).append(job)
                self._by_address[address] = self._by_address.get(address, 0) + 1
            self._by_participant[participant] = self._by_participant.get(participant, 0) + 1
            self._start_workers()
            self._lock.notify()
        try:
            return await asyncio.shield(job.future)
        finally:
            with self._lock:
                self._by_participant[participant] -= 1
                if not self._by_participant[participant]:
                    del self._by_participant[participant]

    def _admit(self, address: str, participant: str) -> None:
        """RoomError unless one more setup of this participant and address may wait now (holding the lock)."""
        limits = self.limits
        if self._closed:
            raise _busy("the room is closing", 5)
        if self._by_participant.get(participant, 0) >= limits.per_participant:
            raise _busy("you have setups being checked already; your page sends this one again", 2, 429)
        if self._by_address.get(address, 0) >= limits.per_address:
            raise _busy("your address has many setups being checked already; your page sends this one again", 2,
                        429)
        left = self._seconds_left(address)
        if left < 0:
            wait = -left / limits.seconds_rate
            raise _busy(f"your address has used its share of the room's checking for now; wait {wait:.0f} s", wait,
                        429)
        if sum(self._by_address.values()) >= limits.queue:
            raise _busy("the room is checking many setups just now; your page sends yours again", 5)

    def _seconds_left(self, address: str) -> float:
        now = self.clock()
        left, then = self._seconds.get(address, (self.limits.seconds_burst, now))
        left = min(self.limits.seconds_burst, left + (now - then) * self.limits.seconds_rate)
        if len(self._seconds) > 10_000:  # many addresses: forget those with a full budget
            self._seconds = {a: v for a, v in self._seconds.items() if v[0] < self.limits.seconds_burst}
        self._seconds[address] = (left, now)
        return left

    # -- the workers' side (threads) ---------------------------------------------------------------

    def _start_workers(self) -> None:
        """Start the threads that feed the workers, on the first setup (holding the lock)."""
        if self._threads:
            return
        self._procs = [None] * self.limits.workers
        for slot in range(self.limits.workers):
            thread = threading.Thread(target=self._serve, args=(slot,), name=f"room-score-{slot}", daemon=True)
            self._threads.append(thread)
            thread.start()

    def _take(self) -> _Job | None:
        """The next setup to score: the first address in turn with none running; None once closed."""
        with self._lock:
            while not self._closed:
                for address, jobs in self._waiting.items():
                    if self._running.get(address, 0):
                        continue
                    job = jobs.popleft()
                    if jobs:
                        self._waiting.move_to_end(address)
                    else:
                        del self._waiting[address]
                    self._running[address] = 1
                    return job
                self._lock.wait()
            return None

    def _serve(self, slot: int) -> None:
        while (job := self._take()) is not None:
            with self._lock:
                self.scored += 1
            began = self.clock()
            try:
                answer = self._ask(slot, job)
            except Exception as exc:  # noqa: BLE001 -- a worker that cannot start or answer: the setup is unchecked
                self._stop(slot)
                answer = {"unchecked": f"the room could not check it ({exc})"}
            self._finish(job, answer, self.clock() - began)

    def _ask(self, slot: int, job: _Job) -> dict[str, Any]:
        proc = self._procs[slot]
        if proc is None or proc.poll() is not None:
            proc = self._procs[slot] = self._spawn()
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write(json.dumps({"mission": job.mission, "setup": job.setup}).encode() + b"\n")
        proc.stdin.flush()
        line = _read_line(proc.stdout.fileno(), self.limits.time_box_s)
        if line is None:
            self._stop(slot)
            return {"unchecked": f"that setup takes more than {self.limits.time_box_s:g} s to check, the most the "
                                 "room gives one; its stars are kept in your browser but not counted here"}
        return dict(json.loads(line))

    def _spawn(self) -> subprocess.Popen:
        command = [sys.executable, "-m", "lab.server.roomscore"] + (["--site", str(self.site)] if self.site else [])
        root = str(Path(__file__).resolve().parents[2])
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [root, os.environ.get("PYTHONPATH")]))}
        proc = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                env=env)
        with self._lock:
            self.started += 1
        assert proc.stdout is not None
        if _read_line(proc.stdout.fileno(), STARTUP_S) is None:
            proc.kill()
            proc.wait()
            raise RuntimeError("a scoring worker did not start")
        return proc

    def _stop(self, slot: int) -> None:
        proc, self._procs[slot] = self._procs[slot], None
        if proc is not None:
            proc.kill()
            proc.wait()
            for pipe in (proc.stdin, proc.stdout):
                if pipe is not None:
                    pipe.close()

    def _finish(self, job: _Job, answer: dict[str, Any], cost_s: float) -> None:
        with self._lock:
            self._running.pop(job.address, None)
            if job.address in self._waiting:  # its next setup goes behind those of every other address
                self._waiting.move_to_end(job.address)
            del self._jobs[(job.mission, job.setup)]
            self._by_address[job.address] -= 1
            if not self._by_address[job.address]:
                del self._by_address[job.address]
            left = self._seconds_left(job.address)
            self._seconds[job.address] = (left - cost_s, self.clock())
            self._lock.notify_all()
        _deliver(job, answer)

    def close(self) -> None:
        """Stop the workers; setups still waiting are answered 503."""
        with self._lock:
            self._closed = True
            waiting = [job for jobs in self._waiting.values() for job in jobs]
            self._waiting.clear()
            self._lock.notify_all()
        for job in waiting:
            _deliver(job, {"refused": "the room is closing", "status": 503})
        for proc in list(self._procs):  # a thread waiting on one hears it close
            if proc is not None and proc.poll() is None:
                proc.kill()
        for thread in self._threads:
            thread.join(10)
        for slot in range(len(self._procs)):
            self._stop(slot)


def _busy(message: str, retry_after_s: float, status: int = 503) -> RoomError:
    error = RoomError(message, status)
    error.retry_after_s = retry_after_s  # type: ignore[attr-defined]
    return error


def _deliver(job: _Job, answer: dict[str, Any]) -> None:
    """Settle the job's future on its event loop (a loop already closed has no one waiting)."""
    try:
        job.loop.call_soon_threadsafe(_settle, job.future, answer)
    except RuntimeError:
        pass


def _settle(future: "asyncio.Future[Verified]", answer: dict[str, Any]) -> None:
    if future.done():
        return
    if "ok" in answer:
        stars, replicas, p99 = answer["ok"]
        future.set_result(Verified(int(stars), int(replicas), float(p99)))
    elif "refused" in answer:
        future.set_exception(RoomError(str(answer["refused"]), int(answer.get("status", 422))))
    else:
        future.set_exception(Unchecked(str(answer.get("unchecked", "the room could not check it"))))
    future.exception()  # retrieved here: a future no one awaits any more logs nothing


def _read_line(fd: int, timeout_s: float) -> bytes | None:
    """One line from `fd` within `timeout_s`, or None (the time ran out, or the other end closed)."""
    deadline = time.monotonic() + timeout_s
    data = b""
    while not data.endswith(b"\n"):
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([fd], [], [], left)[0]:
            return None
        chunk = os.read(fd, 65536)
        if not chunk:
            return None
        data += chunk
    return data


# -- the worker process -------------------------------------------------------------------------------

def worker_main(argv: list[str] | None = None) -> None:
    """`python -m lab.server.roomscore [--site DIR]`: score setups read from standard input, one JSON line each."""
    p = argparse.ArgumentParser(prog="python -m lab.server.roomscore")
    p.add_argument("--site", help="the built site, whose trace missions' slices are replayed")
    args = p.parse_args(argv)
    try:
        import resource

        resource.setrlimit(resource.RLIMIT_AS, (WORKER_MEMORY_BYTES, WORKER_MEMORY_BYTES))
        os.nice(5)  # the server answers first: scoring takes what CPU is left
    except (ImportError, OSError, ValueError):
        pass
    from lab.page import view  # noqa: F401 -- the page's code, imported before the first setup: the time box is the run's
    from lab.server.room import verify

    out = sys.stdout.buffer
    out.write(b'{"ready": true}\n')
    out.flush()
    for line in sys.stdin.buffer:
        try:
            asked = json.loads(line)
            v = verify(str(asked["mission"]), str(asked["setup"]), args.site)
            answer: dict[str, Any] = {"ok": [v.stars, v.replicas, v.p99_ms]}
        except Exception as exc:  # noqa: BLE001 -- a refusal, or the model failing on a setup: say which
            if isinstance(exc, RoomError) and exc.status == 503:
                answer = {"unchecked": str(exc)}
            elif isinstance(exc, RoomError):
                answer = {"refused": str(exc), "status": exc.status}
            else:
                answer = {"unchecked": f"the room could not check it ({type(exc).__name__})"}
        out.write(json.dumps(answer).encode() + b"\n")
        out.flush()


if __name__ == "__main__":
    worker_main()
