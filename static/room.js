// prefix-lab room: the participant's side of a workshop room (lab/server/roomserve.py).
//
// bridge.js loads this file only when localStorage holds a room membership, which only the
// room's join page (/room/join) writes, so a static copy of the site never loads it and sends
// nothing. It reports the player's progress, the same numbers the page keeps in localStorage
// (best stars by mission, the setup behind each, the mission shown now), whenever they change,
// at most every half second; each report is whole, so one that is lost is made good by the
// next. It also shows the mission the facilitator opened for everyone, which the player may
// open or dismiss. document.documentElement.dataset.room says where it stands: "joined" (the
// room knows this browser), "sent" (the last report was stored), "retrying" (the server was away,
// busy, or could not store it: the same state goes again), or "left".

const KEY = "prefix-lab:room";
const base = new URL("room/", document.baseURI);
const root = document.documentElement;
let member = read(KEY, null);
let lastSent = "";  // the last report the room stored, as JSON without its seq
let pending = null;  // a timer: a report is due
let sending = false;
let retryMs = 1000;

function read(key, fallback) {
  try {
    return JSON.parse(localStorage.getItem(key) ?? "null") ?? fallback;
  } catch {
    return fallback;
  }
}

function keep() {
  try {
    localStorage.setItem(KEY, JSON.stringify(member));
  } catch {
    // storage blocked: the membership lasts for this page
  }
}

function api(path, options = {}) {
  return fetch(new URL("api/" + path, base), {
    ...options,
    headers: { "Content-Type": "application/json", Authorization: `Bearer ${member.id}.${member.secret}` },
  });
}

// -- what the page shows: a line saying who you are in the room, and the facilitator's word ----------

const bar = document.createElement("div");
bar.className = "room-bar";
bar.setAttribute("role", "region");
bar.setAttribute("aria-label", "Workshop room");
const who = document.createElement("p");
who.className = "room-who";
const news = document.createElement("div");
news.className = "room-news";
news.setAttribute("role", "status");
news.setAttribute("aria-live", "polite");
bar.append(who, news);

function show() {
  if (!document.querySelector("link[data-room]")) {
    const style = document.createElement("link");
    style.rel = "stylesheet";
    style.href = new URL("room.css", base).href;
    style.dataset.room = "";
    document.head.append(style);
  }
  document.body.prepend(bar);
  who.textContent = `In the workshop room as ${member.name}. Your progress goes to the facilitator.`;
}

function leave(text) {
  try {
    localStorage.removeItem(KEY);
  } catch {
    // nothing to forget
  }
  root.dataset.room = "left";
  news.replaceChildren();
  who.textContent = text + " ";
  const again = document.createElement("a");
  again.href = new URL("join", base).href;
  again.textContent = "Join the room again";
  who.append(again);
}

function announce(open) {
  news.replaceChildren();
  if (!open || open.id === member.dismissed) return;
  const line = document.createElement("p");
  line.className = "room-open";
  line.dataset.mission = open.mission;
  line.textContent = `Your facilitator opened mission ${open.n}: ${open.title}. `;
  const go = document.createElement("button");
  go.type = "button";
  go.textContent = `Go to mission ${open.n}`;
  go.addEventListener("click", () => {
    dismiss(open);
    goTo(open.mission);
  });
  const later = document.createElement("button");
  later.type = "button";
  later.textContent = "Dismiss";
  later.addEventListener("click", () => dismiss(open));
  line.append(go, " ", later);
  news.append(line);
}

function dismiss(open) {
  member.dismissed = open.id;
  keep();
  news.replaceChildren();
}

// The mission may still be locked for this player: open every mission (`unlock=all`), then
// choose it through the page's own action, which loads its broken start so that stars count.
function goTo(mission) {
  const parts = location.hash.slice(1).split("&").filter((p) => p && !/^(mission|unlock)=/.test(p));
  const next = [...parts, "unlock=all"].join("&");
  const choose = () => window.prefixLab.action({ type: "select_mission", mission });
  if (next === location.hash.slice(1)) {
    choose();
  } else {
    document.addEventListener("prefix-lab:view", choose, { once: true });
    location.hash = next;
  }
}

// -- reports ---------------------------------------------------------------------------------

// Everything the room is told: best stars and the setup behind them for every mission with a
// star, and the mission on screen (which also counts as opened).
function state(view) {
  const progress = view?.progress ?? read("prefix-lab:progress", {});
  const best = (view?.memo ?? read("prefix-lab:memo", {})).best ?? {};
  const hash = view?.hash ?? location.hash.slice(1);
  const current = new URLSearchParams(hash).get("mission") || null;
  const missions = {};
  for (const [id, stars] of Object.entries(progress)) {
    if (stars > 0 && typeof best[id] === "string") missions[id] = { stars, setup: best[id] };
  }
  return { current, missions };
}

let latest = state(null);

function due(view) {
  latest = state(view);
  if (JSON.stringify(latest) === lastSent || pending) return;
  pending = setTimeout(send, 500);
}

async function send() {
  pending = null;
  if (sending) return;
  const body = JSON.stringify(latest);
  if (body === lastSent) return;
  sending = true;
  member.seq = (member.seq ?? 0) + 1;
  keep();
  let wait = 0;
  try {
    const response = await api("report", { method: "POST", body: JSON.stringify({ seq: member.seq, ...latest }) });
    const answer = await response.json().catch(() => ({}));
    if (response.ok) {
      if (answer.unchecked) console.info("prefix-lab room: stars the room could not check:", answer.unchecked);
      lastSent = body;
      retryMs = 1000;
      root.dataset.room = "sent";
      root.dataset.roomSeq = String(member.seq);
    } else if (response.status === 409) {  // another tab of this browser reported meanwhile
      member.seq = answer.seq ?? member.seq;
      keep();
    } else if (response.status === 401) {
      leave("The room no longer knows this browser (the facilitator may have cleared it).");
      return;
    } else if (response.status === 429 || response.status >= 500) {
      // busy, or the room cannot store it now (its disk is full): nothing was stored, so the same state again
      wait = 1000 * Number(response.headers.get("Retry-After") || 0) || retryMs;
      retryMs = Math.min(retryMs * 2, 30_000);
      root.dataset.room = "retrying";
    } else {  // refused as it is: say so in the console and do not repeat it
      console.warn("prefix-lab room: report refused:", answer.error ?? response.status);
      lastSent = body;
    }
  } catch {
    wait = retryMs;  // the server is away (restarting?): try again, less often each time
    retryMs = Math.min(retryMs * 2, 30_000);
    root.dataset.room = "retrying";
  } finally {
    sending = false;
  }
  if (JSON.stringify(latest) !== lastSent) pending = setTimeout(send, Math.max(wait, 500));
}

// -- start -----------------------------------------------------------------------------------

async function start() {
  let me;
  try {
    const response = await api("me");
    if (response.status === 401) return leave("The room no longer knows this browser.");
    if (!response.ok) {  // not a room server (a static copy on the same address): forget it, send nothing more
      try {
        localStorage.removeItem(KEY);
      } catch {
        // storage blocked: nothing kept
      }
      return;
    }
    me = await response.json();
  } catch {
    setTimeout(start, 5000);  // the server is away: try again
    return;
  }
  member.seq = Math.max(member.seq ?? 0, me.seq);
  keep();
  root.dataset.room = "joined";
  show();
  announce(me.open);
  document.addEventListener("prefix-lab:view", (event) => due(event.detail));
  due(null);
  const events = new EventSource(new URL("api/events", base));
  events.addEventListener("mission", (event) => announce(JSON.parse(event.data)));
}

if (member?.id && member?.secret) start();
