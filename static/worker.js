// prefix-lab worker: boots the Pyodide core from this site, loads the project's own
// pure-Python wheel (model, missions, lab view code) and answers view requests with
// lab.page.view.handle_json. Nothing is fetched from any other origin; no package is
// installed from an index (the wheel is unpacked or read as a zip, not resolved).
//
// Two ways to boot. With a memory snapshot (made by the build, lab/site/snapshot.py), Pyodide
// restores an interpreter that has already imported the view code: well under a second.
// Without one, or when the snapshot cannot be used (the file missing or damaged, made for
// another wheel, a restore that throws or hangs), it boots normally; a wasm that cannot be
// loaded fails the boot either way, as a normal boot would fail on it too. Either way the
// wheel's modules can be imported later: a normal boot unpacks the wheel, a restored
// interpreter reads it as a zip (mountWheel). `self.prefixLabBoot` says which way it went
// and why (read by tests and bench/bench_page.py).
//
// The same file runs as a dedicated Worker (one page, one runtime: the full lab) or as a
// SharedWorker (the embeds of one article share one runtime, see static/boot.js). Shared, it
// boots Pyodide once and answers each frame on that frame's own port: a request carries the
// frame's whole state (its hash, progress and memo), lab.page.view.handle keeps nothing between
// requests but a memo of runs, and the trace files a frame gives are kept for that frame alone.
// Requests from several frames are answered one at a time, in the order they arrive.

// The build renames the Pyodide folder by its content hash and writes that name here (both
// lines), and in place of null the snapshot's name, its size as served (in page-map form) and
// the size of Pyodide's snapshot it holds (lab/site/snapshot.py).
const PYODIDE = "./pyodide/";
const SNAPSHOT = null;
const SNAPSHOT_BYTES = null;
const SNAPSHOT_IMAGE_BYTES = null;
// The snapshot's download starts with the worker, beside the download of Pyodide's own scripts, which are
// imported here rather than statically so that nothing waits for them before asking for the snapshot.
// loadPyodide would import the runtime's script (pyodide.asm.mjs, 1.2 MB) only once its own is in: the
// same URL, imported here at once, is one module either way.
const snapshotResponse = SNAPSHOT ? fetch(new URL(SNAPSHOT, import.meta.url)) : null;
snapshotResponse?.catch(() => {});  // awaited in restore(); a failure there means a normal boot
const pyodideScript = import("./pyodide/pyodide.mjs");
pyodideScript.catch(() => {});  // awaited in boot(); a failure there is the boot's
const runtimeScript = import(new URL("pyodide.asm.mjs", new URL(PYODIDE, import.meta.url)).href);
runtimeScript.catch(() => {});  // awaited in startRuntime(); loadPyodide reports a failure on a normal boot
// Pyodide's wasm (3.5 MB gzipped), on the way to the first answer once the runtime starts beside the
// snapshot's download, is asked for here too rather than when loadPyodide gets to it; loadPyodide is handed
// this response (withEarlyWasm).
const WASM_URL = new URL("pyodide.asm.wasm", new URL(PYODIDE, import.meta.url)).href;
let wasmResponse = fetch(WASM_URL);
wasmResponse.catch(() => {});  // Pyodide reports a failed fetch of its wasm (see console.warn below)
const REST_ZIP = "python_stdlib_rest.zip";  // the standard library the snapshot was made with
const RESTORE_LIMIT_MS = 15_000;  // a restore that has not ended by then has failed

let view = null;
let booting = null;  // the boot, once asked for: resolves to what "ready" says, rejects with why it failed
let failBoot = null;  // ends the boot as failed (for failures Pyodide reports only on the side)
let restoring = null;  // while a restore is tried: rejects it (Pyodide reports some failures only as warnings)
// route: "snapshot" or "normal"; fallback: why the snapshot was not used; restoreMs: from the start to a
// restored, checked interpreter; fetchMs: the snapshot's download and gunzip; runtimeMs: from the start to
// Pyodide's runtime started, its wasm compiled and standard library installed (beside that download);
// heapMs: laying the snapshot's pages into the heap; checkMs: its sha256, computed beside the restore;
// checkWaitMs: how long the restored interpreter then waited for that check; wheel: how the wheel's modules
// were made importable ("unpacked" or read as a "zip"); wheelMs: how long that took, once it was fetched.
self.prefixLabBoot = {
  route: null, fallback: null, restoreMs: null, fetchMs: null, runtimeMs: null, heapMs: null, checkMs: null,
  checkWaitMs: null, wheel: null, wheelMs: null,
};

// This runtime, as each frame it serves is told in "ready": an id (so a page can count the runtimes
// its frames use), whether it is shared, and how many frames it has served so far.
const SHARED = typeof SharedWorkerGlobalScope !== "undefined" && self instanceof SharedWorkerGlobalScope;
const runtime = { id: Math.random().toString(36).slice(2, 10), shared: SHARED, frames: 0 };

const fileReader = typeof FileReaderSync === "function" ? new FileReaderSync() : null;

// A file as lab.page.tracepage.Source: its name and size, bytes by range, and progress for the frame's bar.
function traceSource(file, port) {
  return {
    name: file.name,
    size: file.size,
    read: (start, end) => new Uint8Array(fileReader.readAsArrayBuffer(file.slice(start, end))),
    progress: (phase, requests, read) => port.postMessage({ type: "progress", phase, requests, read, size: file.size }),
  };
}

// One readable line for the page (a Python error's last line, clipped); the whole text for the console.
function failure(err, phase) {
  const detail = String(err?.message ?? err);
  const lines = detail.split("\n").map((line) => line.trim()).filter(Boolean);
  const message = (lines[lines.length - 1] ?? "unknown error").slice(0, 200);
  return { type: "error", phase, message, detail };
}

// The snapshot's bytes, their page runs and checksum (pageRuns), once fetched and found the right size and form;
// rejects with why they cannot be used.
async function fetchSnapshot(response, t0) {
  const bytes = new Uint8Array(await response.arrayBuffer());
  self.prefixLabBoot.fetchMs = performance.now() - t0;
  if (bytes.length !== SNAPSHOT_BYTES) throw new Error(`the snapshot is damaged (${bytes.length} bytes, not ${SNAPSHOT_BYTES})`);
  return { bytes, ...pageRuns(bytes) };
}

// The snapshot as the build ships it (lab/site/snapshot.py's pack): MAGIC; the length of Pyodide's snapshot, the
// page size and a checksum of the pages the runtime holds (uint32, little-endian); a map of the pages stored
// in the file, then a map of the pages the runtime's memory holds already (a bit per page each; a page in
// neither is all zeros); then the stored pages in order. Returns {runs, sum}: runs of pages, [{start, end,
// from}], where the bytes start..end of Pyodide's snapshot are at `from` in the file, or are zeros (ZEROS),
// or are in the runtime's memory already (HELD). Throws unless the maps account for every byte of the file
// and the snapshot they describe has the size the build wrote here: Pyodide sizes its heap from that, and a
// heap over its fixed 30 MiB fails in ways a normal boot in the same worker may not survive, so nothing
// reaches Pyodide before this is checked.
const MAGIC = "PLSNAPv2";
const HEAD = MAGIC.length + 12;
const ZEROS = -1, HELD = -2;
function pageRuns(bytes) {
  const damaged = (why) => new Error(`the snapshot is damaged (${why})`);
  if (String.fromCharCode(...bytes.subarray(0, MAGIC.length)) !== MAGIC) throw damaged("not in page-map form");
  const fields = new DataView(bytes.buffer, bytes.byteOffset + MAGIC.length, 12);
  const length = fields.getUint32(0, true), page = fields.getUint32(4, true), sum = fields.getUint32(8, true);
  if (length !== SNAPSHOT_IMAGE_BYTES) throw damaged(`it holds a snapshot of ${length} bytes, not ${SNAPSHOT_IMAGE_BYTES}`);
  if (page < 64 || page % 16) throw damaged(`a page of ${page} bytes`);
  const pages = Math.ceil(length / page), size = Math.ceil(pages / 8);
  const stored = bytes.subarray(HEAD, HEAD + size), held = bytes.subarray(HEAD + size, HEAD + 2 * size);
  const runs = [];
  let from = HEAD + 2 * size;
  for (let i = 0; i < pages; i++) {
    const start = i * page, end = Math.min(start + page, length);
    const kind = (stored[i >> 3] >> (i & 7)) & 1 ? from : (held[i >> 3] >> (i & 7)) & 1 ? HELD : ZEROS;
    const last = runs[runs.length - 1];
    if (last && (last.from >= 0 ? kind >= 0 : last.from === kind)) last.end = end;
    else runs.push({ start, end, from: kind });
    if (kind >= 0) from += end - start;
  }
  if (from !== bytes.length) throw damaged(`its page maps account for ${from} of its ${bytes.length} bytes`);
  if (runs[0].from < 0) throw damaged("its first page, Pyodide's header, is missing");
  return { runs, sum };
}

// lab/site/snapshot.py's runtime_sum: FNV-1a over the 32-bit words of the pages the runtime holds, in order.
function runtimeSum(heap, runs, head) {
  let h = 2166136261;
  for (const { start, end, from } of runs) {
    if (from !== HELD) continue;
    const words = new Uint32Array(heap.buffer, heap.byteOffset + start - head, (end - start) / 4);
    for (let i = 0; i < words.length; i++) h = Math.imul(h ^ words[i], 16777619);
  }
  return h >>> 0;
}

// Resolves if the bytes are the ones the build made: the snapshot's name holds the start of their sha256
// (crypto.subtle exists only in secure contexts: on a room's plain-http address the size is checked alone).
async function checkSnapshot(bytes) {
  const t0 = performance.now();
  if (self.crypto?.subtle) {
    const digest = Array.from(new Uint8Array(await crypto.subtle.digest("SHA-256", bytes)), (b) => b.toString(16).padStart(2, "0")).join("");
    if (!SNAPSHOT.includes(`.${digest.slice(0, 16)}.`)) throw new Error("the snapshot is damaged (its sha256 is not its name's)");
  }
  self.prefixLabBoot.checkMs = performance.now() - t0;
}

// Pyodide sizes its heap from the snapshot, so given the snapshot's bytes it would start its runtime
// (compile the wasm, run the runtime's setup, install the standard library) only once they are all in.
// It is handed an empty stand-in of the right size instead, and the runtime starts while the snapshot
// downloads; when Pyodide comes to restore the heap, the real bytes are laid in (layIn).
async function startRuntime(settings, snapshot, t0) {
  const { default: createModule } = await runtimeScript;
  const module = await createModule(settings);
  self.prefixLabBoot.runtimeMs = performance.now() - t0;
  const pages = await snapshot;
  const restoreHeader = module.API.restoreSnapshot;
  module.API.restoreSnapshot = () => layIn(module, restoreHeader, pages);
  return module;
}

// Pyodide's own restore checks the snapshot's header (its magic number and the build id of the runtime it
// was made by), reads the state of Pyodide's JavaScript side from it and copies the heap that follows: it
// is given the header alone, and the heap is then written run by run, stored pages copied, zero pages
// zeroed; the pages the runtime holds already are left as they are, once their checksum agrees.
function layIn(module, restoreHeader, { bytes, runs, sum }) {
  const t0 = performance.now();
  const first = runs[0];
  const head = new DataView(bytes.buffer, bytes.byteOffset + first.from).getUint32(4, true);  // where the heap starts
  if (head > first.end || head % 16) throw new Error(`the snapshot is damaged (a header of ${head} bytes)`);
  const heap = module.HEAPU8;
  if (runtimeSum(heap, runs, head) !== sum) throw new Error("the runtime's memory is not the one the snapshot was made against");
  const state = restoreHeader(bytes.slice(first.from, first.from + head));
  for (const { start, end, from } of runs) {
    const skip = Math.max(head - start, 0);  // the header's bytes in this run: not the heap's
    if (skip >= end - start || from === HELD) continue;
    if (from === ZEROS) heap.fill(0, start + skip - head, end - head);
    else heap.set(bytes.subarray(from + skip, from + end - start), start + skip - head);
  }
  self.prefixLabBoot.heapMs = performance.now() - t0;
  return state;
}

// The sha256 is computed beside the restore and awaited before the interpreter is used: a restore of
// damaged bytes that fails or hangs meanwhile is put down to the bytes, not to the wasm.
// While it runs, Pyodide's own console errors (a restore of damaged bytes may crash it, "fatal error") are
// logged as info: the boot falls back and says why (prefixLabBoot.fallback), and a wasm at fault is thrown.
async function restore(indexURL, wheelUrl) {
  const consoleError = console.error;
  console.error = (...args) => console.info("prefix-lab worker, restoring the snapshot:", ...args);
  try {
    return await restoreSnapshot(indexURL, wheelUrl);
  } finally {
    console.error = consoleError;
  }
}

async function restoreSnapshot(indexURL, wheelUrl) {
  const t0 = performance.now();
  // Its headers first: when the snapshot is missing, Pyodide has fetched nothing yet that a normal boot
  // would fetch again.
  const response = await snapshotResponse;
  if (!response.ok) throw new Error(`the snapshot is missing (HTTP ${response.status})`);
  const snapshot = fetchSnapshot(response, t0);  // read at once: an unread body stalls its download
  snapshot.catch(() => {});  // awaited in startRuntime and below
  const checked = snapshot.then(({ bytes }) => checkSnapshot(bytes));
  checked.catch(() => {});  // awaited below
  const { loadPyodide } = await pyodideScript;
  const pyodide = await new Promise((resolve, reject) => {
    restoring = (reason) => checked.then(() => reject({ wasm: reason }), reject);  // the wasm's fault: see boot()
    checked.catch(reject);
    snapshot.then(() => setTimeout(() => reject(new Error(`restoring took over ${RESTORE_LIMIT_MS / 1000} s`)), RESTORE_LIMIT_MS),
      () => {});  // timed from the bytes' arrival: a slow download is not a hung restore
    withEarlyWasm(loadPyodide, {
      indexURL, stdLibURL: indexURL + REST_ZIP,
      _loadSnapshot: new Uint8Array(SNAPSHOT_IMAGE_BYTES),  // the stand-in (startRuntime): zeros, never read
      createPyodideModule: (settings) => startRuntime(settings, snapshot, t0),
    }).then(resolve, (err) => checked.then(() => reject(err), reject));  // damaged bytes explain any failure
  }).finally(() => { restoring = null; });
  const restored = performance.now();
  await checked;
  self.prefixLabBoot.checkWaitMs = performance.now() - restored;
  delete pyodide._api.config._loadSnapshot;  // Pyodide would keep the stand-in's 30 MB alive
  const made = pyodide.globals.get("PREFIX_LAB_STAMP");
  const want = new URL(wheelUrl).pathname.split("/").pop();
  if (made !== want) throw new Error(`the snapshot was made for ${made ?? "no wheel"}, the page loads ${want}`);
  self.prefixLabBoot.restoreMs = performance.now() - t0;
  return pyodide;
}

async function boot(wheelUrl) {
  const t0 = performance.now();
  const indexURL = new URL(PYODIDE, import.meta.url).href;
  const wheel = fetch(wheelUrl);
  wheel.catch(() => {});  // awaited below; a failure there is the boot's
  let pyodide = null;
  if (SNAPSHOT) {
    try {
      pyodide = await restore(indexURL, wheelUrl);
      self.prefixLabBoot.route = "snapshot";
    } catch (err) {
      if (err?.wasm !== undefined) throw err.wasm;  // a normal boot would fail the same way: say so now
      self.prefixLabBoot.fallback = String(err?.message ?? err).split("\n")[0].slice(0, 200);
      console.info("prefix-lab worker: booting without the snapshot:", self.prefixLabBoot.fallback);
    }
  }
  if (!pyodide) {
    const { loadPyodide } = await pyodideScript;
    pyodide = await withEarlyWasm(loadPyodide, { indexURL });
    self.prefixLabBoot.route = "normal";
  }
  const response = await wheel;
  if (!response.ok) throw new Error(`could not fetch ${wheelUrl}: HTTP ${response.status}`);
  const archive = new Uint8Array(await response.arrayBuffer());
  const t1 = performance.now();
  if (self.prefixLabBoot.route === "snapshot") self.prefixLabBoot.wheel = mountWheel(pyodide, archive);
  else {
    pyodide.unpackArchive(archive, "wheel");
    self.prefixLabBoot.wheel = "unpacked";
  }
  self.prefixLabBoot.wheelMs = performance.now() - t1;
  view = pyodide.pyimport("lab.page.view");
  return { bootMs: performance.now() - t0, route: self.prefixLabBoot.route };
}

// A restored interpreter has imported the view code from files the snapshot does not hold (Pyodide's file
// system is not in the heap), so a module imported later would not be found. Unpacking the wheel again
// (68 files) took 80-100 ms on the way to the first answer; instead the wheel is written as one file and
// read as a zip (lab.page.wheelzip, imported by the snapshot). Returns how the wheel was made importable.
const WHEEL_FILE = "/lib/prefix_lab.whl";
function mountWheel(pyodide, archive) {
  pyodide.FS.writeFile(WHEEL_FILE, archive);
  let wheelzip = null;
  try {
    wheelzip = pyodide.pyimport("lab.page.wheelzip");
    if (wheelzip.mount(WHEEL_FILE) > 0) return "zip";
  } catch (err) {
    console.info("prefix-lab worker: unpacking the wheel, it cannot be read as a zip:", String(err?.message ?? err).slice(-200));
  } finally {
    wheelzip?.destroy();
  }
  pyodide.unpackArchive(archive, "wheel");
  return "unpacked";
}

// loadPyodide(options), given the wasm's response fetched above for its own fetch of that URL: the first
// loadPyodide takes it, once, and any other request goes to fetch as it is.
function withEarlyWasm(loadPyodide, options) {
  const plainFetch = self.fetch;
  if (!wasmResponse) return loadPyodide(options);
  self.fetch = (input, init) => {
    if (wasmResponse && String(input instanceof Request ? input.url : input) === WASM_URL) {
      const response = wasmResponse;
      wasmResponse = null;
      self.fetch = plainFetch;
      return response;
    }
    return plainFetch.call(self, input, init);
  };
  return loadPyodide(options).finally(() => { self.fetch = plainFetch; });
}

function startBoot(wheelUrl) {
  return new Promise((resolve, reject) => {
    failBoot = reject;
    boot(wheelUrl).then(resolve, reject);
  });
}

// Pyodide loses some failures while it boots (a wasm that is missing, cut or of the wrong type ends
// in a rejected promise nobody awaits): while booting, any of them is the boot's failure. While a
// snapshot is restored too: they come from the wasm, which a normal boot would load the same way.
self.addEventListener("unhandledrejection", (event) => {
  if (restoring) restoring(event.reason);
  else if (!view && failBoot) failBoot(event.reason);
});

// A wasm file that is cut short, served with the wrong type or not fetched at all does not even reject:
// Pyodide logs "wasm instantiation failed!", then the cause, and waits forever. While booting, that
// cause is the boot's failure. (The snapshot's download runs beside the wasm's, so a failed wasm fetch
// may well be seen here first, not as an unhandled rejection.)
const warn = console.warn;
let wasmFailed = false;
console.warn = (...args) => {
  warn(...args);
  if (view) return;
  if (String(args[0]).includes("wasm instantiation failed")) {
    wasmFailed = true;
    return;
  }
  if (!wasmFailed) return;
  wasmFailed = false;
  const cause = String(args[0]?.message ?? args[0]);
  const err = new Error(cause.includes("Failed to fetch")
    ? `its WebAssembly file (pyodide/pyodide.asm.wasm) could not be fetched (${cause})`
    : "its WebAssembly file (pyodide/pyodide.asm.wasm) is damaged or served with the wrong type");
  if (restoring) restoring(err);
  else if (failBoot) failBoot(err);
};

// One frame's side of the conversation: `port` is the worker itself (dedicated) or the frame's
// MessagePort (shared). Trace files, read here in slices and never sent anywhere, are the frame's own:
// "user" (the one the person chose) and "mission:<id>" (a mission's traffic, fetched from the site).
function serve(port) {
  const files = new Map();
  const fileSources = { get: (key) => (files.has(key) && fileReader ? traceSource(files.get(key), port) : undefined) };
  port.onmessage = (event) => {
    const msg = event.data;
    if (msg.type === "boot") {
      booting ??= startBoot(msg.wheel);
      booting.then((info) => port.postMessage({ type: "ready", ...info, runtime: { ...runtime, frames: ++runtime.frames } }),
        (err) => port.postMessage(failure(err, "boot")));
      return;
    }
    if (msg.type === "trace") {
      files.set(msg.key, msg.file);
      return;
    }
    if (msg.type === "ahead") {  // the page computes ahead on helper workers (static/scheduler.mjs): this one does not
      warmAhead = Boolean(msg.warm);
      return;
    }
    if (msg.type === "bye") {  // the frame gave up on this worker (it has one of its own now)
      files.clear();
      port.close();
      return;
    }
    if (booting) answer(port, msg, fileSources);
  };
}

let warming = 0;  // counts view requests: a chain of answers ahead of time runs until the next one comes
let warmAhead = true;  // false once the page says its helper workers compute ahead (the "ahead" message)
// Answers ahead of time only where a new setup is quick to simulate: a request that comes while one is being
// worked out waits for it, and 16 replicas take about 350 ms. `setupMs`: the last answer that was not
// remembered (one over REMEMBERED_MS), the cost of a setup like the page's now.
const WARM_LIMIT_MS = 120;
const REMEMBERED_MS = 20;
let setupMs = 0;

// A view request, answered once the boot has ended (a failed boot has told the frame already).
// Then, in idle time, the answers a slider moved one step further would get (lab.page.view.prefetch_json), unless
// the page has said it computes those on helper workers ("ahead").
async function answer(port, msg, fileSources) {
  if (msg.type !== "view") return;
  const chain = ++warming;
  try {
    await booting;
  } catch {
    return;
  }
  const t0 = performance.now();
  const text = JSON.stringify(msg.request);
  try {
    const result = JSON.parse(view.handle_json(text, fileSources));
    const ms = performance.now() - t0;
    if (ms > REMEMBERED_MS) setupMs = ms;
    port.postMessage({ type: "view", id: msg.id, view: result, ms, at: performance.timeOrigin + performance.now() });
  } catch (err) {
    port.postMessage({ ...failure(err, "view"), id: msg.id });
    return;
  }
  if (warmAhead && setupMs <= WARM_LIMIT_MS) warm(chain, fileSources, text);
}

// Answers ahead of time, one per task, so that a request arriving meanwhile waits for one at most: its
// message is handled between two of them, and its arrival ends the chain (its own answer plans anew).
// The first call plans from the request just answered (later ones pass no text: `undefined` reaches Python
// as None, where `null` would not); a failure ends the chain, the page never sees it.
function warm(chain, fileSources, text = undefined) {
  if (chain !== warming) return;
  try {
    if (view.prefetch_json(text, fileSources)) setTimeout(() => warm(chain, fileSources), 0);
  } catch (err) {
    console.info("prefix-lab worker: an answer ahead of time failed:", String(err?.message ?? err).slice(-200));
  }
}

// A worker named for its wheel (static/boot.js) boots at once, not when the page's "boot" message comes:
// that message reaches a worker whose script was still loading only when the page's thread is free. The
// message is still what each frame is answered "ready" on (serve).
const NAMED = "prefix-lab ";
if (self.name?.startsWith(NAMED)) {
  booting = startBoot(self.name.slice(NAMED.length));
  booting.catch(() => {});  // each frame is told of a failure on its own port
}

if (SHARED) self.onconnect = (event) => serve(event.ports[0]);
else serve(self);
