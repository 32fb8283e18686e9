// Build-time helper for `prefix-lab build` (lab/snapshot.py runs it): boot the site's own Pyodide
// folder under Node.js, unpack the site's wheel, import the page's view code, stamp the interpreter
// with the wheel's name and save Pyodide's memory snapshot. The browser worker restores it instead
// of booting (static/worker.js) and compares the stamp with the wheel it was told to load.
//
// A restored interpreter has imported nearly all it needs, so before the snapshot the standard
// library it sees is swapped for REST_ZIP: the modules of the folder's python_stdlib.zip that are not
// imported yet (the few a rare path imports later). The worker serves REST_ZIP when it restores,
// byte for byte the zip the snapshot was made with, and the full zip only to a normal boot.
// Prints one JSON line: the snapshot's size and how many modules the rest holds.
//   node snapshot.mjs PYODIDE_DIR WHEEL STAMP OUT REST_ZIP
import { readFileSync, writeFileSync } from "node:fs";
import { pathToFileURL } from "node:url";

const [pyodideDir, wheelPath, stamp, outPath, restPath] = process.argv.slice(2);
const { loadPyodide } = await import(pathToFileURL(`${pyodideDir}/pyodide.mjs`).href);
const pyodide = await loadPyodide({ indexURL: `${pyodideDir}/`, _makeSnapshot: true });
pyodide.unpackArchive(new Uint8Array(readFileSync(wheelPath)), "wheel");
let summary;
try {
  pyodide.globals.set("stamp", stamp);
  // No view is run: its garbage would only make the snapshot bigger. The files unpacked here are gone
  // after a restore; the worker unpacks the wheel again for anything the view imports later.
  summary = pyodide.runPython(String.raw`
import gc, io, json, sys, zipfile
import lab.view

PREFIX_LAB_STAMP = stamp
archive = next(p for p in sys.path if p.endswith(".zip"))
loaded = {m.__file__[len(archive) + 1:] for m in list(sys.modules.values())
          if (getattr(m, "__file__", None) or "").startswith(archive + "/")}
rest = io.BytesIO()
with zipfile.ZipFile(archive) as full, zipfile.ZipFile(rest, "w", zipfile.ZIP_STORED) as out:
    for info in full.infolist():
        if info.filename not in loaded:  # folders are kept: a later import walks them
            out.writestr(info, full.read(info))
    count = sum(1 for n in out.namelist() if not n.endswith("/"))
open(archive, "wb").write(rest.getvalue())
sys.path_importer_cache[archive].invalidate_caches()  # zipimport reads the new directory now, not after a restore
del stamp, archive, loaded, rest, full, out, info
gc.collect()
json.dumps({"rest_modules": count})
`);
} catch (err) {
  process.stderr.write(String(err.message ?? err).slice(-3000) + "\n");
  process.exit(1);
}
writeFileSync(restPath, pyodide.FS.readFile(pyodide.runPython("next(p for p in __import__('sys').path if p.endswith('.zip'))")));
const snapshot = pyodide.makeMemorySnapshot();
writeFileSync(outPath, snapshot);
process.stdout.write(JSON.stringify({ ...JSON.parse(summary), bytes: snapshot.length }) + "\n");
