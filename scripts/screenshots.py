"""Take the docs' screenshots (docs/screens, docs/figures): the lab at 1440x900, 1280x720 and 390x844, in free play and in a mission,
free play's first screen as a newcomer sees it (1440x900 and 390x844),
and every figure as an embed shows it, at an article's column width and a phone's.

    .venv/bin/python scripts/screenshots.py [--url http://127.0.0.1:8000/] [--out docs/screens] [--figures docs/figures]

Without --url it builds the site into a temporary folder and serves it with `prefix-lab serve`. The
mission shots play mission 8 from its broken start (choosing it, then three changes), as a player would.
"""

import argparse
import re
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from playwright.sync_api import sync_playwright

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))  # tests/support: the browser harness

from support.browser import launch, serve_site  # noqa: E402

# Ready, and every part of the page that is shown drawn (the page draws what is far below the fold while idle).
READY = "document.documentElement.dataset.lab === 'ready' && window.prefixLab.undrawn === 0"
SIZES = ((1440, 900), (1280, 720), (390, 844))


def shoot(url: str, out: Path) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    written = []
    with sync_playwright() as p:
        browser = launch(p)
        for width, height in SIZES:
            page = browser.new_page(viewport={"width": width, "height": height})
            page.goto(url + "#unlock=all")
            page.wait_for_function(READY, timeout=60_000)
            name = f"{width}x{height}"
            page.screenshot(path=str(out / f"free-play-{name}.png"))
            page.get_by_role("button", name=re.compile(r"^8\. Monday morning")).click()
            page.wait_for_function(f"({READY}) && location.hash.includes('mission=monday')", timeout=30_000)
            page.get_by_role("button", name="None", exact=True).click()
            page.wait_for_function(f"({READY}) && !location.hash.includes('dynamic_text')", timeout=30_000)
            page.get_by_role("combobox", name="Router").select_option(label="Cache-aware")
            page.wait_for_function(f"({READY}) && location.hash.includes('cache_aware')", timeout=30_000)
            memory = page.get_by_role("slider", name="Prefix memory per replica (GB)")
            for _ in range(12):  # 1 GB -> 4 GB, a key press at a time: the first star
                memory.press("ArrowRight")
            page.wait_for_function(f"({READY}) && !location.hash.includes('memory_gb')", timeout=30_000)
            if width < 800:  # on a phone, the player scrolls down to the controls: the headline stays
                page.get_by_role("slider", name="Replicas").scroll_into_view_if_needed()
            else:
                page.evaluate("window.scrollTo(0, 0)")
            written += [out / f"free-play-{name}.png", out / f"mission-{name}.png"]
            page.screenshot(path=str(written[-1]))
            page.close()
        browser.close()
    return written


def _opened(url: str, sizes: tuple[tuple[int, int], ...]) -> Iterator[tuple[int, int, Any]]:
    """A page for each size, opened at `url` and ready, in one Chromium: (width, height, page)."""
    with sync_playwright() as p:
        browser = launch(p)
        for width, height in sizes:
            page = browser.new_page(viewport={"width": width, "height": height})
            page.goto(url)
            page.wait_for_function(READY, timeout=60_000)
            yield width, height, page
            page.close()
        browser.close()


def shoot_first_glance(url: str, out: Path) -> list[Path]:
    """Free play's first screen as a newcomer opens it (nothing stored, no section opened), at a desk and on a
    phone: `first-glance-WxH.png`."""
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for width, height, page in _opened(url, ((1440, 900), (390, 844))):
        written.append(out / f"first-glance-{width}x{height}.png")
        page.screenshot(path=str(written[-1]))
    return written


def shoot_teach(url: str, out: Path) -> list[Path]:
    """Mission 3 on its first play: the guess it asks for, then the guess beside the truth, a hint, and the
    landscape of every swept setup with the player's."""
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for width, height, page in _opened(url + "#unlock=all", ((1440, 900), (390, 844))):
        page.get_by_role("button", name=re.compile(r"^3\. Round robin")).click()
        page.wait_for_function(f"({READY}) && location.hash.includes('guess=ask')", timeout=30_000)
        guess = page.get_by_role("slider", name="Your guess")
        for _ in range(10):
            guess.press("ArrowLeft")
        written.append(out / f"mission-guess-{width}x{height}.png")
        page.screenshot(path=str(written[-1]))
        page.get_by_role("button", name="Check my guess").click()
        page.wait_for_function(f"({READY}) && !location.hash.includes('guess=ask')", timeout=30_000)
        page.get_by_role("combobox", name="Router").select_option(label="Cache-aware")
        page.wait_for_function(f"({READY}) && location.hash.includes('cache_aware')", timeout=30_000)
        page.get_by_role("button", name="A hint").click()
        page.wait_for_function(f"({READY}) && location.hash.includes('hint=1')", timeout=30_000)
        page.wait_for_function("document.querySelector('.standing') !== null", timeout=30_000)
        page.locator("#landscape").scroll_into_view_if_needed()
        written.append(out / f"mission-landscape-{width}x{height}.png")
        page.screenshot(path=str(written[-1]), full_page=width < 800)
    return written


FIGURE_WIDTHS = (720, 390)


def shoot_figures(url: str, out: Path, only: tuple[str, ...] = ()) -> list[Path]:
    """Each figure alone in `embed.html?figure=NAME`, in the setup it offers when it has one (the fan-out race
    on the article's setup, the serving figures in serving mode)."""
    from lab.page.figures import FIGURES
    from lab.page.urlstate import write_hash
    from model import Scenario

    out.mkdir(parents=True, exist_ok=True)
    written = []
    with sync_playwright() as p:
        browser = launch(p)
        for name in only or ("headline", *FIGURES):
            example = FIGURES[name].example if name in FIGURES else ()
            fragment = "#" + write_hash(Scenario().with_text(dict(example)), {}) if example else ""
            for width in FIGURE_WIDTHS:
                page = browser.new_page(viewport={"width": width, "height": 600})
                page.goto(f"{url}embed.html?figure={name}{fragment}")
                page.wait_for_function(READY, timeout=60_000)
                if name == "film":
                    show_film_at(page, 24.0)
                written.append(out / f"{name}-{width}.png")
                page.screenshot(path=str(written[-1]), full_page=True)
                page.close()
        browser.close()
    return written


def show_film_at(page, at: float) -> None:
    """The request film paused at `at` run seconds: trees grown, requests on their way (its Time slider)."""
    page.locator(".film").scroll_into_view_if_needed()
    page.evaluate("""at => { const i = document.querySelector('.film-time input'); i.value = at;
                           i.dispatchEvent(new Event('input')); }""", at)
    page.wait_for_function(f"Number(document.querySelector('.film').dataset.filmT) >= {at - 0.01}")


def shoot_film(url: str, out: Path) -> list[Path]:
    """The request film on the full page at 1440x900 and 390x844, where it stands first, its More opened and a
    request followed, as a reader who pressed Play and paused a moment later sees it."""
    written = []
    with sync_playwright() as p:
        browser = launch(p)
        for width, height in ((1440, 900), (390, 844)):
            page = browser.new_page(viewport={"width": width, "height": height})
            page.goto(url)
            page.wait_for_function(READY, timeout=60_000)
            show_film_at(page, 22.0)
            page.locator(".film-more > summary").click()
            page.get_by_role("button", name="Follow the next request").click()
            page.get_by_role("button", name="Play").click()
            page.wait_for_function("Number(document.querySelector('.film').dataset.filmT) >= 23.2")
            page.get_by_role("button", name="Pause").click()
            page.evaluate("window.scrollTo(0, 0)")
            written.append(out / f"film-{width}x{height}.png")
            page.screenshot(path=str(written[-1]))
            page.close()
        browser.close()
    return written


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--url")
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "screens")
    parser.add_argument("--figures", type=Path, default=ROOT / "docs" / "figures")
    parser.add_argument("--only", default="", help="comma-separated figures: shoot just these, and no page shots "
                        "(\"teach\": the guess and landscape shots; \"first-glance\": free play's first screen; "
                        "\"film-page\": the request film on the page)")
    args = parser.parse_args()
    only = tuple(n for n in args.only.split(",") if n)
    if args.url and only == ("teach",):
        paths = shoot_teach(args.url, args.out)
    elif args.url and only == ("first-glance",):
        paths = shoot_first_glance(args.url, args.out)
    elif args.url and only == ("film-page",):
        paths = shoot_film(args.url, args.out)
    elif args.url and only:
        paths = shoot_figures(args.url, args.figures, only)
    elif args.url:
        paths = (shoot(args.url, args.out) + shoot_first_glance(args.url, args.out) + shoot_teach(args.url, args.out)
                 + shoot_figures(args.url, args.figures))
    else:
        with tempfile.TemporaryDirectory() as tmp:
            proc, url = serve_site(Path(tmp) / "site")
            try:
                paths = (shoot(url, args.out) + shoot_first_glance(url, args.out) + shoot_teach(url, args.out)
                         + shoot_figures(url, args.figures))
            finally:
                proc.terminate()
                proc.wait(timeout=10)
    print("\n".join(str(p) for p in paths))


if __name__ == "__main__":
    main()
