"""Take the docs' shot of the workshop room's facilitator page, with a small room playing.

    .venv/bin/python scripts/screenshot_room.py [--site site] [--out docs/screens/room-facilitator.png]

Starts `prefix-lab serve --room` on a fresh data folder, has eight participants join and report progress
over the room's own API (real setups, which the server scores), opens mission 3 for everyone, and shoots the
facilitator page in headless Chromium at 1440 px wide.
"""

import argparse
import http.client
import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path

from playwright.sync_api import sync_playwright

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))  # tests/support: the browser harness

from support.browser import launch  # noqa: E402

from lab.page.urlstate import write_hash  # noqa: E402
from missions import find_mission  # noqa: E402

# name -> (mission on screen, {mission: (changes to its start, stars)})
ROOM = {
    "Ada": ("round-robin", {"cache-on": ({"fleet.cache": "true", "fleet.replicas": "2"}, 3),
                            "timestamp": ({"dynamic_text": "none"}, 3)}),
    "Grace": ("hot-tenant", {"cache-on": ({"fleet.cache": "true", "fleet.replicas": "3"}, 2),
                             "timestamp": ({"dynamic_text": "bottom"}, 1),
                             "round-robin": ({"router.kind": "cache_aware", "fleet.replicas": "3"}, 3)}),
    "Linus": ("timestamp", {"cache-on": ({"fleet.cache": "true"}, 1)}),
    "Margaret": ("round-robin", {"cache-on": ({"fleet.cache": "true", "fleet.replicas": "2"}, 3),
                                 "timestamp": ({"dynamic_text": "none"}, 3),
                                 "round-robin": ({"router.kind": "cache_aware"}, 1)}),
    "Edsger": ("cache-on", {}),
    "Barbara": ("timestamp", {"cache-on": ({"fleet.cache": "true", "fleet.replicas": "3"}, 2)}),
    "Ken": ("round-robin", {"cache-on": ({"fleet.cache": "true"}, 1), "timestamp": ({"dynamic_text": "none"}, 3)}),
    "<img src=x onerror=alert(1)>": ("cache-on", {}),
}


def call(port: int, method: str, path: str, body: object = None, headers: dict | None = None) -> dict:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    conn.request(method, path, json.dumps(body), {"Content-Type": "application/json", **(headers or {})})
    response = conn.getresponse()
    answer = json.loads(response.read())
    conn.close()
    if response.status != 200:
        raise SystemExit(f"{method} {path}: {response.status} {answer}")
    return answer


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--site", default=str(ROOT / "site"))
    p.add_argument("--out", default=str(ROOT / "docs" / "screens" / "room-facilitator.png"))
    args = p.parse_args()
    data = Path(tempfile.mkdtemp(prefix="room-shot-")) / "data"
    proc = subprocess.Popen([sys.executable, "-m", "lab", "serve", "--dir", args.site, "--port", "0", "--room",
                             "--data", str(data)], cwd=ROOT, stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    facilitator = ""
    for line in proc.stdout:
        if m := re.search(r"(http://\S+/room/facilitator\?token=(\S+))", line):
            facilitator, token = m.group(1), m.group(2)
            break
    if not facilitator:
        raise SystemExit("prefix-lab serve --room did not start")
    port = int(facilitator.split(":")[2].split("/")[0])
    try:
        for name, (current, played) in ROOM.items():
            who = call(port, "POST", "/room/api/join", {"name": name})
            missions = {}
            for mission_id, (changes, stars) in played.items():
                mission = find_mission(mission_id)
                assert mission is not None
                missions[mission_id] = {"stars": stars, "setup": write_hash(mission.start.with_text(changes))}
            call(port, "POST", "/room/api/report", {"seq": 1, "current": current, "missions": missions},
                 {"Authorization": f"Bearer {who['id']}.{who['secret']}"})
        call(port, "POST", "/room/api/open", {"mission": "round-robin"}, {"Authorization": f"Bearer {token}"})
        with sync_playwright() as pw:
            browser = launch(pw)
            page = browser.new_page(viewport={"width": 1440, "height": 900})
            page.goto(facilitator)  # served on 127.0.0.1, so the join address (and its QR code) is that one too
            page.wait_for_function("document.documentElement.dataset.room === 'live'", timeout=30_000)
            page.screenshot(path=args.out, full_page=True)
            browser.close()
        print(f"wrote {args.out}")
    finally:
        proc.terminate()
        proc.wait()


if __name__ == "__main__":
    main()
