"""`prefix-lab conformance`: a decision file replayed through the lab's sglang policy, and bad files refused."""

import gzip
import json

import pytest

from lab.cli.main import main
from model import Scenario
from model.engines.lab import Run
from model.routing.text import Renderer

HEADER = {"router": "sglang-router 0.3.2", "policy": "cache_aware", "workers": 4, "tie_order": [0, 1, 2, 3],
          "config": {"cache_threshold": 0.3, "balance_abs_threshold": 64, "balance_rel_threshold": 1.5},
          "launch_args": ["--policy", "cache_aware"]}


def recorded(rate="6"):
    """Decision lines as the lab's own sglang policy made them on its chat traffic (loads from the run)."""
    run = Run(Scenario().with_text({"router.kind": "sglang", "traffic.session_rate": rate}))
    renderer, rows = Renderer(), []

    def look(view, chosen):
        r = view.request
        rows.append({"t": view.now, "text": renderer.prompt(r.keys, r.sizes),
                     "in_flight": [x.in_flight() for x in view.replicas], "chosen": chosen})

    run.dispatch.watch = look
    run.finish()
    first = rows[0]["t"]
    for row in rows:
        row["t"] = round(row["t"] - first, 9)
    return rows, first


def write(path, header, rows, zipped=False):
    text = "".join(json.dumps(x) + "\n" for x in [header, *rows])
    if zipped:
        with gzip.open(path, "wt", encoding="utf-8") as f:
            f.write(text)
    else:
        path.write_text(text, encoding="utf-8")
    return str(path)


def test_the_lab_agrees_with_its_own_decisions_and_counts_a_changed_one(tmp_path, capsys):
    rows, first = recorded()
    header = {**HEADER, "first_request_after_launch_s": first}
    assert main(["conformance", "sglang", write(tmp_path / "d.jsonl.gz", header, rows, zipped=True)]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == f"agree {len(rows)} of {len(rows)}"
    spread = max(i for i, r in enumerate(rows) if len({*r["in_flight"]}) > 1)
    rows[spread]["chosen"] = (rows[spread]["chosen"] + 1) % 4  # the "router" decided otherwise once
    assert main(["conformance", "sglang", write(tmp_path / "e.jsonl", header, rows), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["decisions"] == len(rows) and out["agree"] == len(rows) - 1 and sum(out["by_cause"].values()) == 1


def test_the_routers_own_choice_is_what_the_replay_remembers(tmp_path, capsys):
    """The router sent "A" to worker 1 although the lab would have said 0: the next "A" follows it to 1."""
    text = "Ā" + "." * 99
    rows = [{"t": 0, "text": text, "in_flight": [0, 0], "chosen": 1},
            {"t": 1, "text": text, "in_flight": [0, 0], "chosen": 1}]
    header = {**HEADER, "workers": 2, "tie_order": [0, 1]}
    assert main(["conformance", "sglang", write(tmp_path / "d.jsonl", header, rows), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["agree"] == 1 and out["by_cause"] == {"low_match, router took a least loaded worker": 1}


def test_the_tie_order_comes_from_the_header(tmp_path, capsys):
    rows = [{"t": 0, "text": "abc", "in_flight": [0, 0, 0], "chosen": 2}]
    header = {**HEADER, "workers": 3, "tie_order": [2, 0, 1]}
    assert main(["conformance", "sglang", write(tmp_path / "d.jsonl", header, rows)]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == "agree 1 of 1"


@pytest.mark.parametrize("lines, message", [
    ([], "empty; a decision file starts with its header line"),
    (["[1, 2]"], "the first line must be the header object"),
    (["{\"router\": 1"], "d.jsonl:1: not a JSON object"),
    ([{**HEADER, "policy": "round_robin"}], "policy 'round_robin' cannot be replayed"),
    ([{**HEADER, "workers": 0}], "workers 0; use a whole number from 1 to 4096"),
    ([{**HEADER, "tie_order": [0, 0, 1, 2]}], "tie_order [0, 0, 1, 2] must list each worker index 0 to 3 once"),
    ([{**HEADER, "config": {"cache_threshold": 2}}], "config.cache_threshold 2; use a number from 0 to 1"),
    ([{**HEADER, "max_tree_size": 0}], "max_tree_size 0; use a whole number of 1 or more"),
    ([HEADER, {"t": 0, "text": "a", "in_flight": [0, 0, 0], "chosen": 0}], "d.jsonl:2: in_flight must list 4"),
    ([HEADER, {"t": 0, "text": "a", "in_flight": [0, 0, 0, 0], "chosen": 4}], "chosen 4; use a worker index"),
    ([HEADER, {"t": 0, "text": 5, "in_flight": [0, 0, 0, 0], "chosen": 0}], "text must be a string"),
    ([HEADER, {"t": 2, "text": "a", "in_flight": [0] * 4, "chosen": 0},
      {"t": 1, "text": "a", "in_flight": [0] * 4, "chosen": 0}], "d.jsonl:3: t 1; use seconds since the first"),
    ([HEADER, {"t": 0, "text": "a", "in_flight": [0] * 4}], "the decision has no 'chosen'"),
    ([HEADER], "a header and no decisions"),
    ([HEADER, {"t": 0, "text": "a", "in_flight": [10 ** 39, 0, 0, 0], "chosen": 0}], "in_flight must list 4"),
    ([{**HEADER, "config": {"balance_rel_threshold": 1e300}}], "config.balance_rel_threshold 1e+300"),
    ([HEADER, '{"t": 0, "text": "a", "in_flight": [0, 0, 0, 0], "chosen": ' + "9" * 5000 + "}"],
     "d.jsonl:2: not a JSON object"),
])
def test_a_bad_decision_file_gets_one_clear_line_and_status_2(tmp_path, capsys, lines, message):
    path = tmp_path / "d.jsonl"
    path.write_text("".join((x if isinstance(x, str) else json.dumps(x)) + "\n" for x in lines), encoding="utf-8")
    assert main(["conformance", "sglang", str(path)]) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err


def test_a_file_from_one_router_is_not_replayed_as_the_other(tmp_path, capsys):
    rows = [{"t": 0, "text": "abc", "in_flight": [0, 0, 0, 0], "chosen": 0}]
    path = write(tmp_path / "v.jsonl", {**HEADER, "router": "vllm-router 0.1.17"}, rows)
    assert main(["conformance", "sglang", path]) == 2
    assert "recorded from vllm-router 0.1.17; replay it as vllm_router, not sglang" in capsys.readouterr().err
    assert main(["conformance", "vllm_router", path]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == "agree 1 of 1"


def test_a_corrupt_gzip_is_refused_plainly(tmp_path, capsys):
    path = tmp_path / "c.jsonl.gz"
    path.write_bytes(gzip.compress(b"{}\n")[:10] + b"\xff" * 40)  # a gzip header, then no valid deflate data
    assert main(["conformance", "sglang", str(path)]) == 2
    err = capsys.readouterr().err
    assert "not a UTF-8 JSON Lines file" in err and "Traceback" not in err


def test_a_missing_or_binary_file_is_refused_plainly(tmp_path, capsys):
    assert main(["conformance", "sglang", str(tmp_path / "nowhere.jsonl")]) == 2
    assert "No such file" in capsys.readouterr().err
    (tmp_path / "b.jsonl").write_bytes(b"\xff\xfe\x00garbage")
    assert main(["conformance", "sglang", str(tmp_path / "b.jsonl")]) == 2
    assert "not a UTF-8 JSON Lines file" in capsys.readouterr().err
