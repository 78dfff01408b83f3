# nbgrader configuration for this course. The repository root is the course directory; the
# grader's results (gradebook, autograded notebooks, feedback) live in graded/, where
# `make grade` writes them. nbgrader reads this through the root nbgrader_config.py.
import os

c = get_config()  # noqa: F821 -- provided by traitlets when nbgrader loads the file
root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
c.CourseDirectory.course_id = "autodiff"
c.CourseDirectory.root = root
c.CourseDirectory.db_url = f"sqlite:///{os.path.join(root, 'graded', 'gradebook.db')}"
c.CourseDirectory.autograded_directory = os.path.join("graded", "autograded")
c.CourseDirectory.feedback_directory = os.path.join("graded", "feedback")
c.Execute.timeout = 600
