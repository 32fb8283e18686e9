"""A workshop room under load: 100 participants join and report progress; the server is SIGKILLed mid-run.

    python bench/bench_room.py [--minutes 5] [--participants 100] [--every 1.0] [--site DIR]

Starts `prefix-lab serve --room` on a fresh data folder (building the site
first if it is stale). Each simulated participant connects from its own
loopback address (127.0.0.2, 127.0.0.3, ...), as devices in a room would,
joins, keeps the participants' event stream open, and sends a report about
every `--every` seconds (jittered): the mission it is on and its stars so
far, with the setups that earned them (real setups, which the server scores).
A quarter of the way in, the facilitator opens mission 3 for everyone; half
way, the server is killed with SIGKILL and started again on the same port
and data folder, and the participants carry on (reconnecting, as pages do).

Printed: writes accepted; writes lost (acknowledged with 200 but not in the
database: must be 0), checked right after the restart for the writes before
the kill, and at the end for all; writes that failed while the server was
down (never acknowledged, so not lost: the page sends its whole state again);
response time of the reports (p50, p95, p99, max), outside the outage; and
how many event streams heard the facilitator's mission.
"""

import argparse
import asyncio
import json
import os
import random
import re
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from lab.page.urlstate import write_hash  # noqa: E402
from missions import MISSIONS  # noqa: E402

# A setup a player might reach on each mission (the mission's start, then these keys), with its stars.
PLAYED = {
    "cache-on": ({"fleet.cache": "true"}, 1), "timestamp": ({"dynamic_text": "none"}, 3),
    "round-robin": ({"router.kind": "cache_aware"}, 1), "hot-tenant": ({"router.spill_threshold_s": "1"}, 1),
    "surge-memory": ({"fleet.memory_gb": "4"}, 1), "burst": ({"fleet.replicas": "4"}, 1),
}
SETUPS = {m.id: (write_hash(m.start.with_text(PLAYED[m.id][0])), PLAYED[m.id][1]) for m in MISSIONS if m.id in PLAYED}
ORDER = list(SETUPS)


class Http:
    """One keep-alive HTTP/1.1 connection from a given local address; reconnects after any failure."""

    def __init__(self, port: int, local: str) -> None:
        self.port, self.local = port, local
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None

    async def request(self, method: str, path: str, body: object = None, headers: dict | None = None):
        try:
            if self.writer is None:
                self.reader, self.writer = await asyncio.open_connection("127.0.0.1", self.port,
                                                                         local_addr=(self.local, 0))
            data = b"" if body is None else json.dumps(body).encode()
            head = [f"{method} {path} HTTP/1.1", f"Host: 127.0.0.1:{self.port}", f"Content-Length: {len(data)}",
                    "Content-Type: application/json", *(f"{k}: {v}" for k, v in (headers or {}).items())]
            self.writer.write(("\r\n".join(head) + "\r\n\r\n").encode() + data)
            assert self.reader is not None
            status = int((await self.reader.readline()).split()[1])
            length = 0
            while (line := await self.reader.readline()) not in (b"\r\n", b""):
                name, _, value = line.decode().partition(":")
                if name.lower() == "content-length":
                    length = int(value)
            payload = await self.reader.readexactly(length)
            return status, payload
        except (OSError, EOFError, IndexError, ValueError, asyncio.IncompleteReadError):
            self.close()
            raise ConnectionError from None

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
        self.reader = self.writer = None


class Tally:
    def __init__(self) -> None:
        self.acked: dict[str, list[int]] = {}  # participant -> acknowledged seqs
        self.latency_ms: list[float] = []
        self.refused: dict[int, int] = {}
        self.failed = 0  # no answer (the server was down)
        self.heard: set[int] = set()  # participants whose stream delivered the facilitator's mission
        self.down = False
        self.snapshots = 0  # room snapshots the facilitator's stream received


async def participant(i: int, port: list[int], tally: Tally, every: float, stop: float) -> None:
    local = f"127.0.0.{i + 2}"
    http = Http(port[0], local)
    rng = random.Random(i)
    while True:
        try:
            status, body = await http.request("POST", "/room/api/join", {"name": f"Participant {i + 1}"})
            if status == 200:
                break
        except ConnectionError:
            pass
        await asyncio.sleep(1)
    who = json.loads(body)
    auth = {"Authorization": f"Bearer {who['id']}.{who['secret']}"}
    tally.acked[who["id"]] = []
    stream = asyncio.ensure_future(listen(i, port, local, tally))
    seq, step = 0, 0
    await asyncio.sleep(rng.uniform(0, every))
    while time.monotonic() < stop:
        seq += 1
        step += 1
        reached = ORDER[: min(len(ORDER), step // 20)]  # a new mission passed every 20 reports or so
        current = ORDER[min(len(ORDER) - 1, len(reached))]
        report = {"seq": seq, "current": current,
                  "missions": {m: {"stars": SETUPS[m][1], "setup": SETUPS[m][0]} for m in reached}}
        http.port = port[0]
        t0 = time.perf_counter()
        try:
            status, _ = await http.request("POST", "/room/api/report", report, auth)
        except ConnectionError:
            tally.failed += 1
        else:
            if status == 200:
                tally.acked[who["id"]].append(seq)
                if not tally.down:
                    tally.latency_ms.append((time.perf_counter() - t0) * 1000)
            else:
                tally.refused[status] = tally.refused.get(status, 0) + 1
        await asyncio.sleep(every * rng.uniform(0.8, 1.2))
    stream.cancel()
    http.close()


async def listen(i: int, port: list[int], local: str, tally: Tally) -> None:
    """The participant page's event stream, reconnecting as EventSource does."""
    while True:
        try:
            reader, writer = await asyncio.open_connection("127.0.0.1", port[0], local_addr=(local, 0))
            writer.write(b"GET /room/api/events HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            event = ""
            while line := await reader.readline():
                text = line.decode().strip()
                if text.startswith("event: "):
                    event = text[7:]
                elif text.startswith("data: ") and event == "mission" and json.loads(text[6:]):
                    tally.heard.add(i)
            writer.close()
        except OSError:
            pass
        await asyncio.sleep(2)


async def facilitator(port: list[int], token: list[str], tally: Tally) -> None:
    """The facilitator's page: its event stream of room snapshots, reconnecting with the current token."""
    while True:
        try:
            reader, writer = await asyncio.open_connection("127.0.0.1", port[0])
            writer.write(f"GET /room/api/stream?token={token[0]} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".encode())
            while line := await reader.readline():
                if line.startswith(b"event: room"):
                    tally.snapshots += 1
            writer.close()
        except OSError:
            pass
        await asyncio.sleep(2)


def start_server(site: str, data: Path, port: int) -> tuple[subprocess.Popen, int, str]:
    proc = subprocess.Popen([sys.executable, "-m", "lab", "serve", "--dir", site, "--port", str(port),
                             "--room", "--data", str(data)], cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True)
    bound, token = 0, ""
    assert proc.stdout is not None
    for line in proc.stdout:
        if m := re.search(r"join at http://[^:]+:(\d+)/", line):
            bound = int(m.group(1))
        if m := re.search(r"\?token=(\S+)", line):
            token = m.group(1)
            break
    if not token:
        raise SystemExit("prefix-lab serve --room did not start")
    return proc, bound, token


def cpu_s(pid: int) -> float:
    """CPU time (user + system) a process has used so far, from /proc."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def missing(data: Path, tally: Tally) -> tuple[int, int]:
    """(acknowledged writes checked, of them not in the database), read straight from the SQLite file."""
    db = sqlite3.connect(f"file:{data / 'room.sqlite3'}?mode=ro", uri=True)
    stored = set(db.execute("SELECT participant, seq FROM reports").fetchall())
    db.close()
    acked = [(p, s) for p, seqs in tally.acked.items() for s in seqs]
    return len(acked), sum(1 for a in acked if a not in stored)


async def run(args: argparse.Namespace) -> None:
    data = Path(tempfile.mkdtemp(prefix="bench-room-")) / "data"
    proc, bound, token = start_server(args.site, data, 0)
    port, tokens = [bound], [token]
    tally = Tally()
    began = time.monotonic()
    stop = began + args.minutes * 60
    crowd = [asyncio.ensure_future(participant(i, port, tally, args.every, stop)) for i in range(args.participants)]
    watching = asyncio.ensure_future(facilitator(port, tokens, tally))
    await asyncio.sleep(args.minutes * 60 / 4)
    fac = Http(bound, "127.0.0.1")
    status, _ = await fac.request("POST", "/room/api/open", {"mission": "round-robin"},
                                  {"Authorization": f"Bearer {token}"})
    print(f"{time.monotonic() - began:6.1f} s  the facilitator opened mission 3 for everyone ({status})", flush=True)
    await asyncio.sleep(args.minutes * 60 / 4)
    acked_before = sum(len(s) for s in tally.acked.values())
    tally.down = True
    t_kill = time.monotonic()
    served_cpu, served_s = cpu_s(proc.pid), t_kill - began
    proc.kill()  # SIGKILL: no chance to finish anything
    proc.wait()
    print(f"{t_kill - began:6.1f} s  SIGKILL to the server after {acked_before:,} acknowledged writes", flush=True)
    proc, _, tokens[0] = start_server(args.site, data, bound)
    checked, lost = missing(data, tally)
    print(f"{time.monotonic() - began:6.1f} s  started again in {time.monotonic() - t_kill:.1f} s; acknowledged "
          f"writes checked in the database: {checked:,}, missing: {lost}", flush=True)
    tally.down = False
    t_restart = time.monotonic()
    await asyncio.gather(*crowd)
    watching.cancel()
    served_cpu += cpu_s(proc.pid)
    served_s += time.monotonic() - t_restart
    proc.terminate()
    proc.wait()
    checked, lost = missing(data, tally)
    lat = sorted(tally.latency_ms)
    q = statistics.quantiles(lat, n=100)
    refused = ", ".join(f"{n} x {s}" for s, n in sorted(tally.refused.items())) or "none"
    print(f"\n{args.participants} participants, {args.minutes:g} min, a report every ~{args.every:g} s each")
    print(f"writes accepted        {checked:,}")
    print(f"writes lost            {lost}   (acknowledged but not in the database after the SIGKILL and at the end)")
    print(f"writes refused         {refused}")
    print(f"failed, server down    {tally.failed:,}   (never acknowledged; the next report carries the same state)")
    print(f"report response time   p50 {q[49]:.1f} ms   p95 {q[94]:.1f} ms   p99 {q[98]:.1f} ms   max {lat[-1]:.1f} ms")
    print(f"server CPU time        {served_cpu:.1f} s in {served_s:.0f} s of serving "
          f"({served_cpu / served_s:.0%} of one core; load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores)")
    print(f"mission 3 heard by     {len(tally.heard)} of {args.participants} event streams")
    print(f"facilitator's stream   {tally.snapshots:,} room snapshots received")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--minutes", type=float, default=5.0)
    p.add_argument("--participants", type=int, default=100)
    p.add_argument("--every", type=float, default=1.0, help="seconds between one participant's reports")
    p.add_argument("--site", default=str(ROOT / "site"), help="the site folder to serve (built if stale)")
    args = p.parse_args()
    if not 1 <= args.participants <= 250:
        raise SystemExit("--participants: 1 to 250 (one loopback address each)")
    asyncio.run(run(args))


if __name__ == "__main__":
    main()
