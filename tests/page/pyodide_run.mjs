// Run the project's wheel inside the npm `pyodide` package under Node.js, booted once for all of
// test_pyodide.py: each scenario's result, printed as helpers.everything() does, one line a scenario; then the
// view's answer to one hash; then, on the last line, a replay of TRACE fed as text slices (as the page feeds a
// File, progress reported) and a scenario's traffic exported, as one JSON object.
//   node pyodide_run.mjs PYODIDE_DIR WHEEL SCENARIOS_JSON TRACE
import { readFileSync } from "node:fs";
import { pathToFileURL } from "node:url";

const [pyodideDir, wheelPath, scenariosPath, tracePath] = process.argv.slice(2);
const { loadPyodide } = await import(pathToFileURL(`${pyodideDir}/pyodide.mjs`).href);
const pyodide = await loadPyodide({ indexURL: `${pyodideDir}/` });
pyodide.unpackArchive(new Uint8Array(readFileSync(wheelPath)), "wheel");
pyodide.globals.set("scenarios_json", readFileSync(scenariosPath, "utf8"));
pyodide.globals.set("trace_text", readFileSync(tracePath, "utf8"));
const out = pyodide.runPython(`
import json, sys
from model import Scenario, generate, replay, simulate, trace_lines
from lab.page.view import handle
lines = [sys.version.split()[0]]
for text in json.loads(scenarios_json):
    result = simulate(Scenario().with_text(text))
    lines.append(json.dumps(result.to_dict(), sort_keys=True) + "".join(json.dumps(r.to_dict()) for r in result.records))
lines.append(json.dumps(handle({"hash": "fleet.replicas=3&router.kind=cache_aware"}), sort_keys=True))

def slices():  # what a page would read from a File, 64 KiB at a time
    for at in range(0, len(trace_text), 65536):
        yield trace_text[at:at + 65536]

seen = []
result = replay(Scenario().with_text({"fleet.replicas": "4", "router.kind": "cache_aware"}), slices,
                progress=lambda phase, n, read: seen.append([phase, n]))
exported = list(trace_lines(generate(Scenario().with_text({"duration_s": "30"})), 16))
lines.append(json.dumps({"result": result.to_dict(), "records": [r.to_dict() for r in result.records],
                         "progress": seen, "exported": exported}))
"\\n".join(lines)
`);
process.stdout.write(out + "\n");
