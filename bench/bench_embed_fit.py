"""Does each embedded figure's iframe end at its content? Ten cold loads a figure, counted.

    python bench/bench_embed_fit.py [--site DIR] [--loads N] [--figure NAME ...]

tests/browser/test_embed_height.py's check, repeated: for each embeddable figure (lab/page/figures/), `--loads` cold
loads (a fresh browser context each) of an article on another origin that embeds the figure with the docs'
snippet (tests/support/embedhost.py). A load fits when, once the embed is `ready`, the iframe's height comes within
2 px of where the embed's content ends (the embed's own measure) in 10 s. Prints, per figure, how many
loads fit and the heights of those that did not.
"""

import argparse
import sys
import tempfile
from pathlib import Path

from playwright.sync_api import sync_playwright

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))  # tests/support: the browser harness

from support.browser import launch  # noqa: E402
from support.embedhost import CONTENT_HEIGHT, article_host, article_html, frame_fits, proxied_context, serve_as_built  # noqa: E402

from lab.page.figures import embed_figures  # noqa: E402
from lab.site.build import build_site  # noqa: E402

READY = "document.documentElement.dataset.lab === 'ready'"


def load_once(browser, url: str, figure: str, article, proxy) -> tuple[bool, int, float]:
    """One cold load: (fits, the content's height, the iframe's height)."""
    context = proxied_context(browser, proxy, viewport={"width": 760, "height": 900})
    try:
        page = context.new_page()
        page.goto(article.put(f"/{figure}.html", article_html([f"{url}embed.html?figure={figure}"])))
        frame = page.locator("#embed-0").element_handle().content_frame()
        frame.wait_for_function(READY, timeout=120_000)
        content = frame.evaluate(CONTENT_HEIGHT)
        fits = frame_fits(page, "embed-0", content)
        return fits, content, page.evaluate("document.getElementById('embed-0').getBoundingClientRect().height")
    finally:
        context.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--site", type=Path, help="a built site, served as it is (default: build one)")
    parser.add_argument("--loads", type=int, default=10, help="cold loads per figure (default 10)")
    parser.add_argument("--figure", action="append", help="only this figure (repeat for more)")
    args = parser.parse_args()
    site = args.site or build_site(Path(tempfile.mkdtemp(prefix="prefix-lab-bench-")) / "site")
    figures = args.figure or embed_figures()
    total = 0
    with sync_playwright() as p, serve_as_built(site) as url, article_host(url.rstrip("/")) as (article, proxy):
        browser = launch(p)
        print(f"{'figure':10s} {'fit':>6s}  misses (content px / iframe px)")
        for figure in figures:
            results = [load_once(browser, url, figure, article, proxy) for _ in range(args.loads)]
            fit = sum(r[0] for r in results)
            total += fit
            misses = ", ".join(f"{c}/{h:.0f}" for ok, c, h in results if not ok)
            print(f"{figure:10s} {fit:>3d}/{args.loads:<2d}  {misses}", flush=True)
        browser.close()
    print(f"all: {total} of {len(figures) * args.loads} loads fit within 2 px")


if __name__ == "__main__":
    main()
