// Where the time of one control change goes under Pyodide (run by bench/profile_pyodide.py):
// the page's view code answers the requests in REQUESTS_JSON, each timed for five new setups (other
// seeds), five repeats and five other replica counts on the same seed, then profiled for a new setup
// (each row: {label, request, new, fleet, profiled}, the requests profile_pyodide.py made).
//   node profile_pyodide.mjs PYODIDE_DIR WHEEL REQUESTS_JSON
import { readFileSync } from "node:fs";
import { pathToFileURL } from "node:url";

const [pyodideDir, wheelPath, requestsPath] = process.argv.slice(2);
const { loadPyodide } = await import(pathToFileURL(`${pyodideDir}/pyodide.mjs`).href);
const pyodide = await loadPyodide({ indexURL: `${pyodideDir}/` });
pyodide.unpackArchive(new Uint8Array(readFileSync(wheelPath)), "wheel");
pyodide.globals.set("requests_json", readFileSync(requestsPath, "utf8"));
pyodide.globals.set("SORT", process.env.PROFILE_SORT ?? "tottime");
pyodide.globals.set("ROWS", Number(process.env.PROFILE_ROWS ?? 12));
try {
  process.stdout.write(pyodide.runPython(String.raw`
import cProfile, io, json, pstats, time
from js import process
from lab.page import view
from lab.page.store import STORE

def cpu_ms():
    """CPU time of this Node process (Pyodide runs on its one thread): steadier than the clock on a busy machine."""
    used = process.cpuUsage()
    return (used.user + used.system) / 1000


def timed(requests):
    """Median wall and CPU milliseconds of handle_json over the requests."""
    times, cpu = [], []
    for request in requests:
        text = json.dumps(request)
        t0, c0 = time.perf_counter(), cpu_ms()
        view.handle_json(text)  # what the worker calls: the answer as JSON text
        times.append((time.perf_counter() - t0) * 1000)
        cpu.append(cpu_ms() - c0)
    return sorted(times)[len(times) // 2], sorted(cpu)[len(cpu) // 2]


out = []
for row in json.loads(requests_json):  # profile_pyodide.py writes each row's requests (its seeded, refleeted)
    label, request = row["label"], row["request"]
    view.handle_json(json.dumps(request))  # imports, first-use costs
    new = timed(row["new"])
    seen = timed([request] * 5)
    STORE.answers.clear()  # the counts the rows before asked for are new setups here too
    STORE.runs.clear()
    view.handle_json(json.dumps(request))  # the page's last answer: its traffic is the one the next run sends
    fleet = timed(row["fleet"])
    profile = cProfile.Profile()
    profile.enable()
    view.handle_json(json.dumps(row["profiled"]))
    profile.disable()
    text = io.StringIO()
    pstats.Stats(profile, stream=text).sort_stats(SORT).print_stats(ROWS)
    body = text.getvalue()
    out.append(f"== {label}, Pyodide: a new setup {new[0]:.1f} ms (CPU {new[1]:.1f} ms), the same setup again "
               f"{seen[0]:.1f} ms (CPU {seen[1]:.1f} ms), another replica count on the same seed {fleet[0]:.1f} ms "
               f"(CPU {fleet[1]:.1f} ms) (medians of 5); "
               f"cProfile of a new setup by {SORT} (its overhead inflates builtins):\n" + body[body.index("ncalls"):])


def drag(ahead):
    """A replicas slider moved one step at a time (live), other seeds: each step's CPU ms, and the idle CPU ms
    spent answering ahead of time between steps (lab.page.view.prefetch_json, as the worker runs it)."""
    steps, idle = [], []
    for seed in (11, 12, 13):
        request = {"hash": f"seed={seed}", "controls": {"ctl:fleet.replicas": 4}, "live": True, "progress": {},
                   "memo": None}
        for value in (5, 6, 7, 8, 7, 6):
            text = json.dumps(request)
            c0 = cpu_ms()
            reply = json.loads(view.handle_json(text))
            steps.append(cpu_ms() - c0)
            if ahead:
                c0 = cpu_ms()
                more = view.prefetch_json(text)
                while more:
                    more = view.prefetch_json()
                idle.append(cpu_ms() - c0)
            request = {**request, "controls": {"ctl:fleet.replicas": value}, "hash": reply["hash"],
                       "progress": reply["progress"], "memo": reply["memo"]}
    return sorted(steps)[len(steps) // 2], max(steps), sum(idle) / max(1, len(idle))


if hasattr(view, "prefetch_json"):
    for ahead in (False, True):
        STORE.clear()
        med, worst, idle = drag(ahead)
        out.append(f"== a replicas slider dragged one step at a time, {'with' if ahead else 'without'} answers ahead of "
                   f"time: a step's CPU median {med:.1f} ms, worst {worst:.1f} ms"
                   + (f"; idle CPU spent ahead of time per step {idle:.1f} ms" if ahead else ""))
"\n".join(out)
`) + "\n");
} catch (err) {
  process.stderr.write(String(err.message ?? err).slice(-3000) + "\n");
  process.exit(1);
}
