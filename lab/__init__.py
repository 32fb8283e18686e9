"""Everything around the model: the page's view state, the static build, the server, the CLI.

Only `lab.page.view` and `lab.page.urlstate` run in the browser (under Pyodide); they
import the standard library, `model` and `missions`, nothing else. Panel,
Bokeh and Tornado are imported by the build and serve modules alone.
"""

__all__: list[str] = []
