// prefix-lab room: the join page. Sends the chosen name, keeps the id and secret the room
// answers in localStorage (the secret proves later reports are this browser's), then opens the lab.

const KEY = "prefix-lab:room";
const form = document.getElementById("join");
const status = document.getElementById("join-status");

form.addEventListener("submit", async (event) => {
  event.preventDefault();
  const name = document.getElementById("name").value;
  status.textContent = "Joining…";
  try {
    const response = await fetch("api/join", {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ name }),
    });
    const answer = await response.json();
    if (!response.ok) {
      status.textContent = `Could not join: ${answer.error ?? response.status}.`;
      return;
    }
    localStorage.setItem(KEY, JSON.stringify({ ...answer, seq: 0 }));
    location.href = new URL("../", location.href).href;
  } catch {
    status.textContent = "Could not reach the room's server; check the Wi-Fi and try again.";
  }
});
