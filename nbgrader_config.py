# nbgrader looks for its configuration here; the course's settings live with the grader.
c = get_config()  # noqa: F821
load_subconfig("autograder/nbgrader_config.py")  # noqa: F821
