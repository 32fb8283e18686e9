"""Each package's public surface is its `__all__`, and that is what other code imports.

In the manner of httpx's own check: a package (`model`, `missions`, `lab`) is
used by the others through its top-level names only, every such name is in
its `__all__`, and `__all__` lists nothing that no other package or
benchmark uses: a name only tests need stays in its module, and the tests
import it from there. A module inside a package may import its siblings freely.
"""

import ast
import importlib
from pathlib import Path

import pytest
from helpers import ROOT

PACKAGES = ("model", "missions", "lab")


def imports_from(path: Path) -> list[tuple[str, str, int]]:
    """(module, name, line) for every `from X import name` with an absolute X in one file."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found += [(node.module, alias.name, node.lineno) for alias in node.names]
    return found


def sources(*folders: str) -> list[Path]:
    return [p for folder in folders for p in sorted((ROOT / folder).rglob("*.py"))]


def crossings() -> list[tuple[str, str, str, Path, int]]:
    """(package, module, name, file, line) for every import of a package from outside it.

    `from lab import build` imports a module, not a name: it counts as `lab.site.build`.
    """
    out = []
    for path in sources(*PACKAGES, "tests", "bench"):
        own = path.relative_to(ROOT).parts[0]
        for module, name, line in imports_from(path):
            package = module.split(".")[0]
            if package in PACKAGES and package != own:
                if module == package and (ROOT / package / f"{name}.py").is_file():
                    module = f"{package}.{name}"
                out.append((package, module, name, path, line))
    return out


def test_other_packages_import_a_package_by_its_top_level_names_only():
    deep = [f"{path.relative_to(ROOT)}:{line} imports {name} from {module}"
            for package, module, name, path, line in crossings()
            if module != package and path.relative_to(ROOT).parts[0] in PACKAGES]
    assert not deep, "import these from the package itself (and list them in its __all__):\n" + "\n".join(deep)


@pytest.mark.parametrize("package", PACKAGES)
def test_all_lists_exactly_what_is_imported_from_outside(package):
    exported = set(importlib.import_module(package).__all__)
    found = [(name, path) for pkg, module, name, path, _ in crossings() if pkg == package and module == package]
    used = {name for name, _ in found}
    needed = {name for name, path in found if path.relative_to(ROOT).parts[0] != "tests"}
    assert used <= exported, f"{package}: imported from outside but missing from __all__: {sorted(used - exported)}"
    assert exported <= needed, (f"{package}: in __all__ but used by no other package or bench (tests import it from its "
                                f"module): {sorted(exported - needed)}")


@pytest.mark.parametrize("package", PACKAGES)
def test_every_name_in_all_exists(package):
    module = importlib.import_module(package)
    missing = [name for name in module.__all__ if not hasattr(module, name)]
    assert not missing, f"{package}.__all__ names what it does not define: {missing}"
