"""Which Chromium the browser tests and benchmarks drive.

Playwright's own build when it is installed (an ordinary developer machine);
otherwise a system Chromium (Debian's `chromium`), started with the flags that
keep it from calling home, since some machines have no network beyond their
package registries.
"""

import os
import shutil
from typing import Any

__all__ = ["CHROMIUM_FLAGS", "find_browser", "launch"]

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


def launch(playwright: Any) -> Any:
    """Start headless Chromium: Playwright's own if installed, else the system's."""
    return playwright.chromium.launch(headless=True, executable_path=find_browser(playwright), args=CHROMIUM_FLAGS)
