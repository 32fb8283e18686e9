"""Where code runs decides its package, imports point one way, and the page's wheel holds only what the page runs.

The packages, from what runs anywhere to what runs in CPython only:

    model          the simulation: the standard library only, no clocks, no files
    missions       mission data and scoring: the model and the standard library
    lab.page       the page's view code: what Pyodide runs (and CPython, for the first paint, the CLI, tests)
    lab.common     CPython: the public traces and kernel profiles, missions on replayed traffic, a run's bound
    lab.site       CPython: the static site's build
    lab.server     CPython: `prefix-lab serve` and the workshop room
    lab.cli        CPython: the command line

A lab package imports only those before it in `LAB`; the page's wheel is model, missions and lab.page.
"""

import ast
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from helpers import ROOT

LAB = ("page", "common", "site", "server", "cli")  # each may import those before it, never those after
NO_CLOCKS_OR_IO = {"time", "datetime", "os", "pathlib", "io", "socket", "secrets", "uuid", "threading"}
# Imports against the order, each inside one function that only CPython calls, with the reason:
LATE = {("lab/page/figures/measured.py", "lab.common.profiles")}  # the CPython first paint reads the points from ../shared;
#                                                           the page reads those the build wrote into its wheel


def imports(path: Path, top_level_only: bool = False) -> set[str]:
    """The absolute modules `path` imports (a relative import is named from `path`'s own package)."""
    tree = ast.parse(path.read_text())
    nodes = tree.body if top_level_only else ast.walk(tree)
    package = ".".join(path.relative_to(ROOT).with_suffix("").parts[:-1])
    names = set()
    for node in nodes:
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(package.split(".")[: len(package.split(".")) - node.level + 1] + ([base] if base else []))
            names.add(base)
            names |= {f"{base}.{alias.name}" for alias in node.names if base in ("lab", "lab.page")}
    return names


def roots(names: set[str]) -> set[str]:
    return {name.split(".")[0] for name in names}


def files(package: str) -> list[Path]:
    return sorted((ROOT / package).rglob("*.py"))


def rank(module: str) -> int | None:
    """Where a `lab.<package>...` module stands in `LAB` (None for `lab` itself or anything else)."""
    parts = module.split(".")
    return LAB.index(parts[1]) if parts[0] == "lab" and len(parts) > 1 and parts[1] in LAB else None


@pytest.mark.parametrize("path", files("model"), ids=lambda p: p.relative_to(ROOT).as_posix())
def test_model_uses_the_standard_library_only_and_no_clocks_or_io(path):
    found = roots(imports(path)) - {"model"}
    assert found <= set(sys.stdlib_module_names), found - set(sys.stdlib_module_names)
    assert not found & NO_CLOCKS_OR_IO, found & NO_CLOCKS_OR_IO


@pytest.mark.parametrize("path", files("missions"), ids=lambda p: p.relative_to(ROOT).as_posix())
def test_missions_use_the_model_and_the_standard_library_only(path):
    found = roots(imports(path))
    assert found <= set(sys.stdlib_module_names) | {"model", "missions"}
    assert not found & NO_CLOCKS_OR_IO


@pytest.mark.parametrize("path", files("lab/page"), ids=lambda p: p.name)
def test_the_view_code_run_by_pyodide_needs_no_panel_bokeh_or_tornado(path):
    found = roots(imports(path))
    assert found <= set(sys.stdlib_module_names) | {"model", "missions", "lab"}, found


LAB_FILES = [p for package in LAB for p in files(f"lab/{package}")]


@pytest.mark.parametrize("path", LAB_FILES, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_a_lab_package_imports_only_the_packages_before_it(path):
    own = LAB.index(path.relative_to(ROOT).parts[1])
    name = path.relative_to(ROOT).as_posix()
    against = {m for m in imports(path) if (r := rank(m)) is not None and r > own and (name, m) not in LATE}
    assert not against, f"{name} imports {sorted(against)}, which run later than it (order: {', '.join(LAB)})"
    late = {m for m in imports(path) - imports(path, top_level_only=True) if (name, m) in LATE}
    assert {m for m in imports(path, top_level_only=True) if (name, m) in LATE} == set(), \
        "an import against the order is allowed only inside a function CPython alone calls"
    assert late <= {m for n, m in LATE if n == name}


def test_each_import_against_the_order_is_still_there():  # else LATE allows what nothing needs
    for name, module in LATE:
        assert module in imports(ROOT / name), f"{name} no longer imports {module}: drop it from LATE"


# Run in a fresh interpreter: in this one another test may have imported these modules already.
IMPORT_IN_A_FRESH_INTERPRETER = """
import random, sys
state = random.getstate()
import model, missions, lab.page.view, lab.page.urlstate, lab.page.missionview, lab.page.wheelzip
assert random.getstate() == state, "importing moved the shared random generator"
heavy = sorted(m for m in sys.modules if m.split(".")[0] in ("panel", "bokeh", "tornado"))
assert not heavy, f"the browser-side code imported {heavy[:5]}"
print(" ".join(sorted(m for m in sys.modules if m.startswith("lab."))))
"""


def test_importing_the_browser_side_code_touches_no_global_random_state_and_no_panel_bokeh_or_tornado():
    done = subprocess.run([sys.executable, "-c", IMPORT_IN_A_FRESH_INTERPRETER], cwd=ROOT,
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    pulled = set(done.stdout.split())
    assert all(name == "lab.page" or name.startswith("lab.page.") for name in pulled), sorted(pulled)


def test_the_pages_wheel_holds_the_model_the_missions_and_the_view_code_only(tmp_path):
    from lab.site.build import _write_wheel

    wheel = tmp_path / _write_wheel(tmp_path / "wheels")
    with zipfile.ZipFile(wheel) as zf:
        modules = [n for n in zf.namelist() if n.endswith(".py")]
    shipped = {n.split("/")[0] if not n.startswith("lab/") else "/".join(n.split("/")[:2]) for n in modules}
    assert shipped == {"model", "missions", "lab/__init__.py", "lab/page"}, shipped
    assert not [n for n in modules if n.split("/")[:2] in (["lab", p] for p in LAB[1:])]
    assert {p.relative_to(ROOT).as_posix() for p in files("lab/page")} <= set(modules)


def test_no_package_holds_more_than_fifteen_modules():
    for folder in sorted({p.parent for pkg in ("model", "missions", "lab") for p in files(pkg)}):
        count = len([p for p in folder.glob("*.py") if p.name != "__init__.py"])
        assert count <= 15, f"{folder.relative_to(ROOT)} holds {count} modules: split it by seam"
