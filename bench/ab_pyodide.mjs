// New setups' Pyodide CPU, for one version of the page's Python or several side by side (run by
// bench/ab_pyodide.py and bench/bench_page.py): every wheel in one Node process, each in a Pyodide of its own,
// given the same new setups (other seeds) in turn, the order rotating, each timed in CPU: the whole answer
// (`view.handle_json`) and, within it, its simulation (`view._simulated`: the traffic, the run and its
// measuring, the model's part). Prints one JSON line per setup kind:
// {"label", "cpu": [[ms of each answer] for each wheel, in the order given], "sim": [[ms of its simulation] ...]}.
//   node ab_pyodide.mjs PYODIDE_DIR SETUPS WHEEL [WHEEL...]
import { readFileSync } from "node:fs";
import { pathToFileURL } from "node:url";
const [pyodideDir, n, ...wheels] = process.argv.slice(2);  // n: new default setups (half as many with 16 replicas)
const { loadPyodide } = await import(pathToFileURL(`${pyodideDir}/pyodide.mjs`).href);
// the view's module as the wheel's revision names it (lab.page.view, or lab.view before the packages by seam),
// its simulation wrapped to add its CPU milliseconds to SIM: every revision measured has `view._simulated`
const SETUP = String.raw`
import json
from js import process
try:
    from lab.page import view
except ImportError:
    from lab import view

def _cpu_ms():
    used = process.cpuUsage()
    return (used.user + used.system) / 1000

SIM = []
_simulated = view._simulated

def _timed(scenario):
    start = _cpu_ms()
    try:
        return _simulated(scenario)
    finally:
        SIM.append(_cpu_ms() - start)

view._simulated = _timed
`;
async function make(w) {
  const p = await loadPyodide({ indexURL: `${pyodideDir}/` });
  p.unpackArchive(new Uint8Array(readFileSync(w)), "wheel");
  p.runPython(SETUP);
  return p;
}
const versions = [];
for (const w of wheels) versions.push(await make(w));
const cpu = () => { const u = process.cpuUsage(); return (u.user + u.system) / 1000; };
const rows = [["default", ""], ["16 CA", "fleet.replicas=16&router.kind=cache_aware&traffic.session_rate=8"]];
for (const [label, h] of rows) {
  for (const p of versions) p.runPython(`view.handle_json(json.dumps({"hash": ${JSON.stringify(h)}}))`);
  const k = label === "default" ? Number(n) : Math.max(6, Number(n) >> 1);
  const times = versions.map(() => []), sims = versions.map(() => []);
  for (let s = 2; s < 2 + k; s++) {
    const code = `SIM.clear(); view.handle_json(json.dumps({"hash": ${JSON.stringify([h, `seed=${s}`].filter(Boolean).join("&"))}}))`;
    for (let j = 0; j < versions.length; j++) {  // who goes first rotates with the seed
      const i = (j + s) % versions.length;
      const c = cpu();
      versions[i].runPython(code);
      times[i].push(cpu() - c);
      sims[i].push(versions[i].runPython("sum(SIM)"));
    }
  }
  console.log(JSON.stringify({ label, cpu: times, sim: sims }));
}
