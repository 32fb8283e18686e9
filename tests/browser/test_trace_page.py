"""A trace chosen on the page is replayed in the browser and gives the numbers `prefix-lab replay` gives."""

import json
import re

import pytest
from conftest import READY, cli, metrics, open_section
from helpers import TRACES
from test_missions_page import answered, press, verdict

pytestmark = pytest.mark.browser

TRACE = TRACES / "conversation_trace.jsonl"


def test_a_chosen_trace_replays_in_the_browser_as_on_the_command_line(fresh_lab, tmp_path):
    page = fresh_lab
    trace = tmp_path / "conversation-2000.jsonl"
    with open(TRACE, "rb") as f:
        trace.write_bytes(b"".join(next(f) for _ in range(2000)))
    page.get_by_role("slider", name="Replicas").press("ArrowRight")  # 4 -> 5: the trace plays on this fleet
    page.wait_for_function(f"({READY}) && location.hash.includes('fleet.replicas=5')", timeout=30_000)

    open_section(page, "own-traffic")  # as a person does, before choosing a file
    page.get_by_label("Choose a trace file").set_input_files(str(trace))
    page.wait_for_function(f"({READY}) && location.hash.includes('trace=conversation-2000.jsonl')", timeout=60_000)
    replayed = cli("replay", str(trace), "--set", "fleet.replicas=5", "--json")
    shown = metrics(page)
    assert {k: json.loads(shown[k]) for k in ("hit_rate", "ttft_p50_ms", "ttft_p99_ms", "throughput_rps")} == \
        {k: replayed[k] for k in ("hit_rate", "ttft_p50_ms", "ttft_p99_ms", "throughput_rps")}
    summary = page.locator("#trace-summary").inner_text()
    assert "2,000 requests" in summary and "reuse ceiling" in summary
    assert "2,000 requests replayed from conversation-2000.jsonl" in page.locator("#readout").inner_text()
    assert page.locator("#trace-progress").is_hidden()

    page.get_by_role("button", name="Back to the lab's traffic").click()
    page.wait_for_function(f"({READY}) && !location.hash.includes('trace=')", timeout=30_000)
    assert page.locator("#trace-summary").inner_text() == ""


def test_a_file_that_is_not_a_trace_is_named_with_its_line(fresh_lab, tmp_path):
    page = fresh_lab
    notes = tmp_path / "notes.txt"
    notes.write_text('{"timestamp": 0, "input_length": 10, "output_length": 1, "hash_ids": [1]}\nnot json at all\n')
    open_section(page, "own-traffic")
    page.get_by_label("Choose a trace file").set_input_files(str(notes))
    page.wait_for_function(f"({READY}) && document.querySelector('#notices').textContent.includes('notes.txt')",
                           timeout=60_000)
    said = page.locator("#notices").inner_text()
    assert "notes.txt cannot be replayed: line 2: not JSON" in said
    assert "trace=" not in page.evaluate("location.hash")


def test_the_real_traffic_mission_fetches_its_trace_from_the_site_and_scores_on_it(fresh_lab):
    page = fresh_lab
    page.evaluate("location.hash = 'unlock=all'")
    page.wait_for_function(f"({READY}) && location.hash === '#unlock=all'", timeout=30_000)
    page.get_by_role("button", name=re.compile(r"^13\. Real traffic, fewest replicas")).click()
    page.wait_for_function(f"({READY}) && location.hash.includes('guess=ask')", timeout=60_000)
    page.get_by_role("button", name="Skip the guess").click()  # a first play asks for a guess first
    page.wait_for_function(f"({READY}) && !location.hash.includes('guess=') && "
                           "document.querySelector('.verdict[data-stars]') !== null", timeout=60_000)
    assert verdict(page) == (0, False)
    assert "first 1,750 requests" in page.locator("#trace-summary").inner_text()
    assert json.loads(metrics(page)["ttft_p99_ms"]) > 1950  # round robin on the trace: the broken start
    answered(page, lambda: page.get_by_role("combobox", name="Router").select_option(label="Cache-aware"))
    assert verdict(page) == (1, True)
    press(page, page.get_by_role("slider", name="Replicas"), "ArrowLeft", 4)  # 8 -> 4
    assert verdict(page) == (3, True)


def test_a_trace_dropped_on_the_box_replays_too(fresh_lab):
    page = fresh_lab
    with open(TRACE, "rb") as f:
        text = b"".join(next(f) for _ in range(300)).decode()
    open_section(page, "own-traffic")
    dropped = page.evaluate_handle("""text => { const data = new DataTransfer();
        data.items.add(new File([text], 'dropped.jsonl')); return data; }""", text)
    page.dispatch_event("#trace-drop", "drop", {"dataTransfer": dropped})
    page.wait_for_function(f"({READY}) && location.hash.includes('trace=dropped.jsonl')", timeout=60_000)
    assert "300 requests" in page.locator("#trace-summary").inner_text()


def test_a_gpu_fit_chosen_on_the_page_prices_the_run_as_the_command_line_does_and_the_way_back_clears_it(
        fresh_lab, tmp_path):
    from conftest import expected_metrics

    from lab.page.fitfile import fit_to_json
    from model import FITS, fit_text

    page = fresh_lab
    mine = FITS["a100"]._replace(name="mine", gemm_flops_per_s=FITS["a100"].gemm_flops_per_s * 1.5)
    fit = tmp_path / "mine.json"
    fit.write_text(json.dumps(fit_to_json(mine)))
    open_section(page, "own-gpu")
    open_section(page, "article")  # where the prefill figure says which fit priced it
    page.get_by_label("Choose a GPU fit").set_input_files(str(fit))
    page.wait_for_function(f"({READY}) && location.hash.includes('hardware.gpu_fit=gpufit1')", timeout=60_000)
    assert "hardware.preset=llama8b_a100" in page.evaluate("location.hash")  # the lab preset has no shape to price
    shown, want = metrics(page), expected_metrics("hardware.preset=llama8b_a100", f"hardware.gpu_fit={fit_text(mine)}")
    headline = ("hit_rate", "ttft_p50_ms", "ttft_p99_ms", "throughput_rps")
    assert {k: shown[k] for k in headline} == {k: want[k] for k in headline}
    status = page.locator("#gpu-fit-status").inner_text()
    assert status.startswith("Llama 3.1 8B on A100") and "runs on your GPU fit mine" in status
    assert "priced by your GPU fit MINE" in page.locator("#cap-prefill").inner_text()

    page.get_by_role("button", name="Back to the preset's GPU").click()
    page.wait_for_function(f"({READY}) && !location.hash.includes('gpu_fit')", timeout=30_000)
    assert page.locator("#gpu-fit-status").inner_text() == ""
    assert page.get_by_role("button", name="Back to the preset's GPU").is_hidden()
