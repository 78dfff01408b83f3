# nbgrader looks for its configuration here. The repository root is the course directory; the
# grader's results (gradebook, autograded notebooks, feedback) live in graded/, where `make grade`
# writes them. The course's own settings live with the grader.
import os

# First, before anything below creates a folder: nbgrader's commands that would harm this folder
# (autograde, generate_assignment and every one not checked) stop there, saying what to run.
load_subconfig("autograder/cli/nbgrader_commands.py")  # noqa: F821
c = get_config()  # noqa: F821
load_subconfig("autograder/cli/nbgrader_config.py")  # noqa: F821
root = os.path.dirname(os.path.abspath(__file__))
c.CourseDirectory.root = root
c.CourseDirectory.db_url = f"sqlite:///{os.path.join(root, 'graded', 'gradebook.db')}"
# SQLite creates the gradebook but not its folder, and `nbgrader collect` opens the gradebook
# before `make grade` has ever written graded/.
os.makedirs(os.path.join(root, "graded"), exist_ok=True)
c.CourseDirectory.autograded_directory = os.path.join("graded", "autograded")
c.CourseDirectory.feedback_directory = os.path.join("graded", "feedback")
