// Build-time helper for `prefix-lab build` (lab/site/snapshot.py runs it): boot the site's own Pyodide
// folder under Node.js, unpack the site's wheel, import the page's view code, stamp the interpreter
// with the wheel's name and save Pyodide's memory snapshot. The browser worker restores it instead
// of booting (static/worker.js) and compares the stamp with the wheel it was told to load.
//
// A restored interpreter has imported nearly all it needs, so before the snapshot the standard
// library it sees is swapped for REST_ZIP: the modules of the folder's python_stdlib.zip that are not
// imported yet (the few a rare path imports later). The worker serves REST_ZIP when it restores,
// byte for byte the zip the snapshot was made with, and the full zip only to a normal boot.
// Then the runtime's memory at the moment a restore writes the heap is captured, twice, into OUT.runtime:
// lab/site/snapshot.py leaves out of the shipped file the snapshot's pages the runtime holds already.
// Prints one JSON line: the snapshot's size, how many modules the rest holds and how many free bytes were zeroed.
//   node snapshot.mjs PYODIDE_DIR WHEEL STAMP OUT REST_ZIP
import { readFileSync, writeFileSync } from "node:fs";
import { pathToFileURL } from "node:url";

const [pyodideDir, wheelPath, stamp, outPath, restPath] = process.argv.slice(2);

// The heap's free chunks still hold what the imports left there (file contents read, code unmarshalled,
// objects since freed): bytes nothing reads again but gzip has to carry, about 1.7 MB of them. Pyodide's
// CPython is built without pymalloc, so every Python object is a chunk of Emscripten's dlmalloc, laid
// end to end from __heap_base to the break. Walk them and zero each free chunk past its free-list links
// (fd, bk and the tree links of a large chunk: 24 bytes after the 8-byte header); the chunk's size,
// which the next chunk's header repeats, stays. The walk must agree with dlmalloc's own count of free
// chunks (mallinfo's ordblks) before a byte is written; if it does not, nothing is zeroed.
// Returns the number of bytes zeroed.
function zeroFreeMemory(M) {
  const heap = M.HEAPU8, words = M.HEAPU32;
  const info = M._malloc(64);  // struct mallinfo: 10 words; this chunk is counted as in use
  M._mallinfo(info);
  const [freeChunks, topSize] = [words[(info >>> 2) + 1], words[(info >>> 2) + 9]];  // ordblks, keepcost
  const end = words[M._emscripten_get_sbrk_ptr() >>> 2];
  const found = [];
  let p = M.___heap_base;
  while (p + 8 <= end) {
    const head = words[(p + 4) >>> 2], size = head & ~7;
    if (size < 16 || p + size > end) break;  // the fencepost after the top chunk, or not a chunk at all
    if (!(head & 2)) found.push([p, size]);  // CINUSE clear: free
    p += size;
    if (!(head & 2) && size === topSize && end - p < 64) break;  // the top chunk; past it, dlmalloc's own record
  }
  let zeroed = 0;
  if (found.length === freeChunks && end - p < 64) {
    for (const [chunk, size] of found) {
      if (size > 32) {
        heap.fill(0, chunk + 32, chunk + size);
        zeroed += size - 32;
      }
    }
  } else {
    process.stderr.write(`snapshot: the heap walk found ${found.length} free chunks, dlmalloc counts ${freeChunks}: nothing zeroed\n`);
  }
  M._free(info);
  return zeroed;
}

const { loadPyodide } = await import(pathToFileURL(`${pyodideDir}/pyodide.mjs`).href);
const pyodide = await loadPyodide({ indexURL: `${pyodideDir}/`, _makeSnapshot: true });
pyodide.unpackArchive(new Uint8Array(readFileSync(wheelPath)), "wheel");
let summary;
try {
  pyodide.globals.set("stamp", stamp);
  // The page's first request is answered here and only the answer kept (lab.page.view.keep_first_answer): the
  // run behind it, its trees and drawings would make the snapshot bigger. The files unpacked here are gone after a
  // restore; the worker makes the wheel importable again as a zip (lab.page.wheelzip) for anything imported later.
  summary = pyodide.runPython(String.raw`
import gc, io, json, sys, zipfile
import lab.page.view
import lab.page.wheelzip  # the worker reads the wheel as a zip with it after a restore

lab.page.view.keep_first_answer(json.dumps({"hash": "", "progress": {}, "memo": {}}))  # the page's first request (bridge.js pump)

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
const zeroed = zeroFreeMemory(pyodide._module);
const snapshot = pyodide.makeMemorySnapshot();
writeFileSync(outPath, snapshot);

// The runtime's memory when a restore of `snapshot` begins, started the way static/worker.js starts it (the
// same standard library, a heap of the snapshot's size): captured where Pyodide would write the heap, and the
// restore stopped there.
async function runtimeMemory() {
  const { default: createModule } = await import(pathToFileURL(`${pyodideDir}/pyodide.asm.mjs`).href);
  let memory = null;
  const stop = new Error("captured");
  await loadPyodide({
    indexURL: `${pyodideDir}/`, stdLibURL: restPath, _loadSnapshot: new Uint8Array(snapshot.length),
    createPyodideModule: async (settings) => {
      const module = await createModule(settings);
      module.API.restoreSnapshot = () => {
        memory = module.HEAPU8.slice();
        throw stop;
      };
      return module;
    },
  }).catch((err) => {
    if (err !== stop) throw err;
  });
  return memory;
}
const first = await runtimeMemory(), second = await runtimeMemory();
writeFileSync(`${outPath}.runtime`, Buffer.concat([first, second]));
process.stdout.write(JSON.stringify({ ...JSON.parse(summary), bytes: snapshot.length, zeroed }) + "\n");
