// Build-time helper for `prefix-lab build` (lab/site/stdlib.py runs it): boot the pinned Pyodide under
// Node.js, unpack the project's wheel, exercise the page's view code, and write a standard-library
// zip holding only the modules that were imported, each compiled to .pyc by Pyodide's own Python
// (so the bytecode matches the interpreter that loads it). Prints one JSON line: module count and sizes.
//   node pyc_stdlib.mjs PYODIDE_DIR WHEEL OUT_ZIP
import { readFileSync, writeFileSync } from "node:fs";
import { pathToFileURL } from "node:url";

const [pyodideDir, wheelPath, outPath] = process.argv.slice(2);
const { loadPyodide } = await import(pathToFileURL(`${pyodideDir}/pyodide.mjs`).href);
const pyodide = await loadPyodide({ indexURL: `${pyodideDir}/` });
pyodide.unpackArchive(new Uint8Array(readFileSync(wheelPath)), "wheel");
const script = String.raw`
import importlib, json, re, sys

from missions import MISSIONS
from lab.page import view

# 1. What the page does: the default view, every mission chosen, serving mode, a bad request.
view.handle_json("{}")
for mission in MISSIONS:
    view.handle({"hash": "unlock=all", "action": {"type": "select_mission", "mission": mission.id}})
view.handle({"hash": "fleet.decode=true&router.kind=cache_aware&events=burst@60+30x3"})
view.handle({"hash": "fleet.replicas=zz&nonsense=1", "controls": {"ctl:fleet.replicas": 5}})
try:  # an error crossing into JavaScript is formatted by the traceback module
    raise ValueError("probe")
except ValueError:
    import traceback
    traceback.format_exc()

# 2. Every import written anywhere in the project's modules that ran (imports inside functions too).
ours = ("model", "missions", "lab")
for name, module in list(sys.modules.items()):
    path = getattr(module, "__file__", None) or ""
    if name.split(".")[0] not in ours or not path.endswith(".py"):
        continue
    source = open(path, encoding="utf-8").read()
    for plain, listed in re.findall(r"^[ \t]*(?:from[ \t]+([\w.]+)[ \t]+import|import[ \t]+([\w., \t]+))", source, re.M):
        for wanted in [plain] if plain else [n.split(" as ")[0].strip() for n in listed.split(",")]:
            if wanted and not wanted.startswith(".") and wanted.split(".")[0] not in ours:
                try:
                    importlib.import_module(wanted)
                except ImportError:
                    pass  # guarded imports (TYPE_CHECKING, optional speedups)

keep = [m for m in list(sys.modules.values()) if getattr(m, "__file__", None)]
import importlib.util, io, marshal, zipfile  # noqa: E402  (for writing the zip; shipped only if the page needs them)

# 3. Each imported module that came from the standard-library zip, compiled; package folders kept.
zip_path = next(p for p in sys.path if p.endswith(".zip"))
prefix = zip_path + "/"
stdlib = zipfile.ZipFile(zip_path)
shipped = set(stdlib.namelist())
entries = {}
for module in keep:
    path = module.__file__
    if not path.startswith(prefix) or not path.endswith(".py"):
        continue
    rel = path[len(prefix):]
    if rel not in shipped:
        continue  # frozen into the interpreter (importlib's bootstrap): nothing to ship
    source = stdlib.read(rel)
    code = compile(source, path, "exec", dont_inherit=True)
    # A hash-based, unchecked pyc: valid without its source and without a timestamp.
    header = importlib.util.MAGIC_NUMBER + (1).to_bytes(4, "little") + importlib.util.source_hash(source)
    entries[rel[:-3] + ".pyc"] = header + marshal.dumps(code)
buffer = io.BytesIO()
with zipfile.ZipFile(buffer, "w", zipfile.ZIP_STORED) as out:
    folders = sorted({"/".join(rel.split("/")[:i]) + "/" for rel in entries for i in range(1, rel.count("/") + 1)})
    for name in folders + sorted(entries):
        info = zipfile.ZipInfo(name, date_time=(2020, 1, 1, 0, 0, 0))
        info.external_attr = (0o40755 if name.endswith("/") else 0o644) << 16
        out.writestr(info, entries.get(name, b""))
open("/tmp/stdlib.zip", "wb").write(buffer.getvalue())
json.dumps({"modules": len(entries), "bytes": len(buffer.getvalue()), "python": sys.version.split()[0]})
`;
let summary;
try {
  summary = pyodide.runPython(script);
} catch (err) {  // Python's own message, not a page of minified Pyodide
  process.stderr.write(String(err.message ?? err).slice(-3000) + "\n");
  process.exit(1);
}
writeFileSync(outPath, pyodide.FS.readFile("/tmp/stdlib.zip"));
process.stdout.write(summary + "\n");
