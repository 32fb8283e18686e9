// prefix-lab bridge: between the page (Panel widgets, Bokeh charts, plain HTML) and the
// Python view code running under Pyodide in a Web Worker.
//
// The URL hash is the state. A control change or an action is sent to the worker as a
// delta against the current hash; the worker answers with the new hash and JSON patches
// ({bokeh: {model name: {prop: value}}, dom: {selector: {text|html|attrs}}}) which
// `applyDom` and `applyModels` write into the page. All logic lives in Python (lab/page/view.py); this file only
// moves messages and patches, and names no control: what a control does is declared in
// lab/page/controls.py. document.documentElement.dataset.lab says where we are:
// "waiting" while an embed has not been shown yet (static/boot.js), "booting" until the
// worker can compute, "busy" while it does, "ready" otherwise ("error" if the simulator
// could not start).

import { unpacked } from "./wire.mjs";

const root = document.documentElement;
const statusText = document.querySelector("#status .text");
const wheel = document.querySelector('meta[name="prefix-lab-wheel"]')?.content;
// firstAnswer: when the worker sent the first answer and when this thread took it up; controlsDrawn: when the
// first document holding a control was drawn, so that it can be used (bench/bench_page.py).
const timings = { firstNumbers: null, chartsDrawn: null, controlsDrawn: null, started: null, ready: null, bootMs: null,
  lastSent: null,
  firstAnswer: null, changes: [], draws: [], made: [] };

let modelIndex = null;  // tag or name -> Bokeh model
let hash = location.hash.slice(1);
let workerReady = false;
let inFlight = null;  // the request the worker is computing
const queue = [];  // requests waiting for the worker
let applying = false;  // true while patches are written: widget callbacks must not echo them back
const written = new Map();  // control name -> the props last written into it (late echoes are ignored)
const drawn = new Map();  // source name -> the data last drawn in it, as JSON
let nextId = 1;
let epoch = 0;  // bumped when the person edits the URL: answers computed before that are stale
const traceFiles = new Map();  // key -> File: the trace the person chose ("user"), missions' traffic (its worker reads them)

function setState(state, text) {
  root.dataset.lab = state;
  if (text && statusText) statusText.textContent = text;
}

// -- Bokeh models ----------------------------------------------------------------

// BokehJS 3.9 reads every visual property of every glyph, axis and label from CSS before its model
// value (getComputedStyle(el).getPropertyValue("--bk-line-color") and so on: about 1,800 reads a change
// on this page), and each read that follows one of Bokeh's own writes to the page recomputes styles:
// about 30 ms of every change. This site defines no `--bk-*` property anywhere (tests/browser/test_page_speed.py
// checks every file it ships), so each of those reads is the empty string: it is answered as such.
// The plot's own font size, which CSS does set, is read once until the running script's microtasks are
// done instead of once per label,
// as BokehJS's next release does for all of them (bokeh/bokeh#15205).
function quickerStyleReads() {
  const { VisualProperties } = Bokeh.require("core/visuals/visual");
  VisualProperties.prototype._get_css_value = () => "";
  const { PlotView } = Bokeh.require("models/plots/plot_canvas");
  const fontSize = Object.getOwnPropertyDescriptor(PlotView.prototype, "base_font_size").get;
  let known = null;  // plot view -> its font size, until this script run ends
  Object.defineProperty(PlotView.prototype, "base_font_size", {
    configurable: true,
    get() {
      if (known === null) {
        known = new Map();
        queueMicrotask(() => { known = null; });
      }
      if (!known.has(this)) known.set(this, fontSize.call(this));
      return known.get(this);
    },
  });
}
try {
  if (window.Bokeh) quickerStyleReads();
} catch (err) {  // another BokehJS than the one the site ships: slower, no different
  console.info("prefix-lab: BokehJS's style reads are left as they are:", String(err));
}

function bokehReady() {
  if (!pageDocs) return window.Bokeh && Bokeh.documents.length > 0 && Bokeh.documents.every((d) => d.is_idle);
  return !drawing && pageDocs.every((d) => (d.drawn ? d.failed || d.doc.is_idle : !waitedFor(d)));
}

// An undrawn document the first answer waits for: on screen, as the observers and the geometry both say
// (drawNext draws nothing else before that answer, so the two must agree).
const waitedFor = (d) => shown(d) && inView(d);

// -- the page's documents, drawn as they come into view -----------------------------------
//
// The build cuts the page's Bokeh models into one document per root (lab/site/pagedocs.py) and points
// the page's embed call here. A document is made (its models, from its JSON) and drawn (its views built
// and laid out, the costly part) when its place on the page is on screen; once the first answer is on
// screen, those within a screen of it, then the rest, one at a time while the browser is idle; last,
// those hidden are made, not drawn. Making the 28 documents off screen first cost 80-160 ms before the
// first chart could be drawn. One document is drawn per task, so an answer that arrives meanwhile is
// applied between two.
// [{json, doc, pending, elements, places, drawn, queued, failed}] in page order; null where Bokeh's own embed ran
let pageDocs = null;
let drawing = false;
const toDraw = [];  // documents waiting to be drawn, those on screen first
const onScreen = new Set();  // the places (see `place`) in the viewport now

// Where a root's element sits on the page: Bokeh's root elements are `display: contents` (no box of
// their own, so not seen intersecting), so the nearest ancestor that has a box.
function place(el) {
  let box = el;
  while (box.parentElement && getComputedStyle(box).display === "contents") box = box.parentElement;
  return box;
}

// The height a layout will take once drawn, from the fixed heights of its charts (0: not known), read from
// its document's JSON (`objects`: id -> the model's JSON, where a reference names it by id alone).
function roomFor(json, objects) {
  const model = json?.attributes ? json : objects.get(json?.id);
  if (!model) return 0;
  if (typeof model.attributes.height === "number") return model.attributes.height;
  const children = Array.isArray(model.attributes.children) ? model.attributes.children : [];
  const heights = children.map((child) => (Array.isArray(child) ? 0 : roomFor(child, objects)));
  if (!heights.length) return 0;
  return model.name.endsWith("Row") ? Math.max(...heights) : heights.reduce((a, b) => a + b, 0);
}

// Every model in a document's JSON, by id.
function objectsOf(json) {
  const objects = new Map();
  const walk = (value) => {
    if (Array.isArray(value)) value.forEach(walk);
    else if (value && typeof value === "object") {
      if (value.type === "object" && value.id && value.attributes) objects.set(value.id, value);
      Object.values(value).forEach(walk);
    }
  };
  walk(json.roots);
  return objects;
}

const shown = (d) => d.places.some((el) => onScreen.has(el));
const displayed = (d) => d.places.some((el) => el.getClientRects().length > 0);  // not hidden, wherever it is
const near = (d) => d.places.some((el) => nearby.has(el));
const nearby = new Set();  // the places within a screen of the viewport
const docOf = new Map();  // Bokeh document -> its entry in pageDocs
const holders = new Map();  // model name or tag -> the entry in pageDocs whose document holds it
let Document = null;  // BokehJS's, once it has loaded
const deferred = new Map();  // model name -> {model, d, changes}: held while far from view (see writeModels)
let looked = false;  // whether the browser has said what is on screen yet (a frame out of view may not say at all)

// The charts are drawn once every document on screen is (timings.chartsDrawn).
function drawnOnScreen() {
  if (timings.chartsDrawn === null && looked && pageDocs.every((d) => d.drawn || !waitedFor(d))) {
    timings.chartsDrawn = performance.now();
  }
}

window.prefixLabEmbed = (docsJson, items) => {
  const t0 = performance.now();
  ({ Document } = Bokeh.require("document"));
  const { unescape } = Bokeh.require("core/util/string");  // the data block is HTML-escaped, as embed_items reads it
  const json = typeof docsJson === "string" ? JSON.parse(unescape(docsJson)) : docsJson;
  try {
    shareDefinitions(Object.values(json));
  } catch (err) {  // another BokehJS than the one the site ships: each document decodes its own
    console.info("prefix-lab: Panel's model definitions are decoded per document:", String(err));
  }
  pageDocs = items.map((item) => {
    const elements = item.root_ids.map((id) => document.getElementById(item.roots[id]));
    const d = { json: json[item.docid], doc: null, pending: null, elements, places: elements.map(place), drawn: false,
      queued: false };
    const objects = objectsOf(d.json);
    for (const model of objects.values()) {
      const { name, tags } = model.attributes;
      for (const key of [name, ...(Array.isArray(tags) ? tags : [])]) {
        if (typeof key !== "string") continue;
        holders.set(key, d);
        if (key.startsWith("ctl:")) d.controls = true;
      }
    }
    d.json.roots.forEach((root, i) => {  // keep their room, so that what is below does not move up and get drawn too soon
      const height = roomFor(root, objects);
      if (height > 0 && d.places[i]) d.places[i].style.minHeight = `${height}px`;
    });
    return d;
  });
  modelIndex = null;
  timings.modelsMade = { at: t0, ms: performance.now() - t0, documents: pageDocs.length };
  const watch = (margin, seen) => {
    const observer = new IntersectionObserver((entries) => {
      for (const entry of entries) seen(entry);
      const coming = new Set(entries.filter((e) => e.isIntersecting).map((e) => e.target));
      for (const d of pageDocs) if (d.places.some((el) => coming.has(el))) want(d, margin === "0px");
      if (deferred.size) release(near);
      drawnOnScreen();
    }, { rootMargin: margin });
    for (const d of pageDocs) for (const el of d.places) observer.observe(el);
  };
  watch("0px", (entry) => {
    looked = true;
    if (entry.isIntersecting) onScreen.add(entry.target);
    else onScreen.delete(entry.target);
  });
  watch("100% 0px", (entry) => {
    if (entry.isIntersecting) nearby.add(entry.target);
    else nearby.delete(entry.target);
  });
};

// Panel's model definitions (its `defs`) come with every document, the same each time: they are decoded
// once, into the resolver every document's own falls back to, rather than once per document.
function shareDefinitions(docs) {
  const text = JSON.stringify(docs[0]?.defs ?? null);
  if (text === "null" || docs.some((doc) => JSON.stringify(doc.defs) !== text)) return;
  const { Deserializer } = Bokeh.require("core/serialization/deserializer");
  new Deserializer(Bokeh.require("base").default_resolver).decode(docs[0].defs, new Map());
  for (const doc of docs) delete doc.defs;
}

// A document's models, made from its JSON the first time they are needed: to draw it, to read a widget
// an action sends, or in idle time once the first answer is on screen. Until then an answer's changes to
// them wait in `pending` (see applyModels) and are written once they are made.
function make(d) {
  if (d.doc) return d.doc;
  if (d.failed) return null;
  const t0 = performance.now();
  try {
    d.doc = Document.from_json(d.json);
  } catch (err) {
    d.failed = true;  // the rest of the page goes on without it
    console.error("prefix-lab: a part of the page could not be made:", err);
    return null;
  }
  timings.made.push({ index: pageDocs.indexOf(d), at: t0, ms: performance.now() - t0 });
  d.json = null;
  docOf.set(d.doc, d);
  modelIndex = null;
  const pending = d.pending;
  d.pending = null;
  if (pending) {
    applying = true;
    try {
      writeModels(pending, true);
    } finally {
      applying = false;
    }
  }
  return d.doc;
}

function want(d, now) {
  if (d.drawn) return;
  if (!d.queued) {
    d.queued = true;
    toDraw.push(d);
  }
  if (now) {  // on screen: before those that are not, in page order
    toDraw.sort((a, b) => (shown(b) - shown(a)) || (pageDocs.indexOf(a) - pageDocs.indexOf(b)));
  }
  if (!drawing) soon();
}

// The next document: at once if it is on screen, else once the first answer is on screen, when the browser
// is idle (an answer waiting to be applied, a key pressed, a frame to paint, all come first). Drawn sooner,
// the documents near the viewport were found to hold the first answer back by 100 ms or more.
function soon() {
  if (toDraw.some(shown)) setTimeout(drawNext);
  else if (toDraw.length && settledYet) idle(drawNext);
}

// Whether a document's place is in the viewport now (the observers say so a frame late: a place pushed down
// by the documents drawn above it may still be listed as on screen).
const inView = (d) => d.places.some((el) => {
  const box = el.getBoundingClientRect();
  return box.bottom > 0 && box.top < window.innerHeight && box.width > 0;
});

async function drawNext() {
  if (drawing || !toDraw.length) return;
  const next = settledYet ? 0 : toDraw.findIndex(inView);  // before the first answer, only what is in view
  if (next < 0) return;
  const [d] = toDraw.splice(next, 1);
  drawing = true;
  const t0 = performance.now();
  const top = Math.min(...d.places.map((el) => el.getBoundingClientRect().top)) + window.scrollY;  // before it grows
  const figure = d.places[0].closest("[data-figure]")?.dataset.figure ?? null;
  try {
    await Bokeh.embed.add_document_standalone(make(d), document.body, d.elements);
  } catch (err) {
    d.failed = true;  // the rest of the page goes on without it
    console.error("prefix-lab: a part of the page could not be drawn:", err);
  } finally {
    d.drawn = true;
    drawing = false;
    for (const el of d.places) {
      el.style.minHeight = "";
      el.dataset.drawn = "";  // the page's CSS may keep room for a place until then (lab.css)
    }
  }
  timings.draws.push({ index: pageDocs.indexOf(d), at: t0, ms: performance.now() - t0, top, figure });
  if (d.controls && !d.failed) timings.controlsDrawn ??= performance.now();
  drawnOnScreen();
  nameInputs(d.doc);
  if (toDraw.length) soon();
  else if (settledYet) idle(drawRest);
}

// Once the first answer is on screen: the documents not drawn yet whose place is shown, one at a time; then
// those hidden are made (not drawn), so that every model can be found.
function drawRest() {
  const next = limits.drawAway === false && !embedQuery ? null : pageDocs?.find((d) => !d.queued && displayed(d));
  if (next) return want(next, false);
  const unmade = pageDocs?.find((d) => !d.doc && !d.failed);
  if (unmade) {
    make(unmade);
    idle(drawRest);
  }
}

const idle = (fn) => (window.requestIdleCallback ? requestIdleCallback(fn, { timeout: 2000 }) : setTimeout(fn, 50));

// Settled: the first answer is on screen, or the simulator could not start (the page shows the build's).
// Called again after every answer: one may show a place that no observer reports, such as the landscape
// under a guess in the mission column, which clips what it scrolls (the observers' margins stop at its
// edge), and drawRest has long finished by then: it is drawn now, as `undrawn` counts it.
let settledYet = false;
function settle() {
  settledYet = true;
  if (!drawing) toDraw.length ? soon() : idle(drawRest);
}

// The next frame the browser renders; or, if it renders none within 100 ms, then: an embed out of view
// (below the fold, its frame from another origin) is not rendered at all until it is scrolled to, and a
// change computed meanwhile must still settle.
function nextPaint() {
  return new Promise((resolve) => {
    requestAnimationFrame(resolve);
    setTimeout(resolve, 100);
  });
}

function whenBokehReady() {
  return new Promise((resolve) => {
    const check = () => (bokehReady() ? resolve() : nextPaint().then(check));
    check();
  });
}

function models() {
  if (modelIndex) return modelIndex;
  modelIndex = new Map();
  for (const doc of Bokeh.documents) {
    for (const m of doc.all_models) {
      if (m.name) modelIndex.set(m.name, m);
      for (const tag of m.tags ?? []) if (typeof tag === "string") modelIndex.set(tag, m);
    }
  }
  return modelIndex;
}

// JSON has no NaN: empty chart bins arrive as null and become gaps.
function columns(data) {
  const out = {};
  for (const [key, column] of Object.entries(data)) {
    // a packed list of floats (static/wire.mjs) comes back with NaN for its nulls already
    out[key] = Array.isArray(column) ? column.map((v) => (v === null ? NaN : v)) : unpacked(column);
  }
  return out;
}

// Whether a value the page holds is the one a patch brings: numbers to 12 digits (NaN is NaN), lists and
// plain dicts item by item (a chart's factors, a select's options, a source's columns); a Bokeh model, only
// itself. Rewriting a prop with an equal value still makes Bokeh lay out and repaint what shows it.
function same(a, b) {
  if (a === b || (a == null && b == null)) return true;  // a prop not set yet reads as undefined, a patch says null
  if (typeof a === "number" && typeof b === "number") {
    return Math.abs(a - b) <= 1e-12 * Math.max(1, Math.abs(a), Math.abs(b)) || (Number.isNaN(a) && Number.isNaN(b));
  }
  if (a === null || b === null || typeof a !== "object" || typeof b !== "object") return false;
  const list = (x) => Array.isArray(x) || ArrayBuffer.isView(x);
  if (list(a) || list(b)) {
    if (!list(a) || !list(b) || a.length !== b.length) return false;
    for (let i = 0; i < a.length; i++) if (!same(a[i], b[i])) return false;
    return true;
  }
  const entries = (x) => (x instanceof Map ? [...x.entries()] : x.constructor === Object ? Object.entries(x) : null);
  const ea = entries(a), eb = entries(b);
  if (!ea || !eb || ea.length !== eb.length) return false;
  const other = new Map(eb);
  return ea.every(([key, value]) => other.has(key) && same(value, other.get(key)));
}

// A property Bokeh has not set yet throws when read.
function current(model, prop) {
  try {
    return model[prop];
  } catch {
    return undefined;
  }
}

// An answer is written in two parts (onMessage): its plain HTML, then its Bokeh models (applyModels).
// `controlsToo` is false while more changes are queued or one is being worked out: writing an older state
// into the widgets then would pull a slider back from under the person dragging it.
// Returns how many Bokeh models it wrote and how many it held (timings.changes[].written, .held). A drawn
// chart more than a screen away from the viewport is not redrawn at once: its changes are held until it
// comes near (`release`) or, once the answers have settled, the browser is idle (`catchUp`): a change costs
// what the reader sees, and a slider dragged redraws only the charts in view. A control is written at once
// wherever it is: its keys (Home, End) read its model.
// The headline, the notices and the other plain HTML of an answer: cheap to write, so written first and
// painted before the charts are (see onMessage), so that a remembered answer reaches the headline in a frame.
function applyDom(patches) {
  applying = true;
  try {
    const focused = document.activeElement;
    for (const [selector, patch] of Object.entries(patches.dom ?? {})) {
      for (const el of document.querySelectorAll(selector)) {
        const hadFocus = focused && focused !== document.body && el.contains(focused);
        if ("text" in patch && el.textContent !== patch.text) el.textContent = patch.text;
        if ("html" in patch && el.innerHTML !== patch.html) el.innerHTML = patch.html;
        for (const [attr, value] of Object.entries(patch.attrs ?? {})) el.setAttribute(attr, value);
        if ("hidden" in patch) el.hidden = patch.hidden;
        if ("open" in patch) openAs(el, patch.open);
        if (hadFocus && !document.contains(focused)) refocus(el, focused);
      }
    }
  } finally {
    applying = false;
  }
}

function applyModels(patches, controlsToo = true) {
  applying = true;
  try {
    return writeModels(patches.bokeh ?? {}, controlsToo);
  } finally {
    applying = false;
  }
}

// The Bokeh part of an answer (`applyModels`): {model name: {prop: value}}. A model whose document is not made yet takes its
// changes when it is (`make`); they count as held.
function writeModels(bokeh, controlsToo) {
  let wrote = 0;
  let held = 0;
  const index = models();
  for (const [name, props] of Object.entries(bokeh)) {
    if (!controlsToo && name.startsWith("ctl:")) continue;
    const model = index.get(name);
    const unmade = model ? null : holders.get(name);
    if (unmade && !unmade.doc) {
      unmade.pending = { ...unmade.pending, [name]: { ...unmade.pending?.[name], ...props } };
      held += 1;
      continue;
    }
    if (!model) continue;
    if (name.startsWith("ctl:")) written.set(name, props);
    const heldNow = deferred.get(name)?.changes;  // what the chart will show once written: compared with that
    const changes = {};
    for (const [prop, value] of Object.entries(props)) {
      if (prop === "data") {  // redraw only the charts whose numbers changed
        const text = JSON.stringify(value);
        const before = drawn.get(name);  // none yet: the chart shows what the build drew, which may be this
        const data = before === undefined || before !== text ? columns(value) : null;  // decoded once
        if (before === undefined ? !same(current(model, "data"), data) : before !== text) changes.data = data;
        drawn.set(name, text);
      } else if (!same(prop in (heldNow ?? {}) ? heldNow[prop] : current(model, prop), value)) changes[prop] = value;
    }
    if (!Object.keys(changes).length) continue;
    const d = docOf.get(model.document);
    if (d?.drawn && !near(d) && !name.startsWith("ctl:")) {  // a control is cheap, and its keys read its model
      deferred.set(name, { model, d, changes: { ...deferred.get(name)?.changes, ...changes } });
      held += 1;
    } else {
      model.setv(changes);
      wrote += 1;
    }
  }
  return { wrote, held };
}

// Write the changes held for the charts `which` accepts (all of them by default).
function release(which = () => true) {
  applying = true;
  try {
    for (const [name, held] of deferred) {
      if (!which(held.d)) continue;
      deferred.delete(name);
      held.model.setv(held.changes);
    }
  } finally {
    applying = false;
  }
}

// Once the answers have settled: the charts held far from view, one document per idle moment, until none
// is held or a new change is being worked out (its answer plans again).
let catching = false;
function catchUp() {
  if (catching || !deferred.size) return;
  catching = true;
  idle(() => {
    catching = false;
    if (inFlight || queue.length || !deferred.size) return;
    const { d } = deferred.values().next().value;
    release((held) => held === d);
    catchUp();
  });
}

// -- sections a person opens (<details data-remember>) ----------------------------------
//
// Whether each is open is kept in localStorage, by its `data-remember` name, and restored when the page
// loads. An answer may say `open`: true opens it (a mission opening where its controls wait), null puts it
// back as the person left it; an answer that says what the last one said changes nothing, so a section
// the person closed stays closed until the answer says something new.
const OPEN_KEY = "prefix-lab:open";
const saidOpen = new WeakMap();  // element -> the `open` the last answer said
const byPage = new WeakSet();  // elements whose next toggle the page made, not the person

function openAs(el, open) {
  if (saidOpen.has(el) && saidOpen.get(el) === open) return;
  saidOpen.set(el, open);
  const wanted = open ?? load(OPEN_KEY)[el.dataset.remember] === true;
  if (el.open !== wanted) {
    byPage.add(el);
    el.open = wanted;
  }
}

document.addEventListener("toggle", (event) => {
  const el = event.target;
  if (!(el instanceof HTMLDetailsElement) || !el.dataset.remember) return;
  if (byPage.delete(el)) return;
  save(OPEN_KEY, { ...load(OPEN_KEY), [el.dataset.remember]: el.open });
}, true);

for (const el of document.querySelectorAll("details[data-remember]")) openAs(el, null);

// The button that had focus was redrawn (its panel's HTML replaced): focus its new self (the
// same action on the same item), else what the view marked `data-autofocus`, else the
// panel itself: not <body>.
function refocus(container, old) {
  const same = ["action", "mission", "index"].filter((k) => old.dataset?.[k] !== undefined)
    .map((k) => `[data-${k}="${CSS.escape(old.dataset[k])}"]`).join("");
  const next = (same && container.querySelector(same + ":not([disabled])")) ||
    container.querySelector("[data-autofocus]") || container;
  if (!next.matches("a, button, input, select, textarea, [tabindex]")) next.setAttribute("tabindex", "-1");
  next.focus({ preventScroll: true });
}

// -- assistive technology --------------------------------------------------------------

// Bokeh leaves a slider's handle, a spinner's buttons and a button group unnamed, and makes
// each chart's canvas a tab stop with nothing to say. After every render: each widget's parts
// take the name (and description) its second tag declares (`{aria: {label, description}}`,
// from lab/site/layout.py); a button group becomes a named group whose buttons say whether they
// are pressed; a disabled slider leaves the tab order; spinner buttons leave it too (the
// arrow keys in the box do the same); nothing inside a chart (`role=img`, named by its
// caption) is a tab stop.
function* views(view) {
  yield view;
  for (const child of view.child_views ?? []) yield* views(child);
}

function* deep(root, selector) {
  yield* root.querySelectorAll(selector);
  for (const el of root.querySelectorAll("*")) if (el.shadowRoot) yield* deep(el.shadowRoot, selector);
}

// noUiSlider says a handle's value to assistive technology rounded to one decimal (a 55% guess,
// 0.55, reads 0.6): each handle says its exact value instead, now and after every update
// (bound after noUiSlider's own, so it has the last word).
function exactValueNow(slider) {
  if (!slider?.on || slider.__labExact) return;
  slider.__labExact = true;
  const say = (_, __, values) => {
    const handles = slider.target.querySelectorAll(".noUi-handle");
    values.forEach((v, i) => handles[i]?.setAttribute("aria-valuenow", String(Number(Number(v).toPrecision(12)))));
  };
  slider.on("update.labExact", say);
  say(null, null, [].concat(slider.get(true)));
}

function nameInputs(only = null) {  // `only`: one document's views (one just drawn), else all
  if (!window.Bokeh?.index) return;
  for (const top of Bokeh.index) {
    if (only && top.model.document !== only) continue;
    for (const view of views(top)) {
      const shadow = view.el?.shadowRoot;
      if (!shadow) continue;
      if (view.el.closest("[role=img]")) {
        for (const el of deep(shadow, "[tabindex]")) el.tabIndex = -1;
        continue;
      }
      const aria = (view.model.tags ?? []).find((t) => t && typeof t === "object" && t.aria)?.aria;
      if (aria) {
        for (const el of shadow.querySelectorAll("input, select, [role=slider], .bk-btn-group")) {
          el.setAttribute("aria-label", aria.label);
          if (aria.description) el.setAttribute("aria-description", aria.description);
        }
      }
      for (const el of shadow.querySelectorAll(".bk-spin-btn")) {
        el.tabIndex = -1;
        el.setAttribute("aria-hidden", "true");
      }
      for (const group of shadow.querySelectorAll(".bk-btn-group")) {
        if (group.querySelectorAll("button").length < 2) continue;  // a lone button is an action, not a toggle
        group.setAttribute("role", "group");
        for (const b of group.querySelectorAll("button")) b.setAttribute("aria-pressed", String(b.classList.contains("bk-active")));
      }
      for (const handle of shadow.querySelectorAll("[role=slider]")) {
        const off = handle.closest("[disabled]") !== null;
        handle.tabIndex = off ? -1 : 0;
        handle.setAttribute("aria-disabled", String(off));
      }
      exactValueNow(view._noUiSlider);
    }
  }
}

// -- talking to the worker --------------------------------------------------------

// What the browser keeps for the player, sent with every request and kept from every answer
// (the view checks both): mission progress (best stars per mission), and the memo (the setup
// behind each best, the setups played, the way back; see lab/page/missionview.py).
const PROGRESS_KEY = "prefix-lab:progress";
const MEMO_KEY = "prefix-lab:memo";

function load(key) {
  try {
    return JSON.parse(localStorage.getItem(key) ?? "{}") ?? {};
  } catch {
    return {};  // storage blocked or garbled: start afresh
  }
}

function save(key, value) {
  try {
    localStorage.setItem(key, JSON.stringify(value));
  } catch {
    // storage blocked (private mode): it lasts for this page only
  }
}

let progress = load(PROGRESS_KEY);
let memo = load(MEMO_KEY);

function keep(view) {
  if (view.progress && JSON.stringify(view.progress) !== JSON.stringify(progress)) save(PROGRESS_KEY, progress = view.progress);
  if (view.memo && JSON.stringify(view.memo) !== JSON.stringify(memo)) save(MEMO_KEY, memo = view.memo);
}

// -- the simulator's worker: started, watched, replaced -------------------------------
//
// A busy worker reads no messages, and interrupting Pyodide needs a SharedArrayBuffer that
// embeds and static copies do not have, so a computation cannot be interrupted: a worker
// that is stuck is replaced. The page's state is all in the URL, so a new worker loses
// nothing. An embed's first worker may be the port of a SharedWorker that other embeds of the
// article use too (static/boot.js): it cannot be terminated from here, so when it fails this
// frame (a boot that fails or does not end, a computation stuck or dead) the frame closes its
// port and starts a dedicated worker of its own, as the full lab has; the other frames do the
// same when their own limits run out. The per-change work is bounded in Python (lab/page/view.py
// counts requests against its budget); these limits catch what that cannot: a boot that does
// not end, a worker that dies, a machine far slower than planned.
// `window.prefixLabLimits` (set before the page loads) may shorten them, for tests, say how many helper
// workers to start (`helpers`: see startHelpers), and leave the lab page's charts far from view undrawn until
// they come near (`drawAway: false`; drawRest draws them in idle time, 2-3 s of CPU on a two-core machine).
const limits = window.prefixLabLimits ?? {};
const BOOT_LIMIT_MS = limits.bootMs ?? 45_000;  // a boot taking longer has failed
const WORK_LIMIT_MS = limits.workMs ?? 20_000;  // one change computing longer is stopped, its worker replaced
const REPLACE_AFTER_MS = limits.replaceMs ?? 4_000;  // a newer change waiting behind one this old replaces the worker

const boot = window.prefixLabBoot;  // static/boot.js: the first worker, or how to start it
const WORKER = new URL("./worker.js", import.meta.url).href;
let worker = null;
let runtime = null;  // the worker's "ready": {id, shared, frames} (how many frames it has served)
let bootTimer = null;
let workTimer = null;
let goodHash = hash;  // the state of the last view applied: where a stopped change goes back to
let showing = 0;  // answers taken from the worker and not yet written and painted
let writing = Promise.resolve();  // the answer being written: the next waits for it (see onMessage)
let stopped = "";  // why the last change was stopped, shown once the new worker is ready

function startWorker(early = null) {
  const made = worker = early?.worker ?? boot.connect(WORKER, false);
  workerReady = false;
  timings.started ??= early?.startedAt ?? performance.now();
  worker.onmessage = (event) => {
    if (worker === made) onMessage(event);  // a worker given up on may still have had something queued
  };
  worker.onerror = (event) => {
    event.preventDefault?.();
    if (worker === made) workerFailed(`its worker failed (${event.message || "no reason given"})`);
  };
  clearTimeout(bootTimer);
  bootTimer = setTimeout(() => workerFailed(`it did not start within ${BOOT_LIMIT_MS / 1000} s`), BOOT_LIMIT_MS);
  if (!early) worker.postMessage({ type: "boot", wheel: new URL(wheel, location.href).href });
  if (ahead?.helpers.some((helper) => helper !== null)) worker.postMessage({ type: "ahead", warm: false });
  // The URL's own state is asked for at once, behind the boot: the worker computes it the moment it can,
  // while this thread is still busy drawing the page, and the answer waits here until it is free.
  if (timings.ready === null && !inFlight && queue.length === 0) queue.push({ id: nextId++, request: {} });
  pump(true);
  if (early) early.early.splice(0).forEach((event) => worker === made && onMessage(event));
}

// The worker cannot go on: booting failed, or it died or hung on a change. Say so in one
// line, keep what is on screen, and (if it had booted before) start a fresh one.
function workerFailed(reason, { detail = "", replaced = false } = {}) {
  const booted = timings.ready !== null;
  const shared = worker?.shared;
  clearTimeout(bootTimer);
  clearTimeout(workTimer);
  worker?.terminate();
  if (detail) console.error("prefix-lab worker:", detail);
  const lost = inFlight;
  inFlight = null;
  if (!booted && shared) {  // the shared runtime failed this frame: try one of its own before giving up
    console.info(`prefix-lab: the shared simulator failed (${reason}); this frame starts its own`);
    setState("booting", "Starting the simulator…");
    startWorker();
    return;
  }
  if (!booted) {
    settle();
    setState("error", `The simulator could not start: ${reason}. The numbers shown are the default setup's. ` +
      "Reload to try again; if it keeps failing, the site is incomplete: rebuild it (prefix-lab build).");
    return;
  }
  stopped = replaced ? "" : lost ? `That change was stopped: ${reason}. The numbers shown are the last setup that finished.`
    : `The simulator stopped: ${reason}.`;
  if (lost && !replaced && hash !== goodHash) {  // back to what is on screen, so a reload does not repeat it
    hash = goodHash;
    history.replaceState(null, "", hash ? "#" + hash : location.pathname + location.search);
  }
  setState("booting", `${stopped || `The last change was replaced: ${reason}.`} Starting the simulator again…`);
  startWorker();
}

// `booting`: the worker has not said "ready" yet, and takes the request behind its boot; its time limit
// starts once it is ready (see onMessage).
function pump(booting = false) {
  if ((!workerReady && !booting) || inFlight || queue.length === 0) return;
  inFlight = queue.shift();
  inFlight.epoch = epoch;
  inFlight.request.hash = hash;
  inFlight.request.progress = progress;
  inFlight.request.memo = memo;
  if (embedQuery) inFlight.request.embed = embedQuery;
  inFlight.sent = timings.lastSent = performance.now();
  inFlight.key = answerKey(inFlight.request);
  const known = recall(inFlight.key);
  if (known) {  // answered before: no round trip to the worker
    const id = inFlight.id;
    queueMicrotask(() => onMessage({ data: { type: "view", id, view: known, ms: 0, remembered: true } }));
    return;
  }
  worker.postMessage({ type: "view", id: inFlight.id, request: inFlight.request });
  ahead?.scheduler.asked(inFlight.key);
  if (workerReady) computing();
}

// -- answers remembered on this side ------------------------------------------------
//
// An answer is a function of the request that asked for it (the hash it starts from, the controls it
// changes, whether a slider is still moving, the progress and memo sent) and of nothing else, except in a
// mission (whose hints are due after a while: the memo's `since`), with a trace (a file the worker reads)
// and for an action (a button: it may read what is not in the request). The last answers of the other
// requests are kept here, by that request, as the worker sent them: asked again (a slider stepped back),
// the answer is written at once, with no round trip to a worker that may be busy computing ahead.
const ANSWERS_KEPT = 32;  // answers of 65-100 kB of JSON each
const answers = new Map();  // answerKey(request) -> the view the worker answered, least recently used first

function answerKey(request) {
  if (request.action || request.embed || (memo && memo.since != null)) return null;
  if (/(^|&)(trace|mission)=/.test(request.hash ?? "")) return null;  // the files it reads, or a mission's clock
  return JSON.stringify([request.hash ?? "", request.controls ?? null, Boolean(request.live), request.progress ?? {},
    request.memo ?? {}]);
}

function remember(key, view) {
  if (!key) return;
  answers.delete(key);
  answers.set(key, view);
  while (answers.size > ANSWERS_KEPT) answers.delete(answers.keys().next().value);
}

// The answer remembered for `key` (now the most recently used), or undefined.
function recall(key) {
  const view = key ? answers.get(key) : undefined;
  if (view) remember(key, view);
  return view;
}

// -- answers ahead of time: helper workers (static/scheduler.mjs) --------------------------
//
// Once the primary worker is ready, a few helper workers are started, restored from the same snapshot
// (helperCount: one on a two-core machine). While a slider or a stepper has focus or is dragged, they
// compute the requests the page would send next (one and two steps either side of it, and the value under
// a dragging pointer; until a person focuses, changes or presses anything, one step either way of the first
// few shown), from the state
// on screen, in the order the scheduler says; a finished answer goes
// into the answers remembered above, so reaching that value is a remembered answer, written at once. The
// primary computes only what is asked for (its own computing ahead is turned off): an asked-for request
// does not wait behind a speculative one. Not in an embed (its frames share one worker).
let ahead = null;  // {scheduler, helpers: [worker], jobs: [job or null], log}, once the helpers are started
let target = null;  // the control worth computing ahead for: {name, model, direction, last, pointer, live}
let dragged = null;  // {control, track} while a pointer drags a slider
let planning = false;  // a plan for the pointer's latest place waits for the next frame
const AHEAD_LOG_KEPT = 400;

async function startHelpers() {
  if (ahead || embedQuery || boot.lazy) return;
  let scheduling;
  try {
    scheduling = await import("./scheduler.mjs");
  } catch (err) {  // the page goes on without answers ahead of time
    console.info("prefix-lab: no helper workers:", String(err));
    return;
  }
  const { Scheduler, helperCount } = scheduling;
  const count = limits.helpers ?? helperCount(navigator.hardwareConcurrency, navigator.deviceMemory);
  if (!count) return;
  const log = [];
  ahead = { neighbours: scheduling.neighbours, helpers: [], jobs: [], log };
  ahead.scheduler = new Scheduler({
    helpers: count,
    now: () => performance.now(),
    defer: (fn) => setTimeout(fn),  // jobs start in a later task: a change asked for in this one goes out first
    uselessAfterMs: 3000,  // a helper restored afresh takes about a second of CPU: worth it for a job far longer
    start: (i, job) => {
      ahead.jobs[i] = job;
      ahead.helpers[i].postMessage({ type: "view", id: nextId++, request: job.request });
    },
    replace: (i) => startHelper(i),
    log: (event, detail) => {
      log.push({ event, ...detail, at: performance.now() });
      if (log.length > AHEAD_LOG_KEPT) log.splice(0, log.length - AHEAD_LOG_KEPT / 2);
    },
  });
  worker.postMessage({ type: "ahead", warm: false });
  for (let i = 0; i < count; i++) startHelper(i);
  planAhead();
}

// Helper `i`, started afresh (a stuck one is terminated first).
function startHelper(i) {
  ahead.helpers[i]?.terminate();
  ahead.jobs[i] = null;
  const helper = ahead.helpers[i] = boot.connect(WORKER, false);
  helper.onmessage = (event) => {
    if (ahead.helpers[i] === helper) onHelperMessage(i, event.data);
  };
  helper.onerror = (event) => {
    event.preventDefault?.();
    if (ahead.helpers[i] === helper) helperLost(i);
  };
  helper.postMessage({ type: "boot", wheel: new URL(wheel, location.href).href });
  helper.postMessage({ type: "ahead", warm: false });
}

function onHelperMessage(i, msg) {
  const job = ahead.jobs[i];
  if (msg.type === "ready") {
    ahead.scheduler.ready(i);
  } else if (msg.type === "view" && job) {
    ahead.jobs[i] = null;
    remember(job.key, msg.view);
    ahead.scheduler.finished(i, job.key);
  } else if (msg.type === "error" && msg.phase === "boot") {
    helperLost(i);
  } else if (msg.type === "error" && job) {
    ahead.jobs[i] = null;
    ahead.scheduler.finished(i, job.key);
  }
}

// A helper that failed is not started again: the page goes on with the others, and with none left the
// primary computes ahead on its own again, as it did before the helpers started.
function helperLost(i) {
  ahead.helpers[i].terminate();
  ahead.helpers[i] = null;
  ahead.jobs[i] = null;
  ahead.scheduler.lost(i);
  if (ahead.helpers.every((helper) => helper === null)) worker.postMessage({ type: "ahead", warm: true });
}

// Every slider and stepper on the page (a number value and step, and a `ctl:` tag): element -> the control its
// view shows, {name, model, view}, document by document in the order they were drawn.
function controls() {
  const found = new Map();
  if (!window.Bokeh?.index) return found;
  for (const top of Bokeh.index) {
    for (const view of views(top)) {
      const model = view.model;
      const name = (model.tags ?? []).find((t) => typeof t === "string" && t.startsWith("ctl:"));
      if (name && typeof current(model, "step") === "number" && typeof current(model, "value") === "number") {
        found.set(view.el, { name, model, view });
      }
    }
  }
  return found;
}

// The control a focus or a pointer is on: the nearest control along `path` (an event's composed path, the
// element first), or null.
function controlAt(path) {
  const found = controls();
  for (const el of path) if (found.has(el)) return found.get(el);
  return null;
}

// Until a person focuses, changes or presses anything, the helpers' jobs are one step either way of the first
// FIRST_SHOWN sliders and steppers shown. A first change to one finds its answer ready, and whatever the
// primary works out first runs on code the helpers' work has already warmed: a new setup the primary
// computed first after a boot took 0.6-1.0 s, and 0.2-0.3 s once a helper had computed four (most likely
// because the page's workers share the wasm's optimised code).
const FIRST_SHOWN = 3;
let touched = false;  // a control moved, a button pressed or a slider focused: from then on only `target` is
// computed ahead for (not the first ones again after every answer, for a person who only ticks and picks)

function firstShown() {
  return [...controls().values()].filter((c) => c.view.el.isConnected && c.view.el.getClientRects().length)
    .slice(0, FIRST_SHOWN).map((c) => ({ ...c, direction: 1, last: null, live: false, pointer: null }));
}

// Plan the helpers' jobs for the control worth computing ahead for (before any had focus: the first ones
// shown), as the page would ask for them now (the hash on screen, the progress and memo it holds); nothing
// when there is none, or in a state whose answers are not remembered (answerKey).
function planAhead() {
  if (!ahead) return;
  if (!workerReady) return ahead.scheduler.clear();
  const jobs = target ? jobsAround(target) : touched ? [] : firstShown().flatMap((c) => jobsAround(c, 1));
  // `have` marks each answer held for a setup next to the control as just used, so the memory forgets these
  // last (a slider stepped up and back again found its early values forgotten, after 32 newer answers).
  ahead.scheduler.plan(jobs, (key) => Boolean(recall(key)));
}

// The requests for the values next to `aim`'s (a target: {name, model, direction, last, live, pointer}), nearest
// first, at most `steps` steps away (a pointer's value too), each as {key, request}.
function jobsAround(aim, steps = Infinity) {
  const { name, model } = aim;
  const value = model.value;
  if (aim.last !== null && value !== aim.last) aim.direction = value > aim.last ? 1 : -1;
  aim.last = value;
  const start = current(model, "start") ?? current(model, "low");
  const end = current(model, "end") ?? current(model, "high");
  if (typeof start !== "number" || typeof end !== "number") return [];
  const values = ahead.neighbours({ value, start, end, step: model.step, direction: aim.direction,
    pointer: aim.pointer }).filter((v) => Math.abs(v - value) <= steps * model.step * (1 + 1e-9));
  const jobs = [];
  for (const v of values) {
    const request = { controls: { [name]: v }, live: aim.live, hash, progress, memo };
    const key = answerKey(request);
    if (key) jobs.push({ key, request });
  }
  return jobs;
}

function aimAt(control, live = false, pointer = null) {
  if (control) touched = true;
  if (!control) {
    target = null;
  } else if (target?.name !== control.name) {
    target = { ...control, direction: 1, last: null, live, pointer };
  } else {
    Object.assign(target, { live, pointer });
  }
  planAhead();
}

document.addEventListener("focusin", (event) => {  // a handle dragged takes focus too: it stays a drag
  if (!dragged) aimAt(controlAt(event.composedPath()));
});
document.addEventListener("focusout", (event) => {  // to another element: its focusin says where
  if (!event.relatedTarget) aimAt(null);
});

// Home and End on a slider's handle: noUiSlider, under Bokeh's sliders, takes them to the ends the slider was
// built with, even once its range was stretched (a trace's, a link's value outside it). The page takes those
// two keys and sets the slider's own ends, moving it as a key does (live, then settled).
document.addEventListener("keydown", (event) => {
  if (event.key !== "Home" && event.key !== "End") return;
  const path = event.composedPath();
  const control = path.some((el) => el.classList?.contains("noUi-handle")) ? controlAt(path) : null;
  if (!control || control.model.disabled) return;
  event.preventDefault();
  event.stopPropagation();  // before the handle's own listener
  const to = event.key === "End" ? control.model.end : control.model.start;
  control.model.value = to;
  control.model.value_throttled = to;
}, true);

// A slider's handle dragged: the live values next to it, and the one under the pointer, from where the
// pointer sits on the slider's track.
document.addEventListener("pointerdown", (event) => {
  const path = event.composedPath();
  const track = path.find((el) => el.classList?.contains("noUi-target"));
  const control = track && controlAt(path);
  dragged = control ? { control, track } : null;
  if (dragged) aimAt(control, true);
}, true);
document.addEventListener("pointermove", (event) => {
  if (!dragged || planning) return;
  planning = true;
  const { clientX } = event;
  requestAnimationFrame(() => {  // once a frame at most
    planning = false;
    if (!dragged) return;
    const { model } = dragged.control;
    const box = dragged.track.getBoundingClientRect();
    const share = Math.min(1, Math.max(0, (clientX - box.left) / (box.width || 1)));
    const pointer = model.start + Math.round((share * (model.end - model.start)) / model.step) * model.step;
    aimAt(dragged.control, true, pointer);
  });
}, true);
document.addEventListener("pointerup", () => {
  if (!dragged) return;
  const control = dragged.control;
  dragged = null;
  aimAt(control.view.el.shadowRoot?.activeElement ? control : null);  // a handle keeps its focus once let go
}, true);

function computing() {
  setState("busy", "Simulating…");
  clearTimeout(workTimer);
  workTimer = setTimeout(() => workerFailed(`it took longer than ${WORK_LIMIT_MS / 1000} s`), WORK_LIMIT_MS);
}

function enqueue(request) {
  if (!worker) boot.start();
  const last = queue[queue.length - 1];
  if (request.controls && last && last.request.controls) {
    Object.assign(last.request.controls, request.controls);  // a slider drag: keep only the latest values
    last.request.live = request.live;
  } else {
    queue.push({ id: nextId++, request });
  }
  if (!workerReady && timings.ready === null && root.dataset.lab !== "error") {  // answered first once it is ready
    setState("booting", "Your change is queued: the simulator is starting…");
  }
  if (workerReady && inFlight && !inFlight.progressed && performance.now() - inFlight.sent > REPLACE_AFTER_MS) {
    workerFailed(`a newer one came while it had run ${Math.round((performance.now() - inFlight.sent) / 1000)} s`,
      { replaced: true });
    return;
  }
  pump();
}

function settleState() {
  if (queue.length) {
    pump();
  } else if (!inFlight && showing === 0) {  // else the next change is being worked out, or an answer written
    if (timings.ready === null) {
      timings.ready = performance.now();
      idle(startHelpers);  // their boot does not compete with what comes right after `ready`
    }
    settle();
    catchUp();
    setState("ready", "Ready: every change re-runs the same traffic in your browser.");
  }
}

async function onMessage(event) {
  const msg = event.data;
  if (msg.type === "ready") {
    clearTimeout(bootTimer);
    workerReady = true;
    timings.bootMs = msg.bootMs;
    runtime = msg.runtime ?? null;
    for (const [key, file] of traceFiles) worker.postMessage({ type: "trace", key, file });  // a new worker: again
    if (inFlight) {  // the URL's own state, asked for with the boot: it is being computed from now
      inFlight.sent = performance.now();
      computing();
    } else if (queue.length) pump();
    else setState("ready", stopped);  // a new worker after a stop: nothing to redo
  } else if (msg.type === "progress") {  // a long replay is alive: no limit stops it, no newer change replaces it
    if (inFlight) inFlight.progressed = true;
    clearTimeout(workTimer);
    workTimer = setTimeout(() => workerFailed(`it took longer than ${WORK_LIMIT_MS / 1000} s`), WORK_LIMIT_MS);
    showProgress(msg);
  } else if (msg.type === "view") {
    timings.firstAnswer ??= { sent: msg.at - performance.timeOrigin, taken: performance.now() };
    if (!msg.remembered) clearTimeout(workTimer);
    showProgress(null);
    const done = inFlight;
    inFlight = null;
    if (done && !msg.remembered) {
      remember(done.key, msg.view);
      ahead?.scheduler.answered(done.key);
    }
    if (done && done.epoch !== epoch) {  // the URL was edited meanwhile: its state wins
      pump();
      return;
    }
    // The state this answer leads to, at once: a change made while the page waits to draw it is a change to it.
    hash = goodHash = msg.view.hash;
    stopped = "";
    keep(msg.view);
    if (location.hash.slice(1) !== hash) history.replaceState(null, "", hash ? "#" + hash : location.pathname + location.search);
    showing += 1;
    // The headline and the rest of the plain HTML at once, in this task (a remembered answer is taken in the
    // task of the key that asked for it): painted in the next frame, before the charts are redrawn.
    applyDom(msg.view.patches);
    planAhead();  // the setups next to this one, from the state just answered
    const before = writing;  // the charts are written one answer after another, each to its event
    let doneWriting = null;
    writing = new Promise((resolve) => { doneWriting = resolve; });
    try {
      await before;
      await whenBokehReady();
      // A change that came meanwhile (a slider still moving) goes to the worker now, against the state just
      // answered: it is worked out while this answer is written and painted, not after.
      if (workerReady) pump();
      const moving = queue.length > 0 || inFlight !== null;
      await nextPaint();
      const { wrote, held } = applyModels(msg.view.patches, !moving);  // a control still moving is not written back
      document.querySelector(".controls.pending")?.classList.remove("pending");
      await nextPaint();  // let Bokeh paint
      nameInputs();
      if (done) {
        timings.changes.push({ sent: done.sent, applied: performance.now(), computeMs: msg.ms, written: wrote, held,
          remembered: Boolean(msg.remembered) });
      }
      if (timings.changes.length > 500) timings.changes.splice(0, 250);  // a long session: keep the recent ones
    } finally {
      showing -= 1;
      doneWriting();  // the next answer goes on once this one's event is out (the rest of this turn)
    }
    settleState();
    document.dispatchEvent(new CustomEvent("prefix-lab:view", { detail: msg.view }));
    if (msg.view.fetch) fetchTrace(msg.view.fetch);
  } else if (msg.type === "error" && msg.phase === "boot") {
    workerFailed(msg.message, { detail: msg.detail });
  } else if (msg.type === "error") {  // one change failed in Python; the worker is fine: drop it, go on with the next
    clearTimeout(workTimer);
    inFlight = null;
    console.error("prefix-lab worker:", msg.detail || msg.message);
    if (hash !== goodHash) {  // the next change applies to what is on screen, not to the state that failed
      hash = goodHash;
      history.replaceState(null, "", hash ? "#" + hash : location.pathname + location.search);
    }
    if (statusText) statusText.textContent = `That change could not be simulated (${msg.message}); the numbers shown are the last good ones.`;
    if (queue.length) pump();
    else if (showing === 0) {
      root.dataset.lab = "ready";
      catchUp();
    }
  }
}

// An embed shows the figures and controls its query names (?figure=NAME,NAME&controls=KEY,KEY):
// the view checks the names and says which to show; until its first answer, the figures not named are
// hidden here and the controls wait, so the page does not flash what it will not show.
const embedQuery = document.querySelector(".lab.embed") ? queryOf(new URLSearchParams(location.search)) : null;

function queryOf(search) {
  const query = {};
  for (const param of ["figure", "controls"]) if (search.has(param)) query[param] = search.get(param);
  if (query.figure) {
    const named = query.figure.split(",").map((n) => n.trim());
    for (const el of document.querySelectorAll("[data-figure]")) el.hidden = !named.includes(el.dataset.figure);
  }
  if (Object.keys(query).length) document.querySelector(".controls")?.classList.add("pending");
  return query;
}

// An embed that has not been shown yet has no worker: boot.js calls back when it starts one (shown or
// touched), and a change made before then (a control, the URL) starts it at once (see enqueue).
if (boot.worker) startWorker(boot);
else boot.onstart = startWorker;

// -- your own traffic: a trace file chosen or dropped --------------------------------------
//
// The File goes to the worker, which reads it in slices (lab/page/tracepage.py); the view plays it
// while the URL says `trace=<its name>`. Nothing is uploaded: the file stays in the browser.
const traceBar = document.getElementById("trace-progress");
const traceStatus = document.getElementById("trace-status");

function useTrace(file) {
  if (!file) return;
  giveTrace("user", file);
  if (traceStatus) traceStatus.textContent = `Reading ${file.name} (${(file.size / 1e6).toFixed(1)} MB)…`;
  enqueue({ action: { type: "trace", name: file.name } });
}

function giveTrace(key, file) {
  traceFiles.set(key, file);
  worker?.postMessage({ type: "trace", key, file });  // else sent when the worker is ready
}

// A mission that replays a trace: its slice is on this site; fetch it once, then ask again.
const fetching = new Set();
async function fetchTrace({ key, url, name, missing }) {
  if (fetching.has(key)) return;
  fetching.add(key);
  try {
    const response = await fetch(url);
    if (!response.ok) throw new Error(`HTTP ${response.status}`);
    giveTrace(key, new File([await response.blob()], name));
    enqueue({});
  } catch (err) {
    if (statusText) statusText.textContent = missing ? `${url} could not be loaded (${err.message}): ${missing}.` :
      `This mission's traffic (${url}) could not be loaded (${err.message}): ` +
      "the site was built without the public traces. Rebuild it with them beside the project.";
  }
}

function showProgress(msg) {
  if (!traceBar) return;
  traceBar.hidden = !msg;
  if (!msg) {
    if (traceStatus) traceStatus.textContent = "";
    return;
  }
  const share = msg.size ? Math.min(1, msg.read / msg.size) : 0;
  traceBar.value = msg.phase === "checking" ? share / 2 : 0.5 + share / 2;
  if (traceStatus) {
    traceStatus.textContent = `${msg.phase === "checking" ? "Checking" : "Replaying"}: ` +
      `${msg.requests.toLocaleString("en")} requests…`;
  }
}

document.getElementById("trace-file")?.addEventListener("change", (event) => useTrace(event.target.files?.[0]));
const dropZone = document.getElementById("trace-drop");
if (dropZone) {
  dropZone.addEventListener("dragover", (event) => {
    event.preventDefault();
    dropZone.classList.add("over");
  });
  dropZone.addEventListener("dragleave", () => dropZone.classList.remove("over"));
  dropZone.addEventListener("drop", (event) => {
    event.preventDefault();
    dropZone.classList.remove("over");
    useTrace(event.dataTransfer?.files?.[0]);
  });
}

// -- your own GPU: a fit file (prefix-lab profile fit) chosen ------------------------------
//
// A fit is a few hundred bytes of JSON: its text goes to the view, which checks it and puts its
// coefficients in the setup, so the URL carries them. Nothing is uploaded.
const GPU_FIT_MAX_BYTES = 1 << 20;

async function useGpuFit(file) {
  if (!file) return;
  const status = document.getElementById("gpu-fit-status");
  if (file.size > GPU_FIT_MAX_BYTES) {
    if (status) status.textContent = `${file.name} is ${(file.size / 1e6).toFixed(1)} MB: a GPU fit is a few ` +
      "hundred bytes of JSON, as prefix-lab profile fit writes it.";
    return;
  }
  if (status) status.textContent = `Reading ${file.name}…`;
  enqueue({ action: { type: "gpu_fit", name: file.name, text: await file.text() } });
}

document.getElementById("gpu-fit-file")?.addEventListener("change", (event) => {
  useGpuFit(event.target.files?.[0]);
  event.target.value = "";  // the same file chosen again is a change again
});

// -- from the page -----------------------------------------------------------------

// A widget changed. Some widgets re-announce a value we wrote a moment later (a slider
// clamping to a new range, a callback Bokeh compiles on first use); that is no change of the
// person's, so it is dropped. A slider reports `live` while it moves (its value) and once
// more, settled, when it is let go or a key moves it (its value_throttled, which every
// answer empties): the view scores only settled setups. Changes made in one go (a key press
// moves a slider and settles it) travel as one request, whose last change says whether it
// is live.
let batch = null;

function changed(name, value, prop, live = false) {
  if (applying || value === null) return;
  if (prop && written.has(name) && same(written.get(name)[prop], value)) return;  // an echo of the page's write
  touched = true;
  if (!batch) {
    batch = { controls: {}, live };
    queueMicrotask(() => {
      const request = batch;
      batch = null;
      enqueue(request);
    });
  }
  batch.controls[name] = value;
  batch.live = live;
}

// A button pressed. `inputNames` are the widgets whose values the action reads (the
// layout declares them with the button), sent along as `inputs`.
function action(request, inputNames = []) {
  if (applying) return;
  touched = true;
  for (const name of inputNames) if (holders.has(name)) make(holders.get(name));
  const index = models();
  const inputs = {};
  for (const name of inputNames) {
    const model = index.get(name);
    if (model) inputs[name] = model.value;
  }
  enqueue({ action: { ...request, inputs } });
}

document.addEventListener("click", (event) => {
  requestAnimationFrame(() => nameInputs());  // a button group's pressed button changes at once
  const button = event.target.closest("[data-action]");
  if (!button) return;
  const request = { type: button.dataset.action };
  for (const [key, value] of Object.entries(button.dataset)) {
    if (key !== "action") request[key] = /^-?\d+$/.test(value) ? Number(value) : value;
  }
  action(request);
});

window.addEventListener("hashchange", () => {
  const next = location.hash.slice(1);
  if (next !== hash) {
    hash = next;
    epoch += 1;
    queue.length = 0;  // changes made against the old state no longer apply
    enqueue({});
  }
});

// Embedded in an article: tell the parent page how tall we are. The height is where the content
// ends (the lab's box and the body's margin below it), not the document's scroll height, which is
// at least the frame's own height; and the box is what is observed, as the body is sized by the frame
// and does not grow with its content. Reported at once, each time the box changes size, once Bokeh has
// laid the charts out, and after every answer.
if (window.parent !== window) {
  const content = document.querySelector(".lab") ?? document.body;
  const report = () => {
    const below = parseFloat(getComputedStyle(document.body).marginBottom || "0");
    const height = Math.ceil(content.getBoundingClientRect().bottom + window.scrollY + below);
    window.parent.postMessage({ type: "prefix-lab:height", height }, "*");
  };
  new ResizeObserver(report).observe(content);
  whenBokehReady().then(report);
  document.addEventListener("prefix-lab:view", () => nextPaint().then(report));
  report();
}

// `undrawn`: the documents whose place is shown but not drawn yet, or drawn with changes still held (0 once
// the whole page shows the last answer).
// `ahead`: the helper workers' count and the scheduler's log ([{event, helper, key, why, keys, at}]), for tests.
window.prefixLab = {
  changed, action, timings, get hash() { return hash; }, get runtime() { return runtime; },
  get ahead() { return ahead && { helpers: ahead.helpers.filter(Boolean).length, log: ahead.log, remembered: answers.size }; },
  get undrawn() {
    const held = new Set([...deferred.values()].map((h) => h.d));
    return (pageDocs ?? []).filter((d) => (!d.drawn && displayed(d)) || held.has(d)).length;
  },
};

// The headline numbers are in the HTML: they are on screen at the first contentful paint.
// The charts are drawn when every document on screen is (drawnOnScreen); under Bokeh's own embed, when its
// document goes idle.
new PerformanceObserver((list) => {
  for (const entry of list.getEntries()) if (entry.name === "first-contentful-paint") timings.firstNumbers = entry.startTime;
}).observe({ type: "paint", buffered: true });
whenBokehReady().then(() => {
  if (!pageDocs) timings.chartsDrawn = performance.now();  // else when what is on screen is drawn (drawnOnScreen)
  nameInputs();
});

// -- workshop room (lab/server/roomserve.py, static/room.js) ------------------------------------------
// Only a browser that joined a room through the room's join page holds `prefix-lab:room` in
// localStorage; only then is the room's script loaded (from the room server, not the site).
// Everywhere else, a static copy included, nothing more is requested and nothing is sent.
try {
  if (localStorage.getItem("prefix-lab:room")) {
    import(new URL("room/room.js", document.baseURI).href)
      .catch(() => {  // no room here (a static copy): ask no more
        try {
          localStorage.removeItem("prefix-lab:room");
        } catch {
          // storage blocked meanwhile: nothing kept
        }
      });
  }
} catch {
  // storage blocked: no room
}
