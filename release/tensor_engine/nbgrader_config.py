# Read by `nbgrader validate` run in this folder: the course's time limit for one cell.
c = get_config()  # noqa: F821
c.Execute.timeout = 600
