// prefix-lab worker: boots the Pyodide core from this site, unpacks the project's own
// pure-Python wheel (model, missions, lab view code) and answers view requests with
// lab.view.handle_json. Nothing is fetched from any other origin; no package is
// installed from an index (the wheel is unpacked, not resolved).

// The build renames the Pyodide folder by its content hash and writes that name here (both lines).
import { loadPyodide } from "./pyodide/pyodide.mjs";
const PYODIDE = "./pyodide/";

let view = null;
let booting = null;

// One readable line for the page (a Python error's last line, clipped); the whole text for the console.
function failure(err, phase) {
  const detail = String(err?.message ?? err);
  const lines = detail.split("\n").map((line) => line.trim()).filter(Boolean);
  const message = (lines[lines.length - 1] ?? "unknown error").slice(0, 200);
  return { type: "error", phase, message, detail };
}

async function boot(wheelUrl) {
  const t0 = performance.now();
  const pyodide = await loadPyodide({ indexURL: new URL(PYODIDE, import.meta.url).href });
  const response = await fetch(wheelUrl);
  if (!response.ok) throw new Error(`could not fetch ${wheelUrl}: HTTP ${response.status}`);
  pyodide.unpackArchive(await response.arrayBuffer(), "wheel");
  view = pyodide.pyimport("lab.view");
  postMessage({ type: "ready", bootMs: performance.now() - t0 });
}

// Pyodide loses some failures while it boots (a wasm that is missing, cut or of the wrong type ends
// in a rejected promise nobody awaits): while booting, any of them is the boot's failure.
self.addEventListener("unhandledrejection", (event) => {
  if (!view) postMessage(failure(event.reason, "boot"));
});

// A wasm file that is cut short or served with the wrong type does not even reject: Pyodide logs
// "wasm instantiation failed!" and waits forever. While booting, that warning is the boot's failure.
const warn = console.warn;
console.warn = (...args) => {
  warn(...args);
  if (!view && String(args[0]).includes("wasm instantiation failed")) {
    postMessage(failure(new Error("its WebAssembly file (pyodide/pyodide.asm.wasm) is damaged or served with the wrong type"), "boot"));
  }
};

self.onmessage = async (event) => {
  const msg = event.data;
  if (msg.type === "boot") {
    booting ??= boot(msg.wheel).catch((err) => postMessage(failure(err, "boot")));
    return;
  }
  if (msg.type !== "view") return;
  await booting;
  if (!view) return;
  const t0 = performance.now();
  try {
    const answer = JSON.parse(view.handle_json(JSON.stringify(msg.request)));
    postMessage({ type: "view", id: msg.id, view: answer, ms: performance.now() - t0 });
  } catch (err) {
    postMessage({ ...failure(err, "view"), id: msg.id });
  }
};
