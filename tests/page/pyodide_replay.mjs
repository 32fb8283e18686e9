// Replay a trace and export a scenario's traffic inside the npm `pyodide` package under Node.js, as the page
// will: the trace as text slices, progress reported. Prints one JSON line (read by test_trace_pyodide.py).
//   node pyodide_replay.mjs PYODIDE_DIR WHEEL TRACE
import { readFileSync } from "node:fs";
import { pathToFileURL } from "node:url";

const [pyodideDir, wheelPath, tracePath] = process.argv.slice(2);
const { loadPyodide } = await import(pathToFileURL(`${pyodideDir}/pyodide.mjs`).href);
const pyodide = await loadPyodide({ indexURL: `${pyodideDir}/` });
pyodide.unpackArchive(new Uint8Array(readFileSync(wheelPath)), "wheel");
pyodide.globals.set("trace_text", readFileSync(tracePath, "utf8"));
const out = pyodide.runPython(`
import json
from model import Scenario, generate, replay, trace_lines

def slices():  # what a page would read from a File, 64 KiB at a time
    for at in range(0, len(trace_text), 65536):
        yield trace_text[at:at + 65536]

seen = []
result = replay(Scenario().with_text({"fleet.replicas": "4", "router.kind": "cache_aware"}), slices,
                progress=lambda phase, n, read: seen.append([phase, n]))
exported = list(trace_lines(generate(Scenario().with_text({"duration_s": "30"})), 16))
json.dumps({"result": result.to_dict(), "records": [r.to_dict() for r in result.records], "progress": seen,
            "exported": exported})
`);
process.stdout.write(out + "\n");
