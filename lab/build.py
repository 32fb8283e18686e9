"""`prefix-lab build`: write the whole static site into one folder.

The site holds everything the browser needs, so it works offline and from
any static server:

    index.html, embed.html   the pages (Panel layout, default numbers baked in)
    bridge.js, worker.js, lab.css, favicon.svg   hand-written, from static/
    static/js/               BokehJS, from the installed bokeh package
    static/extensions/panel/ Panel's JS and CSS, from the installed panel package
    pyodide/                 the Pyodide core, from node_modules (package-lock.json)
    wheels/                  this project's pure-Python wheel (model, missions, lab)
    build.json               what was built from what (`serve` uses it to rebuild)

Every text file and the wasm also get a gzip twin (`.gz`) for the server.
Panel points some stylesheets at its CDN; the build rewrites those to the
copies above and fails if any other absolute URL is left for the browser
to load.
"""

import gzip
import hashlib
import json
import os
import re
import shutil
import zipfile
from pathlib import Path

__all__ = ["BuildError", "build_site", "site_is_current", "source_stamp"]

ROOT = Path(__file__).resolve().parent.parent  # the project folder (a clone)
STATIC = ROOT / "static"
PACKAGES = ("model", "missions", "lab")
PYODIDE_FILES = ("pyodide.mjs", "pyodide.asm.mjs", "pyodide.asm.wasm", "python_stdlib.zip", "pyodide-lock.json",
                 "package.json")
HAND_WRITTEN = ("bridge.js", "worker.js", "lab.css", "favicon.svg")  # boot.js is inlined into the pages
COMPRESS = (".html", ".js", ".mjs", ".css", ".json", ".svg", ".wasm", ".zip", ".whl")
WHEEL_DATE = (2020, 1, 1, 0, 0, 0)  # fixed: the same sources give the same wheel bytes


class BuildError(RuntimeError):
    """The site cannot be built; the message says what is missing and how to get it."""


def pyodide_dir() -> Path:
    """Where the pinned Pyodide core is: $PREFIX_LAB_PYODIDE, or node_modules/pyodide."""
    candidates = [Path(os.environ["PREFIX_LAB_PYODIDE"])] if os.environ.get("PREFIX_LAB_PYODIDE") else []
    candidates += [ROOT / "node_modules" / "pyodide", Path.cwd() / "node_modules" / "pyodide"]
    for path in candidates:
        if (path / "pyodide.asm.wasm").is_file():
            return path
    raise BuildError("the Pyodide core is missing: run 'npm ci' in the project folder "
                     f"({ROOT}), or set PREFIX_LAB_PYODIDE to a folder holding pyodide.asm.wasm")


def version() -> str:
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as dist_version

    try:
        return dist_version("prefix-lab")
    except PackageNotFoundError:
        return "0.0.0"


def _sources() -> list[Path]:
    files = [p for pkg in PACKAGES for p in sorted((ROOT / pkg).rglob("*.py"))]
    files += [STATIC / name for name in sorted(os.listdir(STATIC))]
    return files


def source_stamp() -> str:
    """A digest of everything the site is built from (our sources, Pyodide, Bokeh and Panel versions)."""
    import bokeh
    import panel

    digest = hashlib.sha256()
    for path in _sources():
        digest.update(str(path.relative_to(ROOT)).encode())
        digest.update(path.read_bytes())
    lock = ROOT / "package-lock.json"
    if lock.is_file():
        digest.update(lock.read_bytes())
    digest.update(f"bokeh {bokeh.__version__} panel {panel.__version__} {version()}".encode())
    return digest.hexdigest()


def site_is_current(out: Path) -> bool:
    try:
        built = json.loads((out / "build.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return built.get("stamp") == source_stamp() and (out / "index.html").is_file()


def build_site(out: Path) -> Path:
    """Build the site into `out` (replacing what is there) and return its path."""
    out = out.resolve()
    pyodide = pyodide_dir()
    if not STATIC.is_dir():
        raise BuildError(f"static files not found at {STATIC}: build from a clone of the project")
    if out.exists() and not out.is_dir():
        raise BuildError(f"{out} is a file; choose a folder for --out")
    if out.exists():
        if not (out / "build.json").exists() and any(out.iterdir()):
            raise BuildError(f"{out} exists and is not a prefix-lab site; choose another --out or empty it")
        shutil.rmtree(out)
    out.mkdir(parents=True)

    wheel = _write_wheel(out / "wheels")
    for name in PYODIDE_FILES:
        if (pyodide / name).is_file():
            _copy(pyodide / name, out / "pyodide" / name)
    _copy_bokeh_panel(out)
    for name in HAND_WRITTEN:
        _copy(STATIC / name, out / name)
    _write_pages(out, wheel)
    _precompress(out)
    (out / "build.json").write_text(json.dumps({
        "stamp": source_stamp(), "version": version(), "wheel": wheel,
        "pyodide": json.loads((pyodide / "package.json").read_text())["version"],
    }, indent=1), encoding="utf-8")
    return out


def _copy(src: Path, dst: Path) -> None:
    dst.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(src, dst)


def _write_wheel(folder: Path) -> str:
    """A pure-Python wheel of model/, missions/ and lab/ (what Pyodide unpacks).

    Written with zipfile rather than a build backend so that `prefix-lab build`
    works offline and gives byte-identical wheels for identical sources.
    """
    ver = version()
    name = f"prefix_lab-{ver}-py3-none-any.whl"
    info = f"prefix_lab-{ver}.dist-info"
    folder.mkdir(parents=True, exist_ok=True)
    entries: list[tuple[str, bytes]] = []
    for pkg in PACKAGES:
        for path in sorted((ROOT / pkg).rglob("*.py")):
            entries.append((path.relative_to(ROOT).as_posix(), path.read_bytes()))
    entries.append((f"{info}/METADATA", f"Metadata-Version: 2.1\nName: prefix-lab\nVersion: {ver}\n".encode()))
    entries.append((f"{info}/WHEEL", b"Wheel-Version: 1.0\nGenerator: prefix-lab build\nRoot-Is-Purelib: true\nTag: py3-none-any\n"))
    record = "".join(f"{arc},sha256={_b64digest(data)},{len(data)}\n" for arc, data in entries)
    entries.append((f"{info}/RECORD", (record + f"{info}/RECORD,,\n").encode()))
    with zipfile.ZipFile(folder / name, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for arc, data in entries:
            zi = zipfile.ZipInfo(arc, date_time=WHEEL_DATE)
            zi.compress_type = zipfile.ZIP_DEFLATED
            zi.external_attr = 0o644 << 16
            zf.writestr(zi, data)
    return f"wheels/{name}"


def _b64digest(data: bytes) -> str:
    import base64

    return base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def _copy_bokeh_panel(out: Path) -> None:
    import bokeh
    import panel

    bokeh_js = Path(bokeh.__file__).parent / "server" / "static" / "js"
    for name in ("bokeh.min.js", "bokeh-gl.min.js", "bokeh-widgets.min.js", "bokeh-tables.min.js"):
        _copy(bokeh_js / name, out / "static" / "js" / name)
    dist = Path(panel.__file__).parent / "dist"
    target = out / "static" / "extensions" / "panel"
    _copy(dist / "panel.min.js", target / "panel.min.js")
    shutil.copytree(dist / "css", target / "css")
    shutil.copytree(dist / "bundled" / "theme", target / "bundled" / "theme")
    shutil.copytree(dist / "bundled" / "reactiveesm", target / "bundled" / "reactiveesm")


def _write_pages(out: Path, wheel: str) -> None:
    import panel
    from bokeh.resources import Resources

    from model import Scenario

    from .layout import embed_page, lab_page
    from .view import METRICS, render

    view = render(Scenario())
    dom = view["patches"]["dom"]
    headline = [(key, label, dom[f'[data-metric="{key}"]']["text"], dom[f'[data-metric="{key}"]']["attrs"]["data-value"])
                for key, label, _ in METRICS]
    variables = {
        "headline": headline,
        "notices": "",
        "events": dom["#events-list"]["html"],
        "readout": dom["#readout"]["text"],
        "missions": dom["#missions"]["html"],
    }
    from .site import page_variables  # static/site.toml's title, links and footer; the glossary; chart captions
    variables.update(page_variables(view))
    cdn = f"https://cdn.holoviz.org/panel/{panel.__version__}/dist/"
    for filename, make in (("index.html", lab_page), ("embed.html", embed_page)):
        template = make(view)
        for key, value in variables.items():
            template.add_variable(key, value)
        template.add_variable("wheel", wheel)
        template.add_variable("boot_script", (STATIC / "boot.js").read_text(encoding="utf-8"))
        path = out / filename
        template.save(str(path), resources=Resources(mode="server", root_url="./"))
        text = _defer_scripts(path.read_text(encoding="utf-8").replace(cdn, "static/extensions/panel/"))
        _check_local(filename, text)
        path.write_text(text, encoding="utf-8")


def _defer_scripts(text: str) -> str:
    """Let the page paint its numbers before BokehJS and Panel (3 MB) execute.

    Bokeh writes its scripts as blocking tags in <head>; deferred, they still run in
    order and before DOMContentLoaded, which is when Bokeh's embed code starts. Its
    inline `Bokeh.set_log_level` line would run too early, so it goes (info is the
    default level anyway).
    """
    text = re.sub(r'<script type="text/javascript">\s*Bokeh\.set_log_level\("info"\);\s*</script>', "", text)
    return text.replace('<script type="text/javascript" src=', '<script defer type="text/javascript" src=')


def _check_local(filename: str, text: str) -> None:
    """Fail the build if the page would load anything from another origin (plain links are fine)."""
    loads = re.sub(r"<a\s[^>]*>", "<a>", text)
    found = re.findall(r"""(?:src|href)\s*=\s*["']((?:https?:)?//[^"']+)""", loads)
    found += re.findall(r"""https?://cdn[^"'\s)]*""", loads)
    if found:
        raise BuildError(f"{filename} would load from another origin: {', '.join(sorted(set(found))[:3])}")


def _precompress(out: Path) -> None:
    for path in sorted(out.rglob("*")):
        if path.is_file() and path.suffix in COMPRESS and path.stat().st_size > 1024:
            data = path.read_bytes()
            packed = gzip.compress(data, compresslevel=9, mtime=0)
            if len(packed) < len(data) * 0.9:
                path.with_name(path.name + ".gz").write_bytes(packed)
