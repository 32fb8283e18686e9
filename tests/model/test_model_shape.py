"""The model's shape: its mode and engine decided in one place each, so adding a mode or an engine touches one file."""

import ast
from pathlib import Path

import pytest
from helpers import ROOT

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


def test_every_surface_reads_the_router_registry():
    """A router is one file of model/routing/policies/ and one line of model/routing/kinds.py: nothing else lists them."""
    from lab.page.controls import CONTROLS
    from lab.page.glossary import brief, explain
    from model import ROUTERS, Scenario, spec_of
    from model.routing.kinds import KINDS

    assert spec_of("router.kind").choices == tuple(ROUTERS)
    menu = next(c for c in CONTROLS if c.key == "router.kind")
    assert menu.labels == tuple(p.label for p in ROUTERS.values())
    for key, policy in ROUTERS.items():
        assert explain(key) == policy.help and brief(key) == policy.brief, key
        assert Scenario().with_text({"router.kind": key}).router.kind == key
    files = sorted(p.stem for p in (ROOT / "model" / "routing" / "policies").glob("*.py") if p.stem != "__init__")
    assert sorted(KINDS) == files == sorted(ROUTERS), "each policy file is listed in KINDS, once, by its key"


def test_a_policy_that_compares_something_says_what_to_the_hindsight_explainer():
    from model import ROUTERS

    blind = {key for key, p in ROUTERS.items() if not hasattr(p, "scores")}
    assert blind == {"round_robin", "random", "consistent_hash"}


def model_imports() -> dict[str, set[str]]:
    """Each model module's model imports: top level, in functions and under TYPE_CHECKING alike.

    The registry's `import_module(f"{__name__}.{kind}")` counts as importing every file it names."""
    modules = {}
    for path in MODEL:
        parts = path.relative_to(ROOT).with_suffix("").parts
        modules[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    graph = {}
    for name, path in modules.items():
        deps = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "model":
                deps |= {m for m in (node.module, *(f"{node.module}.{a.name}" for a in node.names)) if m in modules}
            elif isinstance(node, ast.Import):
                deps |= {a.name for a in node.names if a.name in modules}
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "import_module":
                deps |= {m for m in modules if m.startswith(name + ".")}
        graph[name] = deps - {name, "model"}  # the package's __init__ gathers the public names; nothing needs it
    return graph


def test_the_model_has_no_import_cycle_not_even_for_type_checking():
    from graphlib import CycleError, TopologicalSorter

    graph = {k: v for k, v in model_imports().items() if k != "model"}
    try:
        TopologicalSorter(graph).prepare()
    except CycleError as exc:
        pytest.fail(f"import cycle in model/: {' -> '.join(exc.args[1])}")


def test_the_scenarios_declaration_imports_only_leaves():
    """config.py lists the routers and presets from modules that import nothing of the model's that reads a scenario."""
    graph = model_imports()
    seen, todo = set(), list(graph["model.config"])
    while todo:
        m = todo.pop()
        if m not in seen:
            seen.add(m)
            todo += graph[m]
    assert "model.config" not in seen and seen <= {"model.routing.kinds", "model.gpus.hardware", "model.gpus.gpu",
                                                    "model.gpus.gpufits"}, sorted(seen)


def test_only_the_loop_touches_its_heap():
    """Engines schedule through `EventLoop.at`/`push` and step through `peek`/`step`; no one reaches inside."""
    reaching = [f"{name_of(path)}:{n.lineno}" for path in MODEL for n in ast.walk(ast.parse(path.read_text()))
                if isinstance(n, ast.Attribute) and n.attr in ("_heap", "_seq")
                and not (isinstance(n.value, ast.Name) and n.value.id == "self")]
    assert reaching == []
