"""Values derived from a run are worked out once per result (the chart and the axes' fit both ask for them):
the memo answers only for the very result it was made from, and forgets on request."""

from lab.page import compare
from lab.page.figures import fleetview, histogram, ttft_histogram
from lab.page.store import STORE
from model import Scenario, simulate


def result(seed: int):
    return simulate(Scenario().with_text({"seed": str(seed), "duration_s": "60"}))


def test_memory_data_is_worked_out_once_per_result_and_equals_a_fresh_computation():
    STORE.forget()
    a, b = result(1), result(2)
    first = fleetview.memory_data(a)
    assert fleetview.memory_data(a) is first
    assert first == fleetview.memory_data.__wrapped__(a)  # type: ignore[attr-defined]
    other = fleetview.memory_data(b)
    assert other == fleetview.memory_data.__wrapped__(b)  # type: ignore[attr-defined]
    assert other != first  # another run's series, not the memo's first answer


def test_an_equal_result_that_is_another_object_is_worked_out_again():
    STORE.forget()
    a, again = result(3), result(3)
    assert a == again and a is not again
    assert fleetview.memory_data(again) is not fleetview.memory_data(a)
    assert fleetview.memory_data(again) == fleetview.memory_data(a)


def test_only_the_last_few_results_are_kept_and_forget_drops_them():
    STORE.forget()
    runs = [result(10 + i) for i in range(STORE.DERIVED_KEPT + 1)]
    first = fleetview.memory_data(runs[0])
    for r in runs[1:]:
        fleetview.memory_data(r)
    assert fleetview.memory_data(runs[0]) is not first  # pushed out by the later ones, worked out again
    kept = fleetview.memory_data(runs[-1])
    STORE.forget()
    assert fleetview.memory_data(runs[-1]) is not kept


def test_the_ttft_histogram_and_the_axes_read_the_remembered_values():
    STORE.forget()
    r = result(4)
    shown = ttft_histogram(r)
    assert shown == histogram([rec.ttft_ms for rec in r.records])
    assert ttft_histogram(r) is shown
    tops = compare.bounds(r)
    memory = fleetview.memory_data(r)
    assert tops["dist"] == compare._nice(max(shown["share"]) * compare.HEADROOM)
    assert tops["memory"] == compare._nice(max(*memory["total"], *memory["evicted"]) * compare.HEADROOM)
