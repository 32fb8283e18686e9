"""Which Chromium the browser tests and benchmarks drive, and the server they drive it against.

Playwright's own build when it is installed (an ordinary developer machine);
otherwise a system Chromium (Debian's `chromium`), started with the flags that
keep it from calling home, since some machines have no network beyond their
package registries.
"""

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

__all__ = ["CHROMIUM_FLAGS", "find_browser", "launch", "serve_site"]

CHROMIUM_FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync", "--no-first-run"]
SYSTEM_CHROMIUMS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")


def find_browser(playwright: Any = None) -> str | None:
    """The Chromium to launch: None for Playwright's own, else a system path; raises if neither."""
    if playwright is None:
        from playwright.sync_api import sync_playwright

        with sync_playwright() as p:
            return find_browser(p)
    if os.path.exists(playwright.chromium.executable_path):
        return None
    for name in SYSTEM_CHROMIUMS:
        path = shutil.which(name)
        if path:
            return path
    raise RuntimeError("no Chromium found: run 'playwright install chromium', or install Debian's chromium")


def launch(playwright: Any, extra: tuple[str, ...] = ()) -> Any:
    """Start headless Chromium: Playwright's own if installed, else the system's; `extra` flags after the usual."""
    return playwright.chromium.launch(headless=True, executable_path=find_browser(playwright),
                                      args=CHROMIUM_FLAGS + list(extra))


def serve_site(site: Path) -> tuple[subprocess.Popen, str]:
    """Start `prefix-lab serve` on a free port for `site` (building it if needed): the process and its address."""
    proc = subprocess.Popen([sys.executable, "-m", "lab", "serve", "--dir", str(site), "--port", "0"],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            cwd=Path(__file__).resolve().parents[2])
    assert proc.stdout is not None
    for line in proc.stdout:
        found = re.search(r"is at (http://127\.0\.0\.1:\d+/)", line)
        if found:
            return proc, found.group(1)
    raise SystemExit("prefix-lab serve did not start")
