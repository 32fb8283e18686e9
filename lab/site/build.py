"""`prefix-lab build`: write the whole static site into one folder.

The site holds everything the browser needs, so it works offline and from
any static server:

    index.html, embed.html   the pages (Panel layout, default numbers baked in)
    bridge.*.js, worker.*.js, scheduler.*.mjs, wire.*.mjs, film.*.js, lab.*.css, favicon.svg   hand-written, from static/
    static-*/js/             BokehJS (the bundles the page loads), from the installed bokeh package
    static-*/extensions/panel/ Panel's JS and CSS, from the installed panel package
    pyodide-*/               the Pyodide core, from node_modules (package-lock.json), with
                             a standard library trimmed to what the page imports and
                             precompiled to .pyc (lab/site/stdlib.py)
    wheels/                  this project's pure-Python wheel (model, missions, lab)
    mission-sweeps.json      every mission's swept setups and their figures (lab/site/missionsweep.py)
    docs/                    the documentation site, built by MkDocs from docs/ (lab/site/docsite.py)
    build.json               what was built from what, every file's size and sha256,
                             the sha256 of each page's inline scripts (for the CSP),
                             and `assets`: each asset's hashed name
The `*` is a content hash (lab/site/assets.py): every name but the pages',
build.json's and the favicon's changes when its content does, so a server
can let browsers keep those files for good.

Every text file and the wasm also get a gzip twin (`.gz`) for the server.
Panel points some stylesheets at its CDN; the build rewrites those to the
copies above and fails if any other absolute URL is left for the browser
to load.

A build never changes the site a server is reading. It fills a new sibling
folder (`site.build-XXXXXXXX`) and then points `site`, a relative symlink,
at it with one `os.replace`: at every instant `site` names a complete
site, the old one or the new. (Renaming the old folder away and the new
one in would leave a moment with no `site` at all; Linux can exchange two
folders atomically, but not through Python's standard library.) The
previous build is kept, for requests that were already reading it; older
ones are removed. A `site` folder left by an older version of this
command is moved aside once, which is the only moment without a site.
"""

import gzip
import hashlib
import json
import os
import re
import shutil
import sys
import tempfile
import zipfile
from pathlib import Path

from lab.site import docsite
from lab.site.assets import hash_file, hash_folder
from lab.site.snapshot import SnapshotError, write_snapshot
from lab.site.stdlib import StdlibError, write_stdlib

__all__ = ["BuildError", "build_site", "inline_script_hashes", "site_is_current", "source_stamp"]

ROOT = Path(__file__).resolve().parents[2]  # the project folder (a clone)
STATIC = ROOT / "static"
PACKAGES = ("model", "missions", "lab")  # the sources a build is made from
WHEEL = ("model", "missions", "lab/__init__.py", "lab/page")  # what the page runs: no build, server or CLI module
PYODIDE_FILES = ("pyodide.mjs", "pyodide.asm.mjs", "pyodide.asm.wasm", "python_stdlib.zip", "pyodide-lock.json",
                 "package.json")
HAND_WRITTEN = ("bridge.js", "worker.js", "scheduler.mjs", "wire.mjs", "film.js", "lab.css", "favicon.svg")  # boot.js is inlined into the pages
# The BokehJS bundles the pages load: the widgets need bokeh-widgets, and Panel's own bundle will not
# start without bokeh-tables; nothing draws with WebGL, so bokeh-gl (0.2 MB sent) is left out.
BOKEH_BUNDLES = ("bokeh.min.js", "bokeh-widgets.min.js", "bokeh-tables.min.js")
COMPRESS = (".html", ".js", ".mjs", ".css", ".json", ".svg", ".wasm", ".zip", ".whl", ".bin")
WHEEL_DATE = (2020, 1, 1, 0, 0, 0)  # fixed: the same sources give the same wheel bytes
BUILD_MARK = ".build-"  # a build of `site` lives in the sibling folder `site.build-XXXXXXXX`
PAGES = ("index.html", "embed.html")


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
    files += docsite.sources()  # the documentation site, built into docs/ (lab/site/docsite.py)
    return files + [ROOT / "scripts" / "pyc_stdlib.mjs", ROOT / "scripts" / "snapshot.mjs"]


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
    from lab.common.profiles import shared_profiles
    for path in (p for paths in shared_profiles().values() for p in paths):  # the measured points the page embeds
        digest.update(path.name.encode())
        digest.update(path.read_bytes())
    digest.update(f"bokeh {bokeh.__version__} panel {panel.__version__} {version()} {docsite.versions()}".encode())
    return digest.hexdigest()


def site_is_current(out: Path) -> bool:
    """Whether `out` was built from the current sources and still holds every file as built.

    Sizes are checked for every file and sha256 for every file too (about 25 ms
    for the whole site), so a cut or edited wasm, wheel or gzip twin counts as stale.
    """
    try:
        built = json.loads((out / "build.json").read_text(encoding="utf-8"))
        if built.get("stamp") != source_stamp() or not isinstance(built.get("files"), dict):
            return False
        for name, (size, digest) in built["files"].items():
            path = out / name
            if path.stat().st_size != size or _sha256(path) != digest:
                return False
    except (OSError, ValueError, TypeError, AttributeError):
        return False
    return True


def build_site(out: Path) -> Path:
    """Build the site and make `out` point at it in one step; return `out`.

    Raises BuildError, naming the problem, when something needed is missing
    or `out` cannot be written.
    """
    out = Path(os.path.abspath(out))  # not resolve(): `out` itself may be the symlink to swap
    pyodide = pyodide_dir()
    if not STATIC.is_dir():
        raise BuildError(f"static files not found at {STATIC}: build from a clone of the project")
    _check_target(out)
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=out.name + BUILD_MARK, dir=out.parent))
        staging.chmod(0o755)  # mkdtemp makes it private; any static server may need to read it
    except (OSError, ValueError) as exc:  # ValueError: a NUL in the path
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise BuildError(f"cannot write the site at {out}: {reason}; "
                         "choose a folder you can write to with --out") from None
    try:
        _fill(staging, pyodide)
        previous = _swap_in(out, staging)
    except OSError as exc:
        shutil.rmtree(staging, ignore_errors=True)
        raise BuildError(f"writing the site at {out} failed: {exc.strerror or exc}"
                         + (f" ({exc.filename})" if exc.filename else "")) from None
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    _prune(out, keep={staging.name, previous})
    return out


def _check_target(out: Path) -> None:
    if out.is_symlink() and not out.exists():
        return  # a dangling link: nothing to lose, the swap replaces it
    if out.exists() and not out.is_dir():
        raise BuildError(f"{out} is a file; choose a folder for --out")
    if out.is_dir() and not (out / "build.json").exists() and any(out.iterdir()):
        raise BuildError(f"{out} exists and is not a prefix-lab site; choose another --out or empty it")


def _fill(folder: Path, pyodide: Path) -> None:
    """Write the whole site into `folder`; build.json last, so a folder with one is complete."""
    wheel = _write_wheel(folder / "wheels")
    for name in PYODIDE_FILES:
        if (pyodide / name).is_file():
            _copy(pyodide / name, folder / "pyodide" / name)
    stdlib = _write_stdlib(folder / "pyodide" / "python_stdlib.zip", pyodide, folder / wheel)
    _copy_bokeh_panel(folder)
    for name in HAND_WRITTEN:
        _copy(STATIC / name, folder / name)
    assets, snapshot = _hash_assets(folder, wheel, stdlib["kind"] == "pyc")
    _write_pages(folder, assets)
    from lab.common.tracemission import write_slices  # missions' traffic from public traces: a fixed name, never hashed
    for note in write_slices(folder):
        print(f"prefix-lab build: {note}", file=sys.stderr)
    from lab.site.missionsweep import write_distributions  # every mission's sweep, cached by the model's digest
    for note in write_distributions(folder):
        print(f"prefix-lab build: {note}", file=sys.stderr)
    try:
        for note in docsite.write_docs(folder / "docs"):
            print(f"prefix-lab build: {note}", file=sys.stderr)
    except docsite.DocsError as exc:
        raise BuildError(str(exc)) from None
    _precompress(folder)
    files = {path.relative_to(folder).as_posix(): [path.stat().st_size, _sha256(path)]
             for path in sorted(folder.rglob("*")) if path.is_file()}
    (folder / "build.json").write_text(json.dumps({
        "stamp": source_stamp(), "version": version(), "wheel": assets["wheel"], "assets": assets, "stdlib": stdlib,
        "snapshot": snapshot,
        "pyodide": json.loads((pyodide / "package.json").read_text())["version"],
        "inline_scripts": {name: inline_script_hashes((folder / name).read_text(encoding="utf-8"))
                           for name in (*PAGES, *docsite.inline_script_pages(folder))},
        "files": files,
    }, indent=1), encoding="utf-8")


def _swap_in(out: Path, staging: Path) -> str | None:
    """Point `out` at `staging` atomically; return the name of the build it pointed at before."""
    previous = os.readlink(out) if out.is_symlink() else None
    if out.is_dir() and not out.is_symlink():  # a plain folder: an empty one, or a site from an older version
        if any(out.iterdir()):
            aside = Path(tempfile.mkdtemp(prefix=out.name + BUILD_MARK, dir=out.parent))
            os.replace(out, aside)  # onto the empty folder just made: a unique name, taken atomically
            previous = aside.name
        else:
            out.rmdir()
    link = out.parent / f".{out.name}.link-{os.getpid()}-{os.urandom(4).hex()}"
    os.symlink(staging.name, link)  # relative: the parent folder can move
    try:
        os.replace(link, out)
    except OSError:
        link.unlink(missing_ok=True)
        raise
    return previous


def _prune(out: Path, keep: set[str | None]) -> None:
    """Remove complete builds of `out` other than `keep` (the new one and the one before)."""
    pattern = re.compile(re.escape(out.name + BUILD_MARK) + r"[a-z0-9_]{8}")
    for folder in out.parent.iterdir():
        if (pattern.fullmatch(folder.name) and folder.name not in keep and not folder.is_symlink()
                and (folder / "build.json").is_file()):
            shutil.rmtree(folder, ignore_errors=True)


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def inline_script_hashes(html: str) -> list[str]:
    """CSP sources (`'sha256-...'`) for every inline script a browser would run in `html`.

    Scripts with a `src` are covered by `'self'`; data blocks (JSON, import maps
    for a shim) are not run, so they need no hash.
    """
    import base64

    found = []
    for attrs, body in re.findall(r"<script\b([^>]*)>(.*?)</script>", html, flags=re.S | re.I):
        kind = re.search(r"""\btype\s*=\s*["']?([^"'\s>]+)""", attrs, flags=re.I)
        runs = kind is None or kind.group(1).lower() in ("text/javascript", "application/javascript", "module")
        if runs and not re.search(r"\bsrc\s*=", attrs, flags=re.I):
            digest = base64.b64encode(hashlib.sha256(body.encode("utf-8")).digest()).decode()
            found.append(f"'sha256-{digest}'")
    return sorted(set(found))


def _copy(src: Path, dst: Path) -> None:
    dst.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(src, dst)


def _write_wheel(folder: Path) -> str:
    """A pure-Python wheel of what the page runs, `WHEEL`: model/, missions/ and lab/page/ (what Pyodide unpacks).

    Written with zipfile rather than a build backend so that `prefix-lab build`
    works offline and gives byte-identical wheels for identical sources.
    """
    ver = version()
    name = f"prefix_lab-{ver}-py3-none-any.whl"
    info = f"prefix_lab-{ver}.dist-info"
    folder.mkdir(parents=True, exist_ok=True)
    entries: list[tuple[str, bytes]] = []
    for part in WHEEL:
        paths = [ROOT / part] if part.endswith(".py") else sorted((ROOT / part).rglob("*.py"))
        entries += [(path.relative_to(ROOT).as_posix(), path.read_bytes()) for path in paths]
    from lab.page.figures.measured import EMBEDDED, embedded_module
    entries.append((f"lab/page/figures/{EMBEDDED}.py", embedded_module()))  # the few measured points the page draws
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
    for name in BOKEH_BUNDLES:
        _copy(bokeh_js / name, out / "static" / "js" / name)
    dist = Path(panel.__file__).parent / "dist"
    target = out / "static" / "extensions" / "panel"
    _copy(dist / "panel.min.js", target / "panel.min.js")
    shutil.copytree(dist / "css", target / "css")
    shutil.copytree(dist / "bundled" / "theme", target / "bundled" / "theme")


def _write_pages(out: Path, assets: dict[str, str]) -> None:
    import panel
    from bokeh.resources import Resources

    from lab.page.presets import preset_rows
    from lab.page.view import METRICS, render
    from lab.site.layout import embed_page, lab_page
    from lab.site.pagedocs import PageDocsError, split_documents
    from model import Scenario

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
        "router_info": dom["#router-info"]["html"],
        "slowest": dom["#slowest"]["html"],
        "compare_tools": dom["#compare-tools"]["html"],
        "presets": [(row["name"], row["description"], row["hash"]) for row in preset_rows()],
    }
    from lab.site.words import SiteFileError, page_variables  # static/site.toml's title, links and footer; the glossary

    try:
        variables.update(page_variables(view))
    except SiteFileError as exc:
        raise BuildError(str(exc)) from None
    cdn = f"https://cdn.holoviz.org/panel/{panel.__version__}/dist/"
    for filename, make in (("index.html", lab_page), ("embed.html", embed_page)):
        template = make(view)
        for key, value in variables.items():
            template.add_variable(key, value)
        template.add_variable("wheel", assets["wheel"])
        boot = _rename_in((STATIC / "boot.js").read_text(encoding="utf-8"), "boot.js",
                          {'"worker.js"': f'"{assets["worker.js"]}"'})
        template.add_variable("boot_script", boot)
        path = out / filename
        template.save(str(path), resources=Resources(mode="server", root_url="./"))
        text = path.read_text(encoding="utf-8").replace(cdn, "static/extensions/panel/")
        text = _defer_scripts(_drop_module_shims(_drop_unused_bundles(text)))
        try:
            text = split_documents(text, filename)
        except PageDocsError as exc:
            raise BuildError(f"{exc}: Panel's template has changed; see lab/site/pagedocs.py") from None
        text = _rename_in(text, filename, {
            '"./static/': f'"./{assets["static/"]}', '"static/extensions/': f'"{assets["static/"]}extensions/',
            'src="bridge.js"': f'src="{assets["bridge.js"]}"', 'href="lab.css"': f'href="{assets["lab.css"]}"',
            'src="film.js"': f'src="{assets["film.js"]}"'})
        _check_local(filename, text)
        _check_bundles(filename, text, out)
        path.write_text(text, encoding="utf-8")


def _hash_assets(folder: Path, wheel: str, with_snapshot: bool) -> tuple[dict[str, str], dict]:
    """Give every asset its content-hashed name (lab/site/assets.py), leaves first; make the snapshot on the way.

    The snapshot is stamped with the wheel's hashed name and writes a zip into the
    Pyodide folder, so it comes between the two; the worker names the Pyodide folder
    and the snapshot and the bridge names the worker, so each is hashed after the names
    it holds are written into it. The pages come last (_write_pages). Returns
    ({plain name: hashed name}, what build.json records of the snapshot).
    """
    names = {"wheel": hash_file(folder / wheel).relative_to(folder).as_posix()}
    snapshot = _write_snapshot(folder, folder / names["wheel"]) if with_snapshot else \
        {"kind": "none", "reason": "no precompiled standard library"}
    names["pyodide/"] = hash_folder(folder / "pyodide").name + "/"
    names["static/"] = hash_folder(folder / "static").name + "/"
    names["lab.css"] = hash_file(folder / "lab.css").name
    names["wire.mjs"] = hash_file(folder / "wire.mjs").name  # read by the film and the bridge, which name it
    wire = {'"./wire.mjs"': f'"./{names["wire.mjs"]}"'}
    film = folder / "film.js"
    film.write_text(_rename_in(film.read_text(encoding="utf-8"), "film.js", wire), encoding="utf-8")
    names["film.js"] = hash_file(film).name
    renames = {'"./pyodide/': f'"./{names["pyodide/"]}'}
    if snapshot["kind"] == "snapshot":
        names["snapshot"] = hash_file(folder / "snapshot.bin").name
        os.replace(folder / "snapshot.bin.gz", folder / (names["snapshot"] + ".gz"))
        renames["const SNAPSHOT = null;"] = f'const SNAPSHOT = "./{names["snapshot"]}";'
        renames["const SNAPSHOT_BYTES = null;"] = f'const SNAPSHOT_BYTES = {snapshot["file"]};'
        renames["const SNAPSHOT_IMAGE_BYTES = null;"] = f'const SNAPSHOT_IMAGE_BYTES = {snapshot["bytes"]};'
    worker = folder / "worker.js"
    text = _rename_in(worker.read_text(encoding="utf-8"), "worker.js", {'"./pyodide/': renames.pop('"./pyodide/')},
                      times=2)
    worker.write_text(_rename_in(text, "worker.js", renames), encoding="utf-8")
    names["worker.js"] = hash_file(worker).name
    names["scheduler.mjs"] = hash_file(folder / "scheduler.mjs").name
    bridge = folder / "bridge.js"
    bridge.write_text(_rename_in(bridge.read_text(encoding="utf-8"), "bridge.js",
                                 {'"./worker.js"': f'"./{names["worker.js"]}"',
                                  '"./scheduler.mjs"': f'"./{names["scheduler.mjs"]}"', **wire}), encoding="utf-8")
    names["bridge.js"] = hash_file(bridge).name
    return names, snapshot


def _write_snapshot(folder: Path, wheel: Path) -> dict:
    """The worker's memory snapshot (lab/site/snapshot.py) as `snapshot.bin`; none if it cannot be made."""
    try:
        return {"kind": "snapshot", **write_snapshot(folder / "pyodide", wheel, folder / "snapshot.bin")}
    except SnapshotError as exc:
        print(f"prefix-lab build: {exc}; the page will boot Pyodide without a snapshot (slower)", file=sys.stderr)
        return {"kind": "none", "reason": str(exc)}


def _rename_in(text: str, filename: str, renames: dict[str, str], times: int | None = None) -> str:
    """Replace each plain name in `text` by its hashed one; fail the build if one is not found (or not `times` times)."""
    for plain, hashed in renames.items():
        count = text.count(plain)
        if count == 0 or (times is not None and count != times):
            raise BuildError(f"{filename} should name {plain} {times or 'at least once'} time(s), found {count}: "
                             "the build and the file have drifted apart")
        text = text.replace(plain, hashed)
    return text


def _check_bundles(filename: str, text: str, out: Path) -> None:
    """Fail the build if a page loads a script or stylesheet the site does not hold (a bundle left out)."""
    for ref in re.findall(r"""<(?:script|link)\b[^>]*?(?:src|href)\s*=\s*["']([^"':]+)["']""", text):
        if not (out / ref.split("?")[0].split("#")[0]).is_file():
            raise BuildError(f"{filename} loads {ref}, which the site does not hold: add it to the build")


def _write_stdlib(target: Path, pyodide: Path, wheel: Path) -> dict:
    """The trimmed, precompiled standard library in place of Pyodide's (lab/site/stdlib.py); Pyodide's if that fails."""
    try:
        return {"kind": "pyc", **write_stdlib(target, pyodide, wheel)}
    except StdlibError as exc:
        import sys

        print(f"prefix-lab build: {exc}; shipping Pyodide's full standard library instead (slower boot)",
              file=sys.stderr)
        return {"kind": "full"}


def _drop_unused_bundles(text: str) -> str:
    """Leave out the BokehJS bundles Bokeh lists for every page but this one does not use (see BOKEH_BUNDLES)."""
    def keep(match: re.Match) -> str:
        return match.group(0) if match.group(1) in BOKEH_BUNDLES else ""

    return re.sub(r'<script[^>]*src="\./static/js/([\w.-]+)"[^>]*></script>\s*', keep, text)


def _defer_scripts(text: str) -> str:
    """Let the page paint its numbers before BokehJS and Panel (3 MB) execute.

    Bokeh writes its scripts as blocking tags in <head>; deferred, they still run in
    order and before DOMContentLoaded, which is when Bokeh's embed code starts. Its
    inline `Bokeh.set_log_level` line would run too early, so it goes (info is the
    default level anyway).
    """
    text = re.sub(r'<script type="text/javascript">\s*Bokeh\.set_log_level\("info"\);\s*</script>', "", text)
    return text.replace('<script type="text/javascript" src=', '<script defer type="text/javascript" src=')


def _drop_module_shims(text: str) -> str:
    """Leave out es-module-shims, which Panel adds for ReactiveESM components.

    The lab has none, and the shim's start-up feature test loads a `blob:`
    script, which the server's Content-Security-Policy refuses (a console error
    on every load). A page that gains an ESM component must bring the shim back
    and allow `blob:` in script-src.
    """
    text = re.sub(r'<script type="esms-options">[^<]*</script>\s*', "", text)
    return re.sub(r'<script[^>]*src="[^"]*es-module-shims[^"]*"[^>]*></script>\s*', "", text)


def _check_local(filename: str, text: str) -> None:
    """Fail the build if the page would load anything from another origin (plain links are fine)."""
    loads = re.sub(r"<a\s[^>]*>", "<a>", text)
    found = re.findall(r"""(?:src|href)\s*=\s*["']((?:https?:)?//[^"']+)""", loads)
    found += re.findall(r"""https?://cdn[^"'\s)]*""", loads)
    if found:
        raise BuildError(f"{filename} would load from another origin: {', '.join(sorted(set(found))[:3])}")


def _precompress(out: Path) -> None:
    for path in sorted(out.rglob("*")):
        twin = path.with_name(path.name + ".gz")
        if path.is_file() and path.suffix in COMPRESS and path.stat().st_size > 1024 and not twin.exists():
            data = path.read_bytes()
            packed = gzip.compress(data, compresslevel=9, mtime=0)
            if len(packed) < len(data) * 0.9:
                twin.write_bytes(packed)
