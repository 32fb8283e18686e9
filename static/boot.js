// Inlined at the top of <head> by the build: start the simulator's worker, so Pyodide boots while
// the page's own scripts download. Messages that arrive before bridge.js takes over are kept for
// it in `early`.
//
// The full lab starts it at once. An embed framed in an article (embed.html names itself with
// <meta name="prefix-lab-start" content="when-shown">) waits until its frame scrolls into view, or
// until someone touches it, showing the numbers and figures the build put in its HTML meanwhile;
// and it asks for a SharedWorker, so that the embeds of one article share one Pyodide. Where there
// is no SharedWorker, or one cannot be made here, it has a worker of its own, as bridge.js has too
// whenever the shared one fails it.
(function () {
  var root = document.documentElement;
  var wheel = new URL(document.querySelector('meta[name="prefix-lab-wheel"]').content, location.href).href;
  var start = document.querySelector('meta[name="prefix-lab-start"]');
  var lazy = window.parent !== window && start !== null && start.content === "when-shown";
  var boot = window.prefixLabBoot = {
    worker: null, early: [], lazy: lazy, connect: connect, start: begin,
    onstart: null,  // set by bridge.js while the worker is not started yet: called with `boot` when it is
  };

  // A worker running worker.js at `url`: a dedicated Worker, or (`shared`) the port of a SharedWorker
  // dressed as one (postMessage, terminate, onmessage, onerror; `shared` says which it is). Its name
  // carries the wheel, so that it starts booting the moment its script has run: a message posted to a
  // worker whose script is still loading is handed over by this page's thread, which is busy drawing
  // the page by then (the boot message waited up to 600 ms for it).
  function connect(url, shared) {
    var name = "prefix-lab " + wheel;
    if (shared && typeof SharedWorker === "function") {
      try {
        var sw = new SharedWorker(url, { type: "module", name: name });
        return {
          shared: true,
          postMessage: function (msg) { sw.port.postMessage(msg); },
          terminate: function () { sw.port.postMessage({ type: "bye" }); sw.port.close(); },
          set onmessage(handler) { sw.port.onmessage = handler; },
          set onerror(handler) { sw.onerror = handler; },
        };
      } catch (err) {
        console.info("prefix-lab: no shared worker here (" + err.message + "); this frame boots its own");
      }
    }
    return new Worker(url, { type: "module", name: name });
  }

  function begin() {
    if (boot.worker) return;
    var worker = boot.worker = connect("worker.js", lazy);
    worker.onmessage = function (event) { boot.early.push(event); };
    worker.onerror = function (event) {
      boot.early.push({ data: { type: "error", phase: "boot", message: event.message || "its worker could not be loaded" } });
    };
    worker.postMessage({ type: "boot", wheel: wheel });
    boot.startedAt = performance.now();
    if (root.dataset.lab === "waiting") {
      var text = document.querySelector("#status .text");
      if (text) text.textContent = "Starting the simulator…";
    }
    root.dataset.lab = "booting";
    if (boot.onstart) boot.onstart(boot);
  }

  if (lazy) {
    root.dataset.lab = "waiting";
    // The margin starts it a screen ahead where the article and the lab share an origin; across origins
    // browsers ignore margins (a frame may not learn where it sits), so there it starts at the first pixel.
    var now = function () {
      shown.disconnect();
      begin();
    };
    var shown = new IntersectionObserver(function (entries) {
      if (entries.some(function (entry) { return entry.isIntersecting; })) now();
    }, { rootMargin: "100% 0px" });
    shown.observe(root);
    ["pointerdown", "keydown", "focusin"].forEach(function (kind) {  // touched before it was shown
      document.addEventListener(kind, now, { capture: true, once: true });
    });
    document.addEventListener("readystatechange", function () {  // the status line exists once parsed
      var text = document.querySelector("#status .text");
      if (text && root.dataset.lab === "waiting") {
        text.textContent = "The simulator starts when this part of the page is shown; until then the numbers are the default setup's.";
      }
    }, { once: true });
  } else {
    begin();
  }
  // If the page's own script (bridge.js) never arrives, nobody would ever say so: say it here.
  setTimeout(function () {
    if (window.prefixLab) return;
    root.dataset.lab = "error";
    var text = document.querySelector("#status .text");
    if (text) text.textContent = "The lab's scripts did not load, so the numbers shown are the default setup's. " +
      "Reload to try again; if it keeps failing, the site is incomplete: rebuild it (prefix-lab build).";
  }, (window.prefixLabLimits && window.prefixLabLimits.bootMs) || 45000);
})();
