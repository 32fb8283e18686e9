"""Issue 29's findings, each played through the page's controls as the session that filed it played them, and
checked gone. Controls are found by role and accessible name; every wait is on the page's own state."""

import pytest
from conftest import reset_lab
from test_missions_page import choose, press

pytestmark = pytest.mark.browser


def model(page, name):
    """A Bokeh model's properties by its name, from whichever of the page's documents holds it."""
    return page.evaluate(f"""(() => {{
        const m = Bokeh.documents.map(d => d.get_model_by_name({name!r})).find(Boolean);
        return m.data ? Object.fromEntries(Object.entries(m.data).map(([k, v]) => [k, Array.from(v)]))
                      : {{start: m.start, end: m.end}};
    }})()""")


def test_mission_14_with_one_prefill_and_one_decode_gpu_marks_the_p99_its_axis_cannot_hold(fresh_lab):
    page = reset_lab(fresh_lab, "unlock=all")
    choose(page, 14, "Answers that freeze mid-sentence")
    press(page, page.get_by_role("slider", name="GPUs that only prefill"), "ArrowRight")
    press(page, page.get_by_role("slider", name="GPUs that only decode"), "ArrowRight")
    assert "fleet.prefill_replicas=1" in page.evaluate("location.hash")
    assert "fleet.decode_replicas=1" in page.evaluate("location.hash")
    top = model(page, "yr:ttft")["end"]
    p99 = [v for v in model(page, "src:ttft")["p99"] if v is not None]
    over = model(page, "src:ttft_over")
    assert max(p99) > top  # the mission's axes hold still at its broken start's, and this run goes past them
    above = {t for t, v in zip(model(page, "src:ttft")["t"], model(page, "src:ttft")["p99"], strict=True)
             if v is not None and v > top}
    assert above <= set(over["x"]) and all(y < top for y in over["y"])
    assert [label for label in over["label"] if label] == [f"above: {max(p99):,.0f} ms"]
