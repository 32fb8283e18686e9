// prefix-lab worker: boots the Pyodide core from this site, unpacks the project's own
// pure-Python wheel (model, missions, lab view code) and answers view requests with
// lab.view.handle_json. Nothing is fetched from any other origin; no package is
// installed from an index (the wheel is unpacked, not resolved).

import { loadPyodide } from "./pyodide/pyodide.mjs";

let view = null;
let booting = null;

async function boot(wheelUrl) {
  const t0 = performance.now();
  const pyodide = await loadPyodide({ indexURL: new URL("./pyodide/", import.meta.url).href });
  const response = await fetch(wheelUrl);
  if (!response.ok) throw new Error(`could not fetch ${wheelUrl}: HTTP ${response.status}`);
  pyodide.unpackArchive(await response.arrayBuffer(), "wheel");
  view = pyodide.pyimport("lab.view");
  postMessage({ type: "ready", bootMs: performance.now() - t0 });
}

self.onmessage = async (event) => {
  const msg = event.data;
  if (msg.type === "boot") {
    booting ??= boot(msg.wheel).catch((err) => postMessage({ type: "error", phase: "boot", message: String(err.message ?? err) }));
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
    postMessage({ type: "error", id: msg.id, message: String(err.message ?? err).split("\n").slice(-2).join(" ") });
  }
};
