// prefix-lab room: the facilitator's page (lab/server/roomserve.py). Follows the room live over
// server-sent events (`room`, the whole room as JSON, after every change) and writes it into
// the page as text: a participant's name never becomes HTML. document.documentElement.dataset
// says where it stands: `room` is "live" or "reconnecting", `updates` counts the snapshots drawn.

const root = document.documentElement;
const token = new URLSearchParams(location.search).get("token") ?? "";
const status = document.getElementById("room-status");
const auth = { Authorization: `Bearer ${token}`, "Content-Type": "application/json" };
let updates = 0;

function el(tag, text, attrs = {}) {
  const node = document.createElement(tag);
  if (text !== undefined && text !== null) node.textContent = String(text);
  for (const [key, value] of Object.entries(attrs)) node.setAttribute(key, value);
  return node;
}

function stars(n) {
  return "★".repeat(n) + "☆".repeat(3 - n);
}

function minutes(seconds) {
  return seconds < 60 ? `${Math.round(seconds)} s` : `${Math.floor(seconds / 60)} min`;
}

function projector(mission, setup) {
  const hash = [setup, `mission=${mission}`, "unlock=all"].filter(Boolean).join("&");
  return new URL("../#" + hash, location.href).href;
}

function drawMissions(room) {
  const rows = room.missions.map((m) => {
    const row = el("tr", null, { "data-mission": m.id, "data-passed": m.passed });
    row.append(el("th", `${m.n}. ${m.title}`, { scope: "row" }), el("td", m.opened), el("td", m.passed),
      el("td", m.stars.join(" / ")));
    const best = el("td");
    if (m.best.length) {
      const list = el("ol", null, { class: "best" });
      for (const b of m.best) {
        const item = el("li", `${b.name}: ${stars(b.stars)}, ${b.replicas} replica${b.replicas === 1 ? "" : "s"}, ` +
          `p99 ${Math.round(b.p99_ms)} ms `);
        item.append(el("a", "Show on the projector", { href: projector(m.id, b.setup), target: "_blank", rel: "noopener" }));
        list.append(item);
      }
      best.append(list);
    } else {
      best.textContent = "–";
    }
    const act = el("td");
    act.append(el("button", `Open mission ${m.n} for everyone`, { type: "button", "data-open": m.id }));
    row.append(best, act);
    return row;
  });
  document.querySelector("#missions tbody").replaceChildren(...rows);
  const opened = document.getElementById("opened");
  opened.textContent = room.open ? `Opened for everyone: mission ${room.open.n}, ${room.open.title}.` : "";
}

function drawStuck(room) {
  const items = room.stuck.slice(0, 10).map((s) => el("li", `${s.name}: mission ${s.n}, for ${minutes(s.since_s)}`));
  if (!items.length) items.push(el("li", "Nobody is stuck right now."));
  document.getElementById("stuck").replaceChildren(...items);
}

function drawPeople(room) {
  const head = el("tr");
  head.append(el("th", "Name", { scope: "col" }), el("th", "Now on", { scope: "col" }));
  for (const m of room.missions) head.append(el("th", m.n, { scope: "col", title: m.title }));
  head.append(el("th", "Last heard", { scope: "col" }));
  document.querySelector("#people thead").replaceChildren(head);
  const rows = room.participants.map((p) => {
    const row = el("tr", null, { class: "person" });
    row.append(el("th", p.name, { scope: "row", class: "name" }),
      el("td", p.current ? `mission ${p.current.n} (${minutes(p.current.since_s)})` : "free play"));
    for (const m of room.missions) {
      const n = p.stars[m.id];
      row.append(el("td", n === undefined ? "" : stars(n), { "data-mission": m.id, "data-stars": n ?? "" }));
    }
    row.append(el("td", `${minutes(p.seen_s)} ago`));
    return row;
  });
  document.querySelector("#people tbody").replaceChildren(...rows);
}

function draw(room) {
  drawMissions(room);
  drawStuck(room);
  drawPeople(room);
  const n = room.participants.length;
  status.textContent = `Live: ${n} participant${n === 1 ? "" : "s"} in the room.`;
  root.dataset.room = "live";
  root.dataset.updates = String(++updates);
}

const events = new EventSource(`api/stream?token=${encodeURIComponent(token)}`);
events.addEventListener("room", (event) => draw(JSON.parse(event.data)));
events.onerror = () => {
  root.dataset.room = "reconnecting";
  status.textContent = "The server is not answering; reconnecting… (after a restart, use the new facilitator address it printed)";
};

document.getElementById("export").href = `api/export.csv?token=${encodeURIComponent(token)}`;

document.addEventListener("click", async (event) => {
  const button = event.target.closest("[data-open]");
  if (!button) return;
  const response = await fetch("api/open", { method: "POST", headers: auth, body: JSON.stringify({ mission: button.dataset.open }) });
  const answer = await response.json().catch(() => ({}));
  status.textContent = response.ok ? `Opened mission ${answer.n} for everyone.` : `Could not open it: ${answer.error ?? response.status}.`;
});

document.getElementById("clear").addEventListener("submit", async (event) => {
  event.preventDefault();
  const confirm = document.getElementById("confirm");
  if (confirm.value.trim() !== "clear") {
    status.textContent = "Type clear in the box to clear the room.";
    return;
  }
  const response = await fetch("api/clear", { method: "POST", headers: auth, body: JSON.stringify({ confirm: "clear" }) });
  confirm.value = "";
  status.textContent = response.ok ? "The room is cleared: participants are asked to join again." : "Could not clear the room.";
});
