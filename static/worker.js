// prefix-lab worker: boots the Pyodide core from this site, unpacks the project's own
// pure-Python wheel (model, missions, lab view code) and answers view requests with
// lab.view.handle_json. Nothing is fetched from any other origin; no package is
// installed from an index (the wheel is unpacked, not resolved).
//
// Two ways to boot. With a memory snapshot (made by the build, lab/snapshot.py), Pyodide
// restores an interpreter that has already imported the view code: well under a second.
// Without one, or when the snapshot cannot be used (the file missing or damaged, made for
// another wheel, a restore that throws or hangs), it boots normally; a wasm that cannot be
// loaded fails the boot either way, as a normal boot would fail on it too. Either way the
// wheel is unpacked, so anything imported later is found. `self.prefixLabBoot` says which
// way it went and why (read by tests and bench/bench_page.py).

// The build renames the Pyodide folder by its content hash and writes that name here (both
// lines), and the snapshot's name and size in place of null.
import { loadPyodide } from "./pyodide/pyodide.mjs";
const PYODIDE = "./pyodide/";
const SNAPSHOT = null;
const SNAPSHOT_BYTES = null;
const REST_ZIP = "python_stdlib_rest.zip";  // the standard library the snapshot was made with
const RESTORE_LIMIT_MS = 15_000;  // a restore that has not ended by then has failed

let view = null;
let booting = null;
let restoring = null;  // while a restore is tried: rejects it (Pyodide reports some failures only as warnings)
// route: "snapshot" or "normal"; fallback: why the snapshot was not used; restoreMs: fetch + check + restore,
// of which fetchMs (download and gunzip) and checkMs (size and sha256).
self.prefixLabBoot = { route: null, fallback: null, restoreMs: null, fetchMs: null, checkMs: null };

// Trace files, read here in slices and never sent anywhere: "user" (the one the person chose) and
// "mission:<id>" (a mission's traffic, fetched from this site).
const files = new Map();
const fileReader = typeof FileReaderSync === "function" ? new FileReaderSync() : null;
const fileSources = { get: (key) => (files.has(key) && fileReader ? traceSource(files.get(key)) : undefined) };

// A file as lab.tracepage.Source: its name and size, bytes by range, and progress for the page's bar.
function traceSource(file) {
  return {
    name: file.name,
    size: file.size,
    read: (start, end) => new Uint8Array(fileReader.readAsArrayBuffer(file.slice(start, end))),
    progress: (phase, requests, read) => postMessage({ type: "progress", phase, requests, read, size: file.size }),
  };
}

// One readable line for the page (a Python error's last line, clipped); the whole text for the console.
function failure(err, phase) {
  const detail = String(err?.message ?? err);
  const lines = detail.split("\n").map((line) => line.trim()).filter(Boolean);
  const message = (lines[lines.length - 1] ?? "unknown error").slice(0, 200);
  return { type: "error", phase, message, detail };
}

async function restore(indexURL, wheelUrl) {
  const t0 = performance.now();
  const response = await fetch(new URL(SNAPSHOT, import.meta.url));
  if (!response.ok) throw new Error(`the snapshot is missing (HTTP ${response.status})`);
  const bytes = new Uint8Array(await response.arrayBuffer());
  self.prefixLabBoot.fetchMs = performance.now() - t0;
  // Only the exact bytes the build made are restored: Pyodide fails on others in ways a normal boot in the
  // same worker may not survive (a heap bigger than its 30 MiB). The name holds the start of their sha256
  // (crypto.subtle exists only in secure contexts: on a room's plain-http address the size is checked alone).
  if (bytes.length !== SNAPSHOT_BYTES) throw new Error(`the snapshot is damaged (${bytes.length} bytes, not ${SNAPSHOT_BYTES})`);
  if (self.crypto?.subtle) {
    const digest = Array.from(new Uint8Array(await crypto.subtle.digest("SHA-256", bytes)), (b) => b.toString(16).padStart(2, "0")).join("");
    if (!SNAPSHOT.includes(`.${digest.slice(0, 16)}.`)) throw new Error("the snapshot is damaged (its sha256 is not its name's)");
  }
  self.prefixLabBoot.checkMs = performance.now() - t0 - self.prefixLabBoot.fetchMs;
  const pyodide = await new Promise((resolve, reject) => {
    restoring = (reason) => reject({ wasm: reason });  // the wasm's fault, not the snapshot's: see boot()
    setTimeout(() => reject(new Error(`restoring took over ${RESTORE_LIMIT_MS / 1000} s`)), RESTORE_LIMIT_MS);
    loadPyodide({ indexURL, stdLibURL: indexURL + REST_ZIP, _loadSnapshot: bytes }).then(resolve, reject);
  }).finally(() => { restoring = null; });
  delete pyodide._api.config._loadSnapshot;  // Pyodide would keep the 30 MB alive
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
    pyodide = await loadPyodide({ indexURL });
    self.prefixLabBoot.route = "normal";
  }
  const response = await wheel;
  if (!response.ok) throw new Error(`could not fetch ${wheelUrl}: HTTP ${response.status}`);
  pyodide.unpackArchive(await response.arrayBuffer(), "wheel");
  view = pyodide.pyimport("lab.view");
  postMessage({ type: "ready", bootMs: performance.now() - t0, route: self.prefixLabBoot.route });
}

// Pyodide loses some failures while it boots (a wasm that is missing, cut or of the wrong type ends
// in a rejected promise nobody awaits): while booting, any of them is the boot's failure. While a
// snapshot is restored too: they come from the wasm, which a normal boot would load the same way.
self.addEventListener("unhandledrejection", (event) => {
  if (restoring) restoring(event.reason);
  else if (!view) postMessage(failure(event.reason, "boot"));
});

// A wasm file that is cut short or served with the wrong type does not even reject: Pyodide logs
// "wasm instantiation failed!" and waits forever. While booting, that warning is the boot's failure.
const warn = console.warn;
console.warn = (...args) => {
  warn(...args);
  if (!view && String(args[0]).includes("wasm instantiation failed")) {
    const err = new Error("its WebAssembly file (pyodide/pyodide.asm.wasm) is damaged or served with the wrong type");
    if (restoring) restoring(err);
    else postMessage(failure(err, "boot"));
  }
};

self.onmessage = async (event) => {
  const msg = event.data;
  if (msg.type === "boot") {
    booting ??= boot(msg.wheel).catch((err) => postMessage(failure(err, "boot")));
    return;
  }
  if (msg.type === "trace") {
    files.set(msg.key, msg.file);
    return;
  }
  if (msg.type !== "view") return;
  await booting;
  if (!view) return;
  const t0 = performance.now();
  try {
    const answer = JSON.parse(view.handle_json(JSON.stringify(msg.request), fileSources));
    postMessage({ type: "view", id: msg.id, view: answer, ms: performance.now() - t0 });
  } catch (err) {
    postMessage({ ...failure(err, "view"), id: msg.id });
  }
};
