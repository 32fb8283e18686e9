// New setups' Pyodide CPU, for one version of the page's Python or several side by side (run by
// bench/ab_pyodide.py and bench/bench_page.py): every wheel in one Node process, each in a Pyodide of its own,
// given the same new setups (other seeds) in turn, the order rotating, each timed in CPU. Prints one JSON line
// per setup kind: {"label", "cpu": [[ms of each setup] for each wheel, in the order given]}.
//   node ab_pyodide.mjs PYODIDE_DIR SETUPS WHEEL [WHEEL...]
import { readFileSync } from "node:fs";
import { pathToFileURL } from "node:url";
const [pyodideDir, n, ...wheels] = process.argv.slice(2);  // n: new default setups (half as many with 16 replicas)
const { loadPyodide } = await import(pathToFileURL(`${pyodideDir}/pyodide.mjs`).href);
async function make(w) {
  const p = await loadPyodide({ indexURL: `${pyodideDir}/` });
  p.unpackArchive(new Uint8Array(readFileSync(w)), "wheel");
  p.runPython("import json\nfrom lab.page import view");
  return p;
}
const versions = [];
for (const w of wheels) versions.push(await make(w));
const cpu = () => { const u = process.cpuUsage(); return (u.user + u.system) / 1000; };
const rows = [["default", ""], ["16 CA", "fleet.replicas=16&router.kind=cache_aware&traffic.session_rate=8"]];
for (const [label, h] of rows) {
  for (const p of versions) p.runPython(`view.handle_json(json.dumps({"hash": ${JSON.stringify(h)}}))`);
  const k = label === "default" ? Number(n) : Math.max(6, Number(n) >> 1);
  const times = versions.map(() => []);
  for (let s = 2; s < 2 + k; s++) {
    const code = `view.handle_json(json.dumps({"hash": ${JSON.stringify([h, `seed=${s}`].filter(Boolean).join("&"))}}))`;
    for (let j = 0; j < versions.length; j++) {  // who goes first rotates with the seed
      const i = (j + s) % versions.length;
      const c = cpu();
      versions[i].runPython(code);
      times[i].push(cpu() - c);
    }
  }
  console.log(JSON.stringify({ label, cpu: times }));
}
