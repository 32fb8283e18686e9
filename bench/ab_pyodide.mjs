// Two versions of the page's Python side by side under Pyodide (run by bench/ab_pyodide.py): both wheels in
// one Node process, given the same new setups in turn (which goes first alternates), each timed in CPU.
//   node ab_pyodide.mjs PYODIDE_DIR BEFORE_WHEEL AFTER_WHEEL SETUPS
import { readFileSync } from "node:fs";
import { pathToFileURL } from "node:url";
const [pyodideDir, wa, wb, n] = process.argv.slice(2);  // n: new default setups (half as many with 16 replicas)
const { loadPyodide } = await import(pathToFileURL(`${pyodideDir}/pyodide.mjs`).href);
async function make(w) {
  const p = await loadPyodide({ indexURL: `${pyodideDir}/` });
  p.unpackArchive(new Uint8Array(readFileSync(w)), "wheel");
  p.runPython("import json\nfrom lab.page import view");
  return p;
}
const A = await make(wa), B = await make(wb);
const cpu = () => { const u = process.cpuUsage(); return (u.user + u.system) / 1000; };
const rows = [["default", ""], ["16 CA", "fleet.replicas=16&router.kind=cache_aware&traffic.session_rate=8"]];
for (const [label, h] of rows) {
  for (const p of [A, B]) p.runPython(`view.handle_json(json.dumps({"hash": ${JSON.stringify(h)}}))`);
  const k = label === "default" ? Number(n) : Math.max(6, Number(n) >> 1);
  const ta = [], tb = [], ratio = [];
  for (let s = 2; s < 2 + k; s++) {
    const code = `view.handle_json(json.dumps({"hash": ${JSON.stringify([h, `seed=${s}`].filter(Boolean).join("&"))}}))`;
    const order = s % 2 ? [A, B] : [B, A];
    const got = new Map();
    for (const p of order) { const c = cpu(); p.runPython(code); got.set(p, cpu() - c); }
    ta.push(got.get(A)); tb.push(got.get(B)); ratio.push(got.get(B) / got.get(A));
  }
  const med = (xs) => { const s = [...xs].sort((a, b) => a - b); return s[s.length >> 1]; };
  console.log(`${label}: a new setup's CPU before ${med(ta).toFixed(1)} ms, after ${med(tb).toFixed(1)} ms (medians); ` +
              `after/before, the median of each setup's ratio, ${med(ratio).toFixed(3)} (${k} setups)`);
}
