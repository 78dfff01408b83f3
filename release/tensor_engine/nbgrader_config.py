# Read by nbgrader run in this folder: `nbgrader validate` gets the course's time limit for one
# cell, and any other nbgrader command stops before it writes here.
from nbgrader.apps import NbGrader, NbGraderApp, ValidateApp
from traitlets.config import Application

app = Application.instance() if Application.initialized() else None
if isinstance(app, NbGrader) and type(app) not in (NbGraderApp, ValidateApp):
    raise SystemExit(f"{app.name}: refused in this folder, which holds one lab as students get it: only "
                     "`nbgrader validate` runs here; the exchange's commands (fetch_assignment, submit, "
                     "fetch_feedback) run in the folder that holds it, the instructor's in the course folder")
c = get_config()  # noqa: F821
c.Execute.timeout = 600
