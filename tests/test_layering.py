"""Imports point one way, and the code that runs in the browser needs nothing beyond the standard library."""

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
BROWSER_LAB = {"view.py", "figures.py", "tracepage.py", "compare.py", "urlstate.py", "missionview.py", "controls.py",
               "glossary.py", "fleetview.py", "presets.py", "teach.py", "measured.py", "fitfile.py",
               "__init__.py"}  # what Pyodide runs of lab/
NO_CLOCKS_OR_IO = {"time", "datetime", "os", "pathlib", "io", "socket", "secrets", "uuid", "threading"}


def imports(path: Path) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            names.add(node.module.split(".")[0])
    return names


def files(package: str, only: set[str] | None = None) -> list[Path]:
    return [p for p in sorted((ROOT / package).glob("*.py")) if only is None or p.name in only]


@pytest.mark.parametrize("path", files("model"), ids=lambda p: p.name)
def test_model_uses_the_standard_library_only_and_no_clocks_or_io(path):
    found = imports(path)
    assert found <= set(sys.stdlib_module_names), found - set(sys.stdlib_module_names)
    assert not found & NO_CLOCKS_OR_IO, found & NO_CLOCKS_OR_IO


@pytest.mark.parametrize("path", files("missions"), ids=lambda p: p.name)
def test_missions_use_the_model_and_the_standard_library_only(path):
    found = imports(path)
    assert found <= set(sys.stdlib_module_names) | {"model"}
    assert not found & NO_CLOCKS_OR_IO


@pytest.mark.parametrize("path", files("lab", BROWSER_LAB), ids=lambda p: p.name)
def test_the_view_code_run_by_pyodide_needs_no_panel_bokeh_or_tornado(path):
    found = imports(path)
    assert found <= set(sys.stdlib_module_names) | {"model", "missions", "lab"}, found


# Run in a fresh interpreter: in this one another test may have imported these modules already.
IMPORT_IN_A_FRESH_INTERPRETER = """
import random, sys
state = random.getstate()
import model, missions, lab.view, lab.urlstate, lab.missionview
assert random.getstate() == state, "importing moved the shared random generator"
heavy = sorted(m for m in sys.modules if m.split(".")[0] in ("panel", "bokeh", "tornado"))
assert not heavy, f"the browser-side code imported {heavy[:5]}"
print(" ".join(sorted(m for m in sys.modules if m.startswith("lab."))))
"""


def test_importing_the_browser_side_code_touches_no_global_random_state_and_no_panel_bokeh_or_tornado():
    done = subprocess.run([sys.executable, "-c", IMPORT_IN_A_FRESH_INTERPRETER], cwd=ROOT,
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    pulled = {name.removeprefix("lab.") + ".py" for name in done.stdout.split()}
    assert pulled <= BROWSER_LAB, f"the page's view code also runs {sorted(pulled - BROWSER_LAB)}: list it in BROWSER_LAB"
