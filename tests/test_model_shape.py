"""The model's shape: its mode and engine decided in one place each, so adding a mode or an engine touches one file."""

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
MODEL = sorted((ROOT / "model").rglob("*.py"))


def name_of(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


def test_an_engine_is_started_in_one_place():
    """`model.run.start` is the only code that builds a run of either engine."""
    built = {}
    for path in MODEL:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("Run", "ServingRun"):
                built.setdefault(name_of(path), set()).add(node.func.id)
    assert built == {"model/run.py": {"Run", "ServingRun"}}


def test_the_mode_is_read_in_one_place():
    """`Scenario.serving` reads `fleet.decode`; everything else asks the scenario which mode it is in."""
    reads = []
    for path in MODEL:
        tree = ast.parse(path.read_text())
        called = {id(n.func) for n in ast.walk(tree) if isinstance(n, ast.Call)}  # bytes.decode() is no mode
        reads += [f"{name_of(path)}:{n.lineno}" for n in ast.walk(tree)
                  if isinstance(n, ast.Attribute) and n.attr == "decode" and id(n) not in called]
    assert reads == [f"model/config.py:{serving_line()}"]


def serving_line() -> int:
    tree = ast.parse((ROOT / "model" / "config.py").read_text())
    scenario = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "Scenario")
    prop = next(n for n in scenario.body if isinstance(n, ast.FunctionDef) and n.name == "serving")
    return next(n.lineno for n in ast.walk(prop) if isinstance(n, ast.Attribute) and n.attr == "decode")


def test_at_most_five_files_of_the_model_name_the_mode_key():
    naming = [name_of(p) for p in MODEL if "fleet.decode" in p.read_text().replace("fleet.decode_", "")]
    assert len(naming) <= 5, naming


@pytest.mark.parametrize("mode", [False, True])
def test_a_started_run_finishes_as_simulate_does(mode):
    from model import Scenario, simulate
    from model.run import start

    scenario = Scenario().with_text({"duration_s": "40"}).with_values({"fleet.decode": mode})
    run = start(scenario)
    assert type(run).__name__ == ("ServingRun" if mode else "Run")
    assert run.finish().to_dict() == simulate(scenario).to_dict()
