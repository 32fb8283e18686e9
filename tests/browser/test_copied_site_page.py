"""The built site copied as it is and served by a plain static server (Python's http.server: no policy, no gzip
twins, no cache headers of `prefix-lab serve`) boots and gives the numbers `prefix-lab run` gives."""

import re
import shutil
import subprocess
import sys

import pytest
from conftest import READY, expected_metrics, metrics

pytestmark = pytest.mark.browser


def test_a_copied_site_works_from_any_static_server(server, guarded, tmp_path):
    copy = tmp_path / "copied-site"
    shutil.copytree(server["site"], copy)
    proc = subprocess.Popen([sys.executable, "-u", "-m", "http.server", "0", "--bind", "127.0.0.1",
                             "--directory", str(copy)], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        line = proc.stdout.readline()  # printed once it listens, on the port the OS gave it
        port = int(re.search(r"Serving HTTP on \S+ port (\d+)", line).group(1))
        context, guard, watch = guarded
        guard.origin = f"http://127.0.0.1:{port}"
        page = watch(context.new_page())
        page.goto(f"http://127.0.0.1:{port}/#fleet.replicas=2")
        page.wait_for_function(READY, timeout=60_000)
        assert metrics(page) == expected_metrics("fleet.replicas=2")
    finally:
        proc.terminate()
        proc.wait(timeout=10)
