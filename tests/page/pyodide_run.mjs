// Run scenarios through the project's wheel inside the npm `pyodide` package under Node.js
// and print each result as helpers.everything() does, one line per scenario (read by test_pyodide.py).
//   node pyodide_run.mjs PYODIDE_DIR WHEEL SCENARIOS_JSON
import { readFileSync } from "node:fs";
import { pathToFileURL } from "node:url";

const [pyodideDir, wheelPath, scenariosPath] = process.argv.slice(2);
const { loadPyodide } = await import(pathToFileURL(`${pyodideDir}/pyodide.mjs`).href);
const pyodide = await loadPyodide({ indexURL: `${pyodideDir}/` });
pyodide.unpackArchive(new Uint8Array(readFileSync(wheelPath)), "wheel");
pyodide.globals.set("scenarios_json", readFileSync(scenariosPath, "utf8"));
const out = pyodide.runPython(`
import json, sys
from model import Scenario, simulate
from lab.page.view import handle
lines = [sys.version.split()[0]]
for text in json.loads(scenarios_json):
    result = simulate(Scenario().with_text(text))
    lines.append(json.dumps(result.to_dict(), sort_keys=True) + "".join(json.dumps(r.to_dict()) for r in result.records))
lines.append(json.dumps(handle({"hash": "fleet.replicas=3&router.kind=cache_aware"}), sort_keys=True))
"\\n".join(lines)
`);
process.stdout.write(out + "\n");
