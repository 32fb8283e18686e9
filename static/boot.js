// Inlined at the top of <head> by the build: start the simulator's worker at once, so
// Pyodide boots while the page's own scripts download. Messages that arrive before
// bridge.js takes over are kept for it in `early`.
(function () {
  document.documentElement.dataset.lab = "booting";
  var wheel = document.querySelector('meta[name="prefix-lab-wheel"]').content;
  var worker = new Worker("worker.js", { type: "module" });
  var early = [];
  worker.onmessage = function (event) { early.push(event); };
  worker.onerror = function (event) { early.push({ data: { type: "error", message: event.message || "worker error" } }); };
  worker.postMessage({ type: "boot", wheel: new URL(wheel, location.href).href });
  window.prefixLabBoot = { worker: worker, early: early };
})();
