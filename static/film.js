// prefix-lab film: plays a stretch of the run, request by request, on a canvas.
//
// The film is data the view computes from the run's own records (lab/page/figures/film.py, which states
// the rule and whose `frame` is the one this file draws by); it arrives in the `#film-data` block, at build
// time and with every answer (the bridge's "prefix-lab:view" event). Each request flies from the router to
// its replica, waits in its queue, is prefilled (a pie of its prompt: blue the share its replica had
// cached, orange the share it computed), stays lit a moment, and its conversation's leaf grows in the
// replica's cache strip; leaves that lose tokens flash red as they shrink.
//
// Frames are drawn with requestAnimationFrame, only while playing and on screen (IntersectionObserver):
// the main thread stays free for the page, and the worker computes undisturbed. A frame copies what does
// not move from a canvas drawn once a size (drawStill) and draws the rest without making new arrays. With
// reduced motion asked for, nothing moves: Play is off and Step draws one still frame at each next moment.
// The element's data-film-* attributes say where it is (lab/site/film.py lists them).

const HIT = "#0072b2", MISS = "#e69f00", WAIT = "#5b6570", GONE = "#c62828", INK = "#1d232b", LINE = "#dde2e8";
import { unpacked } from "./wire.mjs";

const reducedQuery = matchMedia("(prefers-reduced-motion: reduce)");

function laneHeight(replicas) {
  return Math.max(18, Math.min(44, 360 / replicas));  // lab/site/film.py reserves the same height
}

function canvasHeight(replicas) {
  return Math.round(36 + replicas * laneHeight(replicas));
}

function setup(el) {
  const canvas = el.querySelector("canvas");
  const ctx = canvas.getContext("2d", { alpha: false });
  const play = el.querySelector(".film-play");
  const step = el.querySelector(".film-step");
  const follow = el.querySelector(".film-follow");
  const speedInput = el.querySelector(".film-speed input");
  const speedOut = el.querySelector(".film-speed output");
  const timeInput = el.querySelector(".film-time input");
  const timeOut = el.querySelector(".film-time output");
  const said = el.querySelector(".film-said");
  const dataEl = document.getElementById("film-data");
  const speeds = speedInput.dataset.speeds.split(",").map(Number);

  let film = null, text = "";
  let t = 0, playing = false, visible = false, raf = 0, last = 0, frames = 0, sinceAttrs = 0;
  let following = -1, followedPhase = "";
  let leaves = [], shown = [], flash = [], cursor = 0;  // leaf tokens at t, as drawn (eased), last shrink (ms)
  let order = [];  // per replica: its leaves, trunk first then its conversations, grouped by system prompt
  let width = 0, height = 0, dpr = 1;
  let reduced = reducedQuery.matches;
  let lastSlider = 0;
  let queued = new Int32Array(0);  // per replica: its requests on their way or waiting, as this frame draws them
  const drawMs = [];  // the last animation frames' drawing times (data-film-draw-ms: their median and worst)

  function speed() {
    return speeds[Number(speedInput.value)] ?? 0.25;
  }

  function load(json) {
    if (json === text) return false;
    text = json;
    try {
      film = JSON.parse(json);
      for (const part of [film.requests, film.leaves, film.tree]) {  // its float columns come packed (wire.mjs)
        for (const [name, column] of Object.entries(part)) part[name] = unpacked(column);
      }
    } catch {
      film = null;
      return false;
    }
    const n = film.leaves.tokens.length;
    order = Array.from({ length: film.replicas }, () => []);
    const ids = [...Array(n).keys()].sort((a, b) => film.leaves.system[a] - film.leaves.system[b]
      || Number(film.leaves.trunk[b]) - Number(film.leaves.trunk[a]) || a - b);
    for (const i of ids) order[film.leaves.replica[i]]?.push(i);
    timeInput.min = film.t0;
    timeInput.max = film.t1;
    t = Math.min(Math.max(t, film.t0), film.t1);
    following = -1;
    followedPhase = "";
    follow.textContent = "Follow the next request";
    follow.setAttribute("aria-pressed", "false");
    seek(t, true);
    resize();
    return true;
  }

  // The leaves at `to`: replayed from the film's start when going back, else on from where they are.
  function seek(to, fresh = false) {
    if (fresh || to < t || leaves.length !== film.leaves.tokens.length) {
      leaves = film.leaves.tokens.slice();
      cursor = 0;
      fresh = true;
    }
    if (flash.length !== leaves.length) flash = new Array(leaves.length).fill(-1e9);
    t = to;
    advanceTree(performance.now(), !fresh && !reduced);
    if (fresh || reduced || shown.length !== leaves.length) shown = leaves.slice();
  }

  function advanceTree(now, flashing) {
    const tree = film.tree;
    while (cursor < tree.t.length && tree.t[cursor] <= t) {
      const i = tree.leaf[cursor];
      if (flashing && tree.tokens[cursor] < leaves[i]) flash[i] = now;
      leaves[i] = tree.tokens[cursor];
      cursor += 1;
    }
  }

  function phaseOf(i, flight, linger) {
    const r = film.requests;
    if (r.arrive[i] - flight <= t && t < r.arrive[i]) return "flying";
    if (r.arrive[i] <= t && t < r.start[i]) return "waiting";
    if (r.start[i] <= t && t < r.end[i]) return "prefill";
    if (r.end[i] <= t && t < r.end[i] + linger) return "done";
    return "";
  }

  function resize() {
    if (!film) return;
    dpr = Math.min(2, window.devicePixelRatio || 1);
    width = Math.max(200, canvas.clientWidth || el.clientWidth || 600);
    height = canvasHeight(film.replicas);
    const w = Math.round(width * dpr), h = Math.round(height * dpr);
    if (canvas.width !== w || canvas.height !== h) {  // a new backing store only when its size changes
      canvas.style.height = height + "px";
      canvas.width = w;
      canvas.height = h;
    }
    draw();
  }

  // Where things sit on the canvas, in CSS pixels.
  function geometry() {
    const lane = laneHeight(film.replicas);
    const top = 26;
    const narrow = width < 520;
    return {
      lane, top, narrow,
      routerX: narrow ? 22 : 44, routerY: top + (film.replicas * lane) / 2,
      labelX: narrow ? 50 : 96,
      queueX: narrow ? 60 : 120,
      slotX: width * (narrow ? 0.38 : 0.36),
      treeX: width * (narrow ? 0.44 : 0.42), treeW: width * (narrow ? 0.56 : 0.58) - 8,
      dot: Math.max(3.5, Math.min(7, lane * 0.2)),
      strip: Math.max(6, lane * 0.55),
      laneY: (k) => top + lane * (k + 0.5),
    };
  }

  // What does not move (the router, the titles, each replica's label, slot and strip frame), drawn once a
  // size or a film into its own canvas, which each frame copies before it draws what moves.
  const still = document.createElement("canvas");
  const stillCtx = still.getContext("2d", { alpha: false });
  let stillFor = "";

  function drawStill(g) {
    const key = `${text.length} ${film.replicas} ${film.capacity} ${width} ${height} ${dpr}`;
    if (key === stillFor) return;
    stillFor = key;
    still.width = canvas.width;
    still.height = canvas.height;
    const c = stillCtx;
    c.setTransform(dpr, 0, 0, dpr, 0, 0);
    c.fillStyle = "#ffffff";
    c.fillRect(0, 0, width, height);
    c.font = `${g.narrow ? 10 : 11}px system-ui, sans-serif`;
    c.textBaseline = "middle";
    c.fillStyle = INK;
    c.textAlign = "center";
    c.fillText("router", g.routerX, g.routerY - 16);
    c.beginPath();
    c.arc(g.routerX, g.routerY, 8, 0, 2 * Math.PI);
    c.fill();
    c.textAlign = "left";
    c.fillStyle = WAIT;
    c.fillText(g.narrow ? "queue, prefill" : "queue and prefill", g.queueX, 12);
    c.fillText(`cache (${film.capacity.toLocaleString("en")} tokens a replica)`, g.treeX, 12);
    c.strokeStyle = LINE;
    c.lineWidth = 1;
    for (let k = 0; k < film.replicas; k++) {
      const y = g.laneY(k);
      c.fillStyle = film.replica_colours[k];
      c.fillRect(g.labelX - 4, y - g.lane * 0.3, 3, g.lane * 0.6);
      c.fillStyle = INK;
      c.fillText(g.narrow ? `${k}` : `replica ${k}`, g.labelX + 2, y);
      c.beginPath();
      c.arc(g.slotX, y, g.dot + 2.5, 0, 2 * Math.PI);
      c.stroke();
      c.strokeRect(g.treeX + 0.5, y - g.strip / 2 + 0.5, g.treeW, g.strip);
    }
  }

  function draw(now = performance.now()) {
    if (!film || !width) return;
    const g = geometry();
    drawStill(g);
    ctx.setTransform(1, 0, 0, 1, 0, 0);
    ctx.drawImage(still, 0, 0);
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.font = `${g.narrow ? 10 : 11}px system-ui, sans-serif`;
    ctx.textBaseline = "middle";
    ctx.textAlign = "left";
    const cap = Math.max(1, film.capacity);
    const ease = reduced ? 1 : 0.2;
    for (let k = 0; k < film.replicas; k++) {
      const y = g.laneY(k);
      // the cache strip: each leaf inside its frame
      const h = g.strip;
      let x = g.treeX + 1;
      for (const i of order[k] ?? []) {
        shown[i] += (leaves[i] - shown[i]) * ease;
        if (Math.abs(leaves[i] - shown[i]) < 1) shown[i] = leaves[i];
        if (shown[i] <= 0) continue;
        const w = (shown[i] / cap) * (g.treeW - 2);
        const trunk = film.leaves.trunk[i];
        const lit = now - flash[i] < 700 && !reduced;
        ctx.fillStyle = lit ? GONE : film.system_colours[film.leaves.system[i] % film.system_colours.length];
        ctx.globalAlpha = lit ? 0.9 : trunk ? 0.95 : 0.45;
        ctx.fillRect(x, y - h / 2 + 1, Math.max(0.5, w - (w > 3 ? 0.6 : 0)), h - 1);
        x += w;
      }
      ctx.globalAlpha = 1;
    }
    // the requests, in arrival order (the k-th waiting one of a replica sits k places back in its queue)
    const r = film.requests;
    const flight = reduced ? 0 : film.flight_s * speed(), linger = film.linger_s * speed();
    if (queued.length !== film.replicas) queued = new Int32Array(film.replicas);
    queued.fill(0);
    let followed = false, followedX = 0, followedY = 0;
    for (let i = 0; i < r.arrive.length; i++) {
      if (r.arrive[i] - flight > t) break;  // arrivals are in order: none later is on screen yet
      const phase = phaseOf(i, flight, linger);
      if (!phase) continue;
      const k = r.replica[i], y = g.laneY(k);
      let x, yy = y, alpha = 1;
      if (phase === "flying" || phase === "waiting") {
        const place = queued[k]++;
        const qx = Math.max(g.queueX, g.slotX - (place + 1) * (g.dot * 2 + 2));
        if (phase === "flying") {
          const p = (t - (r.arrive[i] - flight)) / flight;
          const s = p * p * (3 - 2 * p);
          x = g.routerX + (qx - g.routerX) * s;
          yy = g.routerY + (y - g.routerY) * s;
        } else x = qx;
      } else if (phase === "prefill") x = g.slotX;
      else {
        const p = Math.min(1, (t - r.end[i]) / Math.max(1e-9, linger));
        x = g.slotX + (g.treeX - g.slotX) * p * 0.8;
        alpha = 1 - p * 0.7;
      }
      ctx.globalAlpha = alpha;
      const share = r.prompt[i] ? r.cached[i] / r.prompt[i] : 0;
      if (phase === "flying" || phase === "waiting") {
        ctx.fillStyle = WAIT;
        ctx.beginPath();
        ctx.arc(x, yy, g.dot * 0.8, 0, 2 * Math.PI);
        ctx.fill();
      } else {  // lit: the share of its prompt found in the cache
        ctx.fillStyle = MISS;
        ctx.beginPath();
        ctx.arc(x, yy, g.dot, 0, 2 * Math.PI);
        ctx.fill();
        if (share > 0) {
          ctx.fillStyle = HIT;
          ctx.beginPath();
          ctx.moveTo(x, yy);
          ctx.arc(x, yy, g.dot, -Math.PI / 2, -Math.PI / 2 + share * 2 * Math.PI);
          ctx.closePath();
          ctx.fill();
        }
      }
      ctx.globalAlpha = 1;
      if (i === following) {
        followed = true;
        followedX = x;
        followedY = yy;
      }
    }
    ctx.fillStyle = INK;
    for (let k = 0; k < film.replicas; k++) {  // a queue longer than its room says how long it is
      if (queued[k] * (g.dot * 2 + 2) > g.slotX - g.queueX) ctx.fillText(String(queued[k]), g.queueX - 16, g.laneY(k));
    }
    if (followed) {
      ctx.strokeStyle = INK;
      ctx.lineWidth = 2;
      ctx.beginPath();
      ctx.arc(followedX, followedY, g.dot + 4, 0, 2 * Math.PI);
      ctx.stroke();
    }
    ctx.fillStyle = WAIT;
    ctx.textAlign = "right";
    ctx.fillText(`${t.toFixed(2)} s`, width - 6, height - 8);
    ctx.textAlign = "left";
    describeFollowed();
  }

  function describeFollowed() {
    if (following < 0 || !film) return;
    const r = film.requests, i = following;
    const phase = phaseOf(i, reduced ? 0 : film.flight_s * speed(), film.linger_s * speed())
      || (t < r.arrive[i] ? "before" : "after");
    if (phase === followedPhase) return;
    followedPhase = phase;
    const who = r.session[i] >= 0 ? `Request ${i + 1} (conversation ${r.session[i]}, turn ${r.turn[i] + 1})` : `Request ${i + 1}`;
    const found = `${r.cached[i].toLocaleString("en")} of its ${r.prompt[i].toLocaleString("en")} prompt tokens `
      + `(${Math.round((100 * r.cached[i]) / Math.max(1, r.prompt[i]))}%)`;
    const words = {
      before: `${who} has not been sent yet; it arrives at ${r.arrive[i].toFixed(2)} s.`,
      flying: `${who} is on its way from the router to replica ${r.replica[i]}.`,
      waiting: `${who} waits in replica ${r.replica[i]}'s queue (${r.queue_ms[i].toLocaleString("en")} ms in all).`,
      prefill: `${who} is being prefilled on replica ${r.replica[i]}: ${found} were in its cache.`,
      done: `${who} is served: first token after ${r.ttft_ms[i].toLocaleString("en")} ms; ${found} came from the cache.`,
      after: `${who} was served: first token after ${r.ttft_ms[i].toLocaleString("en")} ms on replica ${r.replica[i]}; ${found} came from the cache.`,
    };
    said.textContent = words[phase];
    el.dataset.filmPhase = phase;
  }

  function attrs() {
    el.dataset.filmState = playing ? (visible ? "playing" : "offscreen") : "paused";
    el.dataset.filmMotion = reduced ? "reduced" : "full";
    el.dataset.filmFrames = String(frames);
    el.dataset.filmT = t.toFixed(3);
    el.dataset.filmFollowing = following < 0 ? "" : String(following);
    if (drawMs.length) {
      const sorted = drawMs.slice().sort((a, b) => a - b);
      el.dataset.filmDrawMs = `${sorted[sorted.length >> 1].toFixed(2)} ${sorted[sorted.length - 1].toFixed(2)}`;
    }
    sinceAttrs = 0;
  }

  function showTime(force = false) {
    const now = performance.now();
    if (!force && now - lastSlider < 250) return;
    lastSlider = now;
    timeInput.value = String(t);
    const words = `${t.toFixed(1)} s`;
    timeInput.setAttribute("aria-valuetext", words);
    timeOut.textContent = words;
  }

  function tick(ts) {
    raf = 0;
    if (!playing || !visible || reduced) return;
    const dt = last ? Math.min(0.1, (ts - last) / 1000) : 0;
    last = ts;
    const next = Math.min(film.t1, t + dt * speed());
    t = next;
    advanceTree(ts, true);
    frames += 1;
    const began = performance.now();
    draw(ts);
    drawMs.push(performance.now() - began);
    if (drawMs.length > 120) drawMs.shift();
    showTime();
    if (++sinceAttrs >= 15) attrs();
    if (t >= film.t1) {
      setPlaying(false);
      return;
    }
    raf = requestAnimationFrame(tick);
  }

  function run() {
    if (playing && visible && !reduced && !raf) {
      last = 0;
      raf = requestAnimationFrame(tick);
    } else if ((!playing || !visible || reduced) && raf) {
      cancelAnimationFrame(raf);
      raf = 0;
    }
    attrs();
  }

  function setPlaying(on) {
    if (!film) return;
    if (on && t >= film.t1) seek(film.t0, true);  // played to its end: from the start again
    playing = on && !reduced;
    play.textContent = playing ? "Pause" : "Play";
    play.setAttribute("aria-pressed", String(playing));
    showTime(true);
    run();
  }

  // Step: pause, and show the next moment a request arrives, starts or ends its prefill.
  function stepOnce() {
    if (!film) return;
    setPlaying(false);
    const r = film.requests;
    let next = film.t1;
    for (let i = 0; i < r.arrive.length; i++) {
      for (const when of [r.arrive[i], r.start[i], r.end[i]]) if (when > t + 1e-6 && when < next) next = when;
      if (r.arrive[i] > next) break;
    }
    seek(next);
    shown = leaves.slice();
    draw();
    showTime(true);
    attrs();
  }

  function followNext() {
    if (!film) return;
    if (following >= 0) {
      following = -1;
      follow.textContent = "Follow the next request";
      follow.setAttribute("aria-pressed", "false");
      said.textContent = "";
      delete el.dataset.filmPhase;
    } else {
      const r = film.requests;
      let i = r.arrive.findIndex((a) => a >= t);
      if (i < 0) i = r.arrive.length - 1;
      startFollowing(i);
    }
    draw();
    attrs();
  }

  function startFollowing(i) {
    following = i;
    followedPhase = "";
    follow.textContent = "Stop following";
    follow.setAttribute("aria-pressed", "true");
  }

  // A click on a request follows it.
  canvas.addEventListener("click", (event) => {
    if (!film) return;
    const box = canvas.getBoundingClientRect();
    const px = event.clientX - box.left, py = event.clientY - box.top;
    const g = geometry(), r = film.requests;
    const flight = reduced ? 0 : film.flight_s * speed(), linger = film.linger_s * speed();
    let best = -1, bestD = (g.dot + 6) ** 2;
    const queued = new Array(film.replicas).fill(0);
    for (let i = 0; i < r.arrive.length && r.arrive[i] - flight <= t; i++) {
      const phase = phaseOf(i, flight, linger);
      if (!phase) continue;
      const k = r.replica[i], y = g.laneY(k);
      let x = g.slotX, yy = y;
      if (phase === "flying" || phase === "waiting") {
        const qx = Math.max(g.queueX, g.slotX - (queued[k]++ + 1) * (g.dot * 2 + 2));
        const p = phase === "flying" ? (t - (r.arrive[i] - flight)) / flight : 1;
        const s = p * p * (3 - 2 * p);
        x = g.routerX + (qx - g.routerX) * s;
        yy = g.routerY + (y - g.routerY) * s;
      } else if (phase === "done") x = g.slotX + (g.treeX - g.slotX) * Math.min(1, (t - r.end[i]) / linger) * 0.8;
      const d = (x - px) ** 2 + (yy - py) ** 2;
      if (d < bestD) [best, bestD] = [i, d];
    }
    if (best >= 0) {
      startFollowing(best);
      draw();
      attrs();
    }
  });

  play.addEventListener("click", () => setPlaying(!playing));
  step.addEventListener("click", stepOnce);
  follow.addEventListener("click", followNext);
  speedInput.addEventListener("input", () => {
    const s = speed();
    speedOut.textContent = `${s}×`;
    speedInput.setAttribute("aria-valuetext", `${s} times real time`);
    followedPhase = "";
    draw();
  });
  timeInput.addEventListener("input", () => {
    if (!film) return;
    seek(Math.min(film.t1, Math.max(film.t0, Number(timeInput.value))));
    shown = leaves.slice();
    draw();
    showTime(true);
    attrs();
  });

  function setReduced(on) {
    reduced = on;
    play.disabled = on;
    play.title = on ? "Motion is reduced on this device: Step shows one moment at a time." : "";
    if (on) setPlaying(false);
    shown = leaves.slice();
    draw();
    attrs();
  }
  reducedQuery.addEventListener("change", (e) => setReduced(e.matches));

  new IntersectionObserver((entries) => {
    for (const entry of entries) visible = entry.isIntersecting;
    run();
  }).observe(el);
  new ResizeObserver(() => {
    const w = canvas.clientWidth;
    if (film && Math.abs(w - width) > 0.5) resize();
  }).observe(canvas);
  document.addEventListener("prefix-lab:view", (event) => {
    const patch = event.detail?.patches?.dom?.["#film-data"];
    if (patch && load(patch.text)) attrs();
    const caption = event.detail?.patches?.dom?.["#cap-film"];
    if (caption) canvas.setAttribute("aria-label", caption.text);
  });

  if (dataEl) load(dataEl.textContent);
  if (film) {
    t = film.t0;
    seek(t, true);
    showTime(true);
  }
  setReduced(reduced);
}

for (const el of document.querySelectorAll(".film")) setup(el);
