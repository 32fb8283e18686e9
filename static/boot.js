// Inlined at the top of <head> by the build: start the simulator's worker at once, so
// Pyodide boots while the page's own scripts download. Messages that arrive before
// bridge.js takes over are kept for it in `early`.
(function () {
  document.documentElement.dataset.lab = "booting";
  var wheel = document.querySelector('meta[name="prefix-lab-wheel"]').content;
  var worker = new Worker("worker.js", { type: "module" });
  var early = [];
  worker.onmessage = function (event) { early.push(event); };
  worker.onerror = function (event) {
    early.push({ data: { type: "error", phase: "boot", message: event.message || "its worker could not be loaded" } });
  };
  worker.postMessage({ type: "boot", wheel: new URL(wheel, location.href).href });
  window.prefixLabBoot = { worker: worker, early: early };
  // If the page's own script (bridge.js) never arrives, nobody would ever say so: say it here.
  setTimeout(function () {
    if (window.prefixLab) return;
    document.documentElement.dataset.lab = "error";
    var text = document.querySelector("#status .text");
    if (text) text.textContent = "The lab's scripts did not load, so the numbers shown are the default setup's. " +
      "Reload to try again; if it keeps failing, the site is incomplete: rebuild it (prefix-lab build).";
  }, (window.prefixLabLimits && window.prefixLabLimits.bootMs) || 45000);
})();
