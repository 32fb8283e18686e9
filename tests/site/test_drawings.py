"""Every figure the page declares has its drawing, and nothing is drawn that the page does not declare."""

from lab.page.figures import BOKEH_FIGURES
from lab.page.view import render
from lab.site.drawings import DRAW, figures
from model import Scenario


def test_every_figure_has_one_drawing_and_every_drawing_a_figure():
    assert set(DRAW) == set(BOKEH_FIGURES)


def test_each_drawing_is_its_own_figure_in_the_pages_order():
    drawn = figures(render(Scenario()))
    assert list(drawn) == list(BOKEH_FIGURES)
    assert [fig.name for fig in drawn.values()] == [f"fig:{name}" for name in BOKEH_FIGURES]
