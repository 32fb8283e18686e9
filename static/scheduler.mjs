// prefix-lab scheduler: which speculative answers the helper workers compute, and when.
//
// The page's own worker (the "primary") computes what the person asks for; it is never given a
// speculative job, so an asked-for answer never waits behind one. A few helper workers, restored
// from the same snapshot, compute answers ahead of time: the setups one and two steps either side of
// the slider or stepper that has focus or is being dragged, or, until a person does anything, one step
// either way of the first few shown (the bridge plans them, see plan()).
// A Pyodide computation cannot be interrupted (the page has no SharedArrayBuffer), so:
// - an asked-for request goes out first: `asked()` is called before any speculative job is started
//   in the same turn (plan() only starts jobs in a later microtask);
// - a queued speculative job that the latest plan no longer holds is dropped, never started;
// - a helper running a job that is no longer planned, for longer than `uselessAfterMs`, while
//   planned jobs wait, is replaced (the bridge terminates it and starts a fresh one).
// Memory is bounded: at most `queueLimit` jobs wait, and the bridge keeps a bounded answer cache.
//
// Plain JavaScript with no DOM, no Worker and no clock of its own (`now` and `defer` are given), so
// tests/site/test_scheduler.py drives it under Node and checks the order of its events.

// How many helper workers: one on a two-core machine (or fewer cores), else one fewer than the cores,
// at most three; none with under 1 GB of memory, one with under 4 GB (navigator.deviceMemory rounds down).
export function helperCount(cores, memoryGb) {
  let count = !cores || cores <= 2 ? 1 : Math.min(cores - 1, 3);
  if (typeof memoryGb === "number") {
    if (memoryGb < 1) count = 0;
    else if (memoryGb < 4) count = Math.min(count, 1);
  }
  return count;
}

// The setups a slider or stepper at `value` would reach next: one step either side, then two, the way it
// last moved first; and `pointer` (the value under a dragging pointer) before them all. Values outside
// start..end are left out, and so is `value` itself.
export function neighbours({ value, start, end, step, direction = 1, pointer = null }) {
  const way = direction < 0 ? -1 : 1;
  const out = [];
  const add = (v) => {
    const rounded = Number.isInteger(step) && Number.isInteger(value) ? Math.round(v) : Number(v.toFixed(10));
    if (rounded >= start - step / 2 && rounded <= end + step / 2 && rounded !== value && !out.includes(rounded)) {
      out.push(rounded);
    }
  };
  if (pointer !== null && pointer !== undefined) add(pointer);
  for (const n of [1, 2]) {
    add(value + way * n * step);
    add(value - way * n * step);
  }
  return out;
}

export class Scheduler {
  // start(helper, job): send `job` ({key, request}) to helper `helper` (an index);
  // replace(helper): terminate it and start a fresh one (which calls ready() when booted);
  // log(event, detail): every decision, for tests and the console.
  constructor({ helpers, start, replace, now, defer = queueMicrotask, uselessAfterMs = 1000, queueLimit = 8,
    log = () => {} }) {
    this.slots = Array.from({ length: helpers }, () => ({ ready: false, job: null }));
    this.queue = [];  // planned jobs not started yet, next first
    this.planned = new Set();  // keys of the latest plan
    this.done = new Set();  // keys whose answers the bridge has (it says so in plan's `have`)
    this.askedKey = null;  // the key the primary is computing, if any
    Object.assign(this, { start, replace, now, defer, uselessAfterMs, queueLimit, log });
    this.pumping = false;
  }

  // A helper has booted (or rebooted) and can take a job.
  ready(helper) {
    this.slots[helper].ready = true;
    this.slots[helper].job = null;
    this.log("ready", { helper });
    this.later();
  }

  // The primary was just sent an asked-for request with this key: nothing planned for the same key
  // starts on a helper (it would only repeat the primary's work).
  asked(key) {
    this.askedKey = key;
    this.log("asked", { key });
    this.dropWhere((job) => job.key === key, "asked for");
  }

  // The primary answered the asked-for request.
  answered(key) {
    if (this.askedKey === key) this.askedKey = null;
  }

  // The jobs worth computing now, most useful first ([{key, request}]); `have(key)` says whether the bridge
  // holds an answer for a key already. Replaces the last plan: queued jobs it no longer holds are dropped.
  plan(jobs, have = () => false) {
    const wanted = jobs.filter((job) => !have(job.key) && job.key !== this.askedKey && !this.running(job.key))
      .slice(0, this.queueLimit);
    this.planned = new Set(jobs.map((job) => job.key));
    const keep = new Set(wanted.map((job) => job.key));
    this.dropWhere((job) => !keep.has(job.key), "no longer planned");
    const queued = new Set(this.queue.map((job) => job.key));
    for (const job of wanted) if (!queued.has(job.key)) this.queue.push({ ...job });
    const order = wanted.map((job) => job.key);
    this.queue.sort((a, b) => order.indexOf(a.key) - order.indexOf(b.key));
    this.log("plan", { keys: this.queue.map((job) => job.key) });
    this.later();
  }

  // Nothing is worth computing ahead any more (focus left every slider).
  clear() {
    this.plan([]);
  }

  // A helper finished its job (answer or error): it is free again.
  finished(helper, key) {
    const slot = this.slots[helper];
    if (!slot.job || slot.job.key !== key) return;
    slot.job = null;
    this.log("finished", { helper, key });
    this.later();
  }

  // A helper died or failed to boot: it takes no job until it is ready again.
  lost(helper) {
    const slot = this.slots[helper];
    slot.ready = false;
    slot.job = null;
    this.log("lost", { helper });
  }

  running(key) {
    return this.slots.some((slot) => slot.job?.key === key);
  }

  // Start queued jobs on free helpers; replace a helper stuck in a job no longer planned.
  pump() {
    this.pumping = false;
    for (const [helper, slot] of this.slots.entries()) {
      const job = slot.job;
      if (job && !this.planned.has(job.key) && this.queue.length && this.now() - job.startedAt > this.uselessAfterMs) {
        slot.ready = false;
        slot.job = null;
        this.log("replace", { helper, key: job.key });
        this.replace(helper);
      }
    }
    for (const [helper, slot] of this.slots.entries()) {
      if (!this.queue.length) break;
      if (!slot.ready || slot.job) continue;
      const job = this.queue.shift();
      slot.job = { ...job, startedAt: this.now() };
      this.log("start", { helper, key: job.key });
      this.start(helper, job);
    }
  }

  // Jobs start in a later microtask, so that an asked-for request made in the same turn goes out first.
  later() {
    if (this.pumping) return;
    this.pumping = true;
    this.defer(() => this.pump());
  }

  dropWhere(test, why) {
    const kept = [];
    for (const job of this.queue) {
      if (test(job)) this.log("drop", { key: job.key, why });
      else kept.push(job);
    }
    this.queue = kept;
  }
}
