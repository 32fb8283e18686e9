"""Make a restored interpreter import from the wheel as a zip, not from the folder it was unpacked into.

The build's memory snapshot (lab/site/snapshot.py) holds an interpreter that has
imported the view code from the wheel unpacked into a folder; the folder
itself lived in Pyodide's file system, which the snapshot does not hold. A
module imported later would not be found. Unpacking the wheel again writes
every file of it; instead the worker writes the wheel as one file and calls
`mount`: every package imported from under that folder also looks in the
zip's copy of its folder (zipimport reads a path of the form
`archive.whl/lab/sub`), and sys.path ends with the zip for a package not
imported yet. Nothing in the wheel reads its own files by path in the
browser, so imports are all it needs.

Standard library only (zipfile, which the snapshot has imported too);
imported by the snapshot, so it is in the restored interpreter before the
wheel is.
"""

import os
import sys
import zipfile

__all__ = ["mount"]

# where this wheel was unpacked: the folder that holds lab/ (this file is lab/page/wheelzip.py)
UNPACKED = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def mount(wheel: str, folder: str = UNPACKED) -> int:
    """Let the packages imported from `folder` and those not imported yet be found in the zip `wheel`.

    Returns how many packages were given the zip's copy of their folder. A `wheel` that is not a zip raises
    zipfile.BadZipFile here, as unpacking it would, rather than at some later import.
    """
    zipfile.ZipFile(wheel).close()
    folder = folder.rstrip("/")
    extended = 0
    for module in list(sys.modules.values()):
        path = getattr(module, "__path__", None)
        if not isinstance(path, list):  # a namespace package's path is computed; the wheel has none
            continue
        for entry in list(path):
            if entry.startswith(folder + "/"):
                path.append(wheel + entry[len(folder):])
                extended += 1
    if wheel not in sys.path:
        sys.path.append(wheel)
    return extended
