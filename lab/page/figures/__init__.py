"""The page's figures, each declared once: what it reads, what it draws, what it says in words.

A `Figure` (`base.py`) is a unit the full page and every embed are lists of.
It names the scenario keys it reads beyond a fleet's run (`reads`, dotted
prefixes), whether it is drawn from the fleet's run at all (`fleet`), the
controls its paragraph needs (`controls`: shown beside it on the page, and an
embed's default), and two pure functions of a `Context`: `data`, the columns
of its Bokeh sources (`src:<name>...`), and `caption`, the figure in words,
the text a screen reader gets in place of the picture (`#cap-<name>`).

The figures live in one module per family, each ending with its `FIGURES`:
the fleet's charts (`fleet`), the article's (`article`), the GPU's
(`gpus`), serving mode's (`serving`), the locality note's (`locality`) and
the radix tree (`tree`) and the request film (`film`, drawn on a canvas by
the page's own script, not by Bokeh: its data is a DOM patch). `FAMILIES` below lists them in the page's order;
adding a figure is its functions and one `Figure(...)` line in its family.
`fleetview` draws the fleet's tables and notes; `measured` holds Vidur's
points the GPU's figures draw.

`lab.site.drawings` draws each figure with Bokeh at build time (the one
place that knows glyphs and colours); `lab.page.view` fills them on every
change. Standard library, `model` only: this runs in the browser too.
"""

from lab.page.figures import article, film, fleet, gpus, locality, serving, tree
from lab.page.figures.base import Context, Figure, fleet_key
from lab.page.figures.fleet import histogram, hit_columns, ttft_columns, ttft_histogram
from lab.page.figures.fleetview import PALETTE, replica_colour
from lab.page.figures.serving import JOIN_WAYS
from lab.page.figures.tree import TREE_COLOURS, TREE_WIDGETS, tree_key, tree_page

__all__ = ["ARTICLE_FIGURES", "BOKEH_FIGURES", "Context", "EMBED_CONTROLS", "EMBED_FIGURES", "FIGURES", "FLEET_CHARTS", "Figure",
           "JOIN_WAYS", "PALETTE", "TREE_COLOURS", "TREE_WIDGETS", "embed_figures", "fleet_key", "forget",
           "histogram", "hit_columns", "replica_colour", "tree_key", "tree_page", "ttft_columns", "ttft_histogram"]

FAMILIES = (fleet, article, gpus, serving, locality, tree, film)  # the page's order
FLEET_CHARTS: tuple[Figure, ...] = fleet.FIGURES
ARTICLE_FIGURES: tuple[Figure, ...] = tuple(f for family in FAMILIES[1:] for f in family.FIGURES)
FIGURES = {f.name: f for f in FLEET_CHARTS + ARTICLE_FIGURES}
BOKEH_FIGURES = tuple(name for name, f in FIGURES.items() if not f.canvas)  # those lab.site.drawings draws
EMBED_FIGURES = ("headline", "ttft", "hit")  # an embed that names no figure
EMBED_CONTROLS = ("fleet.cache", "fleet.replicas", "router.kind", "dynamic_text")  # ...and no controls


def embed_figures() -> tuple[str, ...]:
    """What `?figure=` may name: `headline` (the numbers) and every figure."""
    return ("headline", *FIGURES)


def forget() -> None:
    """Drop the run keys and histograms the figures remember besides the store (see `lab.page.view.keep_first_answer`)."""
    fleet_key.cache_clear()
    fleet.remembered_histograms.cache_clear()
