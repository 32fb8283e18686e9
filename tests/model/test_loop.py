"""The event loop on its own: time order, then priority, then scheduling order."""

import pytest

from model.loop import EventLoop


def recorder():
    """A loop and a list that its actions append `(now, label)` to."""
    loop, seen = EventLoop(), []
    return loop, seen, lambda label: seen.append((loop.now, label))


def test_events_run_in_time_order_whatever_order_they_were_scheduled_in():
    loop, seen, note = recorder()
    for t in (3.0, 1.0, 2.0):
        loop.at(t, 0, note, f"t{t:g}")
    loop.run()
    assert seen == [(1.0, "t1"), (2.0, "t2"), (3.0, "t3")]
    assert loop.now == 3.0 and len(loop) == 0


def test_equal_time_and_priority_keep_the_order_they_were_scheduled_in():
    loop, seen, note = recorder()
    for label in "abcde":
        loop.at(5.0, 1, note, label)
    loop.run()
    assert [label for _, label in seen] == list("abcde")


def test_at_equal_times_a_lower_priority_number_runs_first():
    loop, seen, note = recorder()
    loop.at(1.0, 2, note, "late")
    loop.at(1.0, 0, note, "first")
    loop.at(1.0, 1, note, "second")
    loop.at(1.0, 0, note, "first-again")
    loop.run()
    assert [label for _, label in seen] == ["first", "first-again", "second", "late"]


def test_an_action_may_schedule_at_the_current_time_and_it_runs_after_those_already_queued():
    loop, seen, note = recorder()

    def parent():
        note("parent")
        loop.at(loop.now, 0, note, "child")

    loop.at(1.0, 0, parent)
    loop.at(1.0, 0, note, "sibling")
    loop.run()
    assert [label for _, label in seen] == ["parent", "sibling", "child"]


def test_scheduling_into_the_past_raises_and_leaves_the_queue_alone():
    loop, seen, note = recorder()
    loop.at(2.0, 0, note, "a")
    loop.step()
    with pytest.raises(ValueError, match="before now"):
        loop.at(1.5, 0, note, "too late")
    assert len(loop) == 0 and loop.now == 2.0
    loop.at(2.0, 0, note, "now is fine")
    loop.run()
    assert seen == [(2.0, "a"), (2.0, "now is fine")]


def test_run_until_stops_before_later_events_and_keeps_them():
    loop, seen, note = recorder()
    for t in (1.0, 2.0, 2.5, 4.0):
        loop.at(t, 0, note, t)
    loop.run(until=2.5)  # inclusive: an event exactly at `until` runs
    assert seen == [(1.0, 1.0), (2.0, 2.0), (2.5, 2.5)]
    assert loop.now == 2.5 and len(loop) == 1
    loop.run()
    assert seen[-1] == (4.0, 4.0)


def test_step_runs_exactly_one_action_and_passes_its_arguments():
    loop, seen = EventLoop(), []
    loop.at(0.5, 0, lambda *args: seen.append(args), 1, "two")
    loop.at(0.7, 0, lambda *args: seen.append(args))
    loop.step()
    assert seen == [(1, "two")] and loop.now == 0.5 and len(loop) == 1
    loop.step()
    assert seen == [(1, "two"), ()] and loop.now == 0.7 and len(loop) == 0


def test_advance_runs_one_action_while_there_is_one():
    loop, ran = EventLoop(), []
    loop.at(1.0, 0, ran.append, "a")
    assert loop.advance() and ran == ["a"] and loop.now == 1.0
    assert not loop.advance() and ran == ["a"]


def _chained(loop, items, priority, action):
    """What `feed` stands for: each item's action schedules the next item's with `at` before anything else."""
    rest = iter(items)

    def arrive(item):
        following = next(rest, None)
        if following is not None:
            loop.at(following, priority, arrive, following)
        action(item)

    first = next(rest, None)
    if first is not None:
        loop.at(first, priority, arrive, first)


def test_a_feed_runs_in_the_order_the_same_items_chained_with_at_would():
    """Fed items tie with scheduled events at equal times and priorities: the order is the heap's own."""
    def play(feeding):
        loop, seen, note = recorder()
        items = [0.5, 1.0, 1.0, 2.0, 3.0]

        def arrived(t):
            note(f"arrive {t}")
            loop.at(loop.now, 1, note, f"echo {t}")  # same time and priority: after anything already queued
            loop.at(loop.now + 1.0, 0, note, f"done {t}")

        loop.at(1.0, 1, note, "queued first")
        loop.at(2.0, 0, note, "finish at 2")
        if feeding:
            loop.feed(iter(items), float, 1, arrived)
        else:
            _chained(loop, items, 1, arrived)
        loop.at(1.0, 1, note, "queued after")
        assert len(loop) == 4 and loop.peek() == 0.5
        loop.run(until=1.0)
        middle = (len(loop), loop.peek())
        loop.run()
        return seen, middle

    fed, chained = play(True), play(False)
    assert fed == chained
    labels = [label for _, label in fed[0]]
    # the item at 1.0 was scheduled when the one at 0.5 ran: after both events queued before the run
    assert labels.index("queued first") < labels.index("queued after") < labels.index("arrive 1.0")


def test_a_fed_item_earlier_than_the_one_before_it_raises_when_that_one_runs():
    loop, seen, note = recorder()
    loop.feed(iter([1.0, 2.0, 1.5]), float, 1, note)
    loop.step()
    with pytest.raises(ValueError, match="before now"):
        loop.step()
    assert seen == [(1.0, 1.0)]


def test_step_and_advance_take_fed_items_too():
    loop, seen, note = recorder()
    loop.feed(iter([1.0, 2.0]), float, 1, note)
    loop.at(1.5, 0, note, "between")
    while loop.advance():
        pass
    assert seen == [(1.0, 1.0), (1.5, "between"), (2.0, 2.0)] and len(loop) == 0 and loop.peek() is None


def test_run_until_stops_before_a_fed_item_past_it_and_keeps_it():
    loop, seen, note = recorder()
    loop.feed(iter([1.0, 3.0]), float, 1, note)
    loop.at(5.0, 0, note, "last")
    loop.run(until=2.0)
    assert seen == [(1.0, 1.0)] and loop.peek() == 3.0 and len(loop) == 2
    loop.run()
    assert seen == [(1.0, 1.0), (3.0, 3.0), (5.0, "last")]


def test_run_noting_takes_fed_items_and_notes_each_event():
    class Clock:
        now = 0

    clock, values, times = Clock(), [], []
    loop = EventLoop()

    def tick(_):
        clock.now += 1

    loop.feed(iter([0.5, 2.0, 4.0]), float, 1, tick)
    loop.at(1.0, 0, tick, None)
    loop.run_noting(3.0, clock, values, times)
    assert values == [1, 2, 3] and times == [0.5, 1.0, 2.0] and loop.peek() == 4.0
