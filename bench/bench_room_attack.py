"""One address against a workshop room of 100: slow readers, costly reports, slowloris, each beside no attack.

    python bench/bench_room_attack.py [--seconds 40] [--participants 100] [--site DIR] [--open-files 1024]
                                      [--checkout DIR]

Starts `prefix-lab serve --room` on a fresh data folder (the site must be
built: `prefix-lab build`), under a soft limit of `--open-files` open files
(the usual 1,024; the server raises it if the hard limit allows). Then 100
honest participants, each from its own loopback address (127.0.0.2, ...),
join, keep the participants' event stream open, and behave like the page:
a report about every two seconds (jittered) with the mission on screen and
the best setups so far, a new best setup now and then (a real one from the
missions' sweep, with the stars it earns, which the server scores), and a
file of the site now and then (the page, a script). Their latency and their
failures (no answer, a 5xx, a 429, or a refusal) are counted per phase.

The phases, `--seconds` each: no attack, then one address (127.0.0.250)
attacking in a process of its own, with each of:

1. slow readers: up to 720 connections asking for the memory snapshot (12 MB)
   that never read a byte, renewed as they age;
3. costly reports: ten participants joined from that address sending reports
   as fast as they are answered, each claiming a star with new setups that
   take the most simulating the missions allow (64 replicas, the costliest
   router) and setups that change the mission's traffic (which cannot earn
   a star: refused before they run);
5. slowloris: up to 720 connections sending their headers a line every few
   seconds, never ending them;

each after a phase with no attack, so every row has its own "without". Every
loop is bounded in count and in time, and everything stays on 127.0.0.0/8.

With `--checkout DIR` the server runs another source tree's code (say, an
older commit unpacked with `git archive`) on the same site: a before-and-after.

Printed per phase: honest reports (count, p50, p99, max ms, failed), honest
file requests (count, p50, p99, failed), and what the attacker got. The
issue's bar: no failed honest request, report p99 under 2 s, and no honest
report waiting more than 5 s behind another address's setups (its max).
"""

import argparse
import asyncio
import http.client
import json
import os
import random
import re
import resource
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from bench_room import Http, cpu_s  # noqa: E402

from lab.page.urlstate import write_hash  # noqa: E402
from missions import MISSIONS, find_mission  # noqa: E402

ATTACKER = "127.0.0.250"
ATTACKS = {1: "slow readers", 3: "costly reports", 5: "slowloris"}
MAX_CONNECTS = 40_000  # an attacker opens at most this many connections in a phase
MAX_REQUESTS = 20_000  # and sends at most this many reports


def swept_setups() -> dict[str, list[tuple[str, int]]]:
    """Each mission's swept setups that earn a star: (the page's URL state, its stars)."""
    sweeps = json.loads((ROOT / "lab" / "data" / "mission-sweeps.json").read_text())["missions"]
    out = {}
    for entry in sweeps:
        mission = find_mission(entry["id"], MISSIONS)
        if mission is None or mission.trace:
            continue
        earned = [(write_hash(mission.start.with_text(s["settings"]), {"mission": mission.id}), s["stars"])
                  for s in entry["setups"] if s["stars"] > 0]
        if earned:
            out[mission.id] = earned
    return out


# -- the honest room ------------------------------------------------------------------------------

class Tally:
    def __init__(self) -> None:
        self.phase = "warm-up"
        self.ms: dict[tuple[str, str], list[float]] = {}  # (phase, report|file) -> latencies of the answered
        self.failed: dict[tuple[str, str], dict[str, int]] = {}  # (phase, kind) -> why -> count
        self.unchecked: dict[str, int] = {}  # phase -> reports stored with a setup the room could not score

    def note(self, phase: str, kind: str, ms: float | None, why: str | None = None) -> None:
        if why is None and ms is not None:
            self.ms.setdefault((phase, kind), []).append(ms)
        else:
            failed = self.failed.setdefault((phase, kind), {})
            failed[why or "?"] = failed.get(why or "?", 0) + 1


async def honest(i: int, port: int, tally: Tally, setups: dict[str, list[tuple[str, int]]], files: list[str],
                 stop: float) -> None:
    local = f"127.0.0.{i + 2}"
    rng = random.Random(i)
    api, site = Http(port, local), Http(port, local)
    body, status = b"", 0
    for _ in range(30):
        try:
            status, body = await api.request("POST", "/room/api/join", {"name": f"Participant {i + 1}"})
            if status == 200:
                break
        except ConnectionError:
            pass
        await asyncio.sleep(1)
    if status != 200:
        tally.note(tally.phase, "report", None, f"could not join ({status})")
        return
    who = json.loads(body)
    auth = {"Authorization": f"Bearer {who['id']}.{who['secret']}"}
    stream = asyncio.ensure_future(listen(port, local))
    best: dict[str, tuple[str, int]] = {}
    current = rng.choice(list(setups))
    seq, tick = 0, 0
    await asyncio.sleep(rng.uniform(0, 2))
    while time.monotonic() < stop:
        tick += 1
        if tick == 1 or rng.random() < 1 / 15:  # a new best setup, as a player finds one every half minute or so
            current = rng.choice(list(setups))
            best[current] = rng.choice(setups[current])
        seq += 1
        report = {"seq": seq, "current": current,
                  "missions": {m: {"stars": stars, "setup": setup} for m, (setup, stars) in best.items()}}
        phase, t0 = tally.phase, time.perf_counter()
        try:
            status, answer = await api.request("POST", "/room/api/report", report, auth)
        except ConnectionError:
            tally.note(phase, "report", None, "no answer")
        else:
            if status == 200:
                tally.note(phase, "report", (time.perf_counter() - t0) * 1000)
                if b"unchecked" in answer:
                    tally.unchecked[phase] = tally.unchecked.get(phase, 0) + 1
            else:
                tally.note(phase, "report", None, str(status))
        if tick % 3 == 0:
            path = rng.choice(files)
            phase, t0 = tally.phase, time.perf_counter()
            try:
                status, _ = await site.request("GET", path, headers={"Accept-Encoding": "gzip"})
            except ConnectionError:
                tally.note(phase, "file", None, "no answer")
            else:
                if status == 200:
                    tally.note(phase, "file", (time.perf_counter() - t0) * 1000)
                else:
                    tally.note(phase, "file", None, str(status))
        await asyncio.sleep(2 * rng.uniform(0.8, 1.2))
    stream.cancel()
    api.close()
    site.close()


async def listen(port: int, local: str) -> None:
    """The participant page's event stream, reconnecting as EventSource does."""
    while True:
        try:
            reader, writer = await asyncio.open_connection("127.0.0.1", port, local_addr=(local, 0))
            writer.write(b"GET /room/api/events HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            while await reader.readline():
                pass
            writer.close()
        except OSError:
            pass
        await asyncio.sleep(2)


# -- the attacker (a process of its own) --------------------------------------------------------------

def slow_readers(port: int, seconds: float, path: str) -> dict[str, int]:
    """Hold up to 720 connections that asked for a large file and read nothing; renew those older than 12 s."""
    deadline, pool, got = time.monotonic() + seconds, [], {"connects": 0, "refused at connect": 0}
    request = f"GET /{path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept-Encoding: identity\r\n\r\n".encode()
    while time.monotonic() < deadline and got["connects"] < MAX_CONNECTS:
        now = time.monotonic()
        for sock, _ in [p for p in pool if now - p[1] > 12]:
            sock.close()
        pool = [p for p in pool if now - p[1] <= 12]
        while len(pool) < 720 and got["connects"] < MAX_CONNECTS and time.monotonic() < deadline:
            sock = socket.socket()
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            try:
                sock.bind((ATTACKER, 0))
                sock.settimeout(2)
                sock.connect(("127.0.0.1", port))
                sock.sendall(request)
            except OSError:
                sock.close()
                got["refused at connect"] += 1
                break
            got["connects"] += 1
            pool.append((sock, time.monotonic()))
        time.sleep(0.5)
    for sock, _ in pool:
        sock.close()
    return got


def slowloris(port: int, seconds: float) -> dict[str, int]:
    """Hold up to 720 connections whose headers never end: a header line to each every 3 s; reopen the dropped."""
    deadline, pool, got = time.monotonic() + seconds, [], {"connects": 0, "dropped by the server": 0}
    while time.monotonic() < deadline and got["connects"] < MAX_CONNECTS:
        kept = []
        for sock in pool:
            try:
                sock.sendall(b"X-Slow: 1\r\n")
                kept.append(sock)
            except OSError:
                sock.close()
                got["dropped by the server"] += 1
        pool = kept
        while len(pool) < 720 and got["connects"] < MAX_CONNECTS:
            sock = socket.socket()
            try:
                sock.bind((ATTACKER, 0))
                sock.settimeout(2)
                sock.connect(("127.0.0.1", port))
                sock.sendall(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n")
            except OSError:
                sock.close()
                break
            got["connects"] += 1
            pool.append(sock)
        time.sleep(3)
    for sock in pool:
        sock.close()
    return got


def costly_setups() -> list[tuple[str, str]]:
    """(mission, setup) pairs that each take a real simulation to check, all different, then some that cannot
    earn a star (they change the mission's traffic), interleaved."""
    costly = []
    for replicas in range(64, 16, -1):
        for mission_id, changes in (("monday", {"router.kind": "cost", "fleet.memory_gb": "16"}),
                                    ("burst", {"router.kind": "cost"}), ("warm-or-idle", {"router.kind": "cost"}),
                                    ("round-robin", {"router.kind": "cost"}), ("split-decode", {})):
            mission = find_mission(mission_id, MISSIONS)
            assert mission is not None
            scenario = mission.start.with_text({**changes, "fleet.replicas": str(replicas)})
            costly.append((mission_id, write_hash(scenario, {"mission": mission_id})))
    cache_on = find_mission("cache-on", MISSIONS)
    assert cache_on is not None
    heavy = [("cache-on", write_hash(cache_on.start.with_text({"traffic.session_rate": str(40 + n / 10),
                                                                "duration_s": "190"}), {"mission": "cache-on"}))
             for n in range(100)]
    mixed = []
    for n, pair in enumerate(costly):
        mixed.append(pair)
        if n % 2:
            mixed.append(heavy[n % len(heavy)])
    return mixed


def costly_reports(port: int, seconds: float) -> dict[str, int]:
    """Ten participants from one address sending reports of new costly setups as fast as they are answered."""
    deadline, got = time.monotonic() + seconds, {}
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30, source_address=(ATTACKER, 0))

    def call(path: str, body: dict, auth: str = "") -> tuple[int, dict]:
        nonlocal conn
        try:
            conn.request("POST", path, json.dumps(body), {"Content-Type": "application/json",
                                                         **({"Authorization": auth} if auth else {})})
            response = conn.getresponse()
            data = response.read()
        except (OSError, http.client.HTTPException):
            conn.close()
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30, source_address=(ATTACKER, 0))
            return 0, {}
        try:
            return response.status, json.loads(data)
        except ValueError:
            return response.status, {}

    members = []
    for n in range(10):
        status, who = call("/room/api/join", {"name": f"Mallory {n}"})
        if status == 200:
            members.append(f"Bearer {who['id']}.{who['secret']}")
    setups = costly_setups()
    seqs, at, sent = [0] * len(members), 0, 0
    while members and time.monotonic() < deadline and sent < MAX_REQUESTS:
        for k, auth in enumerate(members):
            seqs[k] += 1
            batch = {}
            for _ in range(4):
                mission_id, setup = setups[at % len(setups)]
                at += 1
                batch[mission_id] = {"stars": 1, "setup": setup}
            status, answer = call("/room/api/report", {"seq": seqs[k], "current": None, "missions": batch}, auth)
            sent += 1
            key = f"{status}" + (" unchecked" if "unchecked" in answer else "")
            got[key] = got.get(key, 0) + 1
            if time.monotonic() >= deadline:
                break
        time.sleep(0.05)
    got["setups sent"] = at
    return got


def attacker_main(kind: int, port: int, seconds: float, path: str) -> None:
    got = {1: lambda: slow_readers(port, seconds, path), 3: lambda: costly_reports(port, seconds),
           5: lambda: slowloris(port, seconds)}[kind]()
    print(json.dumps(got), flush=True)


# -- the run ------------------------------------------------------------------------------------------

# Serves the room from another checkout's code (`--checkout`, for a before-and-after), on this site as it is.
OTHER_CHECKOUT = """
import sys
import lab.server.serve
lab.server.serve.site_is_current = lambda site: True  # this site was built by the other code: serve it as it is
from lab.cli.main import main
sys.exit(main(["serve", "--dir", sys.argv[1], "--port", "0", "--room", "--data", sys.argv[2]]))
"""


def start_server(site: str, data: Path, open_files: int | None,
                 checkout: str | None = None) -> tuple[subprocess.Popen, int, list[str]]:
    def limit() -> None:
        if open_files:
            _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
            resource.setrlimit(resource.RLIMIT_NOFILE, (open_files, hard))

    log = tempfile.TemporaryFile("w+")  # the server's log: a file, so that writing it never blocks the server
    command = [sys.executable, "-m", "lab", "serve", "--dir", site, "--port", "0", "--room", "--data", str(data)]
    env = None
    if checkout:
        command = [sys.executable, "-c", OTHER_CHECKOUT, str(Path(site).resolve()), str(data)]
        env = {**os.environ, "PYTHONPATH": checkout, "PYTHONDONTWRITEBYTECODE": "1"}
    proc = subprocess.Popen(command, cwd=checkout or ROOT, stdout=subprocess.PIPE, stderr=log, text=True,
                            preexec_fn=limit, env=env)
    proc.log = log  # type: ignore[attr-defined]
    assert proc.stdout is not None
    lines, port = [], 0
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        lines.append(line.rstrip())
        if m := re.search(r"join at http://[^:]+:(\d+)/", line):
            port = int(m.group(1))
        if port and "only this machine can join" in line:
            break
    if not port:
        raise SystemExit("prefix-lab serve --room did not start:\n" + "\n".join(lines))
    threading.Thread(target=lambda: lines.extend(line.rstrip() for line in proc.stdout),  # type: ignore[union-attr]
                     daemon=True).start()  # the rest (the line about open files) as it comes
    return proc, port, lines


def pct(values: list[float], q: int) -> float:
    if len(values) < 2:
        return values[0] if values else 0.0
    return statistics.quantiles(values, n=100)[q - 1]


async def run(args: argparse.Namespace) -> None:
    built = json.loads((Path(args.site) / "build.json").read_text())
    snapshot = built["assets"]["snapshot"]
    files = ["/", "/" + built["assets"]["bridge.js"], "/" + built["assets"]["lab.css"], "/favicon.svg"]
    data = Path(tempfile.mkdtemp(prefix="bench-room-attack-")) / "data"
    proc, port, said = start_server(args.site, data, args.open_files, args.checkout)
    tally = Tally()
    setups = swept_setups()
    phases = []
    for kind in (1, 3, 5):
        phases += [("no attack", None), (f"{ATTACKS[kind]} ({kind})", kind)]
    total = args.warmup + args.seconds * len(phases)
    stop = time.monotonic() + total + 1
    crowd = [asyncio.ensure_future(honest(i, port, tally, setups, files, stop)) for i in range(args.participants)]
    began = time.monotonic()
    await asyncio.sleep(args.warmup)
    attacker_said = {}
    for name, kind in phases:
        tally.phase = name + f" #{len(attacker_said)}" if kind is None else name
        if kind is None:
            await asyncio.sleep(args.seconds)
            attacker_said[tally.phase] = {}
            continue
        attack = await asyncio.create_subprocess_exec(
            sys.executable, __file__, "--attacker", str(kind), "--port", str(port), "--seconds", str(args.seconds),
            "--path", snapshot, stdout=asyncio.subprocess.PIPE)
        out, _ = await asyncio.wait_for(attack.communicate(), args.seconds + 60)
        attacker_said[tally.phase] = json.loads(out.decode().strip().splitlines()[-1] or "{}")
        print(f"{time.monotonic() - began:6.1f} s  {name}: the attacker got {attacker_said[tally.phase]}",
              flush=True)
    tally.phase = "done"
    await asyncio.gather(*crowd)
    served_cpu = cpu_s(proc.pid)
    proc.terminate()
    proc.wait(timeout=30)
    proc.log.seek(0)  # type: ignore[attr-defined]
    err = proc.log.read()  # type: ignore[attr-defined]

    print(f"\n{args.participants} honest participants, one attacker at {ATTACKER}; {args.seconds:g} s a phase, "
          f"soft limit of open files {args.open_files or 'unchanged'}")
    for line in said:
        if "connections" in line or "open files" in line:
            print(f"server: {line}")
    print(f"{'phase':<22s} {'reports':>7s} {'p50 ms':>7s} {'p99 ms':>7s} {'max ms':>7s} {'failed':>6s} "
          f"{'unchecked':>9s} | {'files':>5s} {'p50 ms':>7s} {'p99 ms':>7s} {'failed':>6s}")
    for phase in attacker_said:
        rep, fil = tally.ms.get((phase, "report"), []), tally.ms.get((phase, "file"), [])
        rf = sum(tally.failed.get((phase, "report"), {}).values())
        ff = sum(tally.failed.get((phase, "file"), {}).values())
        label = re.sub(r" #\d+$", "", phase)
        print(f"{label:<22s} {len(rep) + rf:>7d} {pct(rep, 50):>7.1f} {pct(rep, 99):>7.1f} "
              f"{max(rep, default=0):>7.1f} {rf:>6d} {tally.unchecked.get(phase, 0):>9d} | {len(fil) + ff:>5d} "
              f"{pct(fil, 50):>7.1f} {pct(fil, 99):>7.1f} {ff:>6d}")
        for kind in ("report", "file"):
            if tally.failed.get((phase, kind)):
                print(f"{'':22s} failed {kind}s: {tally.failed[(phase, kind)]}")
    print(f"server CPU {served_cpu:.1f} s in {time.monotonic() - began:.0f} s; load average "
          f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    tracebacks = err.count("Traceback")
    print(f"server's log: {len(err.splitlines()):,} lines, {tracebacks} tracebacks, "
          f"{err.count('Too many open files')} 'Too many open files'")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--seconds", type=float, default=40.0, help="length of each phase")
    p.add_argument("--warmup", type=float, default=20.0, help="seconds before the first phase (joins, first setups)")
    p.add_argument("--participants", type=int, default=100)
    p.add_argument("--site", default=str(ROOT / "site"), help="the built site to serve")
    p.add_argument("--open-files", type=int, default=1024, help="the server's soft limit of open files (0: as is)")
    p.add_argument("--checkout", help="serve with the code of this other source tree (a before-and-after), "
                                      "on --site as it is")
    p.add_argument("--attacker", type=int, choices=sorted(ATTACKS), help=argparse.SUPPRESS)
    p.add_argument("--port", type=int, help=argparse.SUPPRESS)
    p.add_argument("--path", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.attacker is not None:
        return attacker_main(args.attacker, args.port, args.seconds, args.path)
    if not 1 <= args.participants <= 240:
        raise SystemExit("--participants: 1 to 240 (one loopback address each, below the attacker's)")
    if not 1 <= args.seconds <= 600:
        raise SystemExit("--seconds: 1 to 600")
    asyncio.run(run(args))


if __name__ == "__main__":
    main()
