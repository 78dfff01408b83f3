# Which nbgrader commands may run in this checkout's course folder. The root nbgrader_config.py
# loads this file before anything else, and nbgrader reads its configuration before a command
# acts, so a refused command exits here having touched no file and no gradebook. Unlike a
# course folder of your own (where source/ holds the release, see "nbgrader" in docs/graders.md),
# source/ here holds the instructor notebooks and graded/ holds the grader's results: nbgrader's
# own generate_assignment and autograde on them delete the release, copy the reference solutions
# into graded/autograded/ and leave gradebook rows the grader never wrote. So this is an
# allow-list of the commands read to be safe here (nbgrader 0.9's apps: what each one writes),
# and every other command is refused, deprecated aliases and future ones included.
from nbgrader.apps import (CollectApp, DbApp, ExportApp, FeedbackApp, GenerateFeedbackApp, ListApp, NbGrader,
                           NbGraderApp, ReleaseApp, ReleaseAssignmentApp, ReleaseFeedbackApp, ValidateApp,
                           ZipCollectApp)
from nbgrader.apps.dbapp import (DbAssignmentApp, DbAssignmentListApp, DbStudentAddApp, DbStudentApp,
                                 DbStudentImportApp, DbStudentListApp)
from traitlets.config import Application

SAFE_HERE = {
    NbGraderApp, DbApp, DbStudentApp, DbAssignmentApp,  # without a subcommand they list the subcommands
    ValidateApp,  # runs a notebook and reports; writes nothing
    ListApp,  # reads the exchange (--remove takes an assignment back out of the exchange, not from here)
    ReleaseAssignmentApp, ReleaseApp,  # copy release/<lab>/ to the exchange
    CollectApp, ZipCollectApp,  # fill submitted/, the grader's input (collect adds the students to the gradebook)
    GenerateFeedbackApp, FeedbackApp,  # graded/autograded/ and the gradebook -> graded/feedback/
    ReleaseFeedbackApp,  # graded/feedback/ -> the exchange
    ExportApp,  # reads the gradebook, writes the CSV file it is given
    DbStudentListApp, DbStudentAddApp, DbStudentImportApp, DbAssignmentListApp,  # the students table; listings
}

GRADE = "`make grade` (python -m autograder grade submitted --out graded)"
WHY_REFUSED = {
    "autograde": f"grade with {GRADE}. nbgrader's autograde cannot read this folder's source/ (instructor "
                 "notebooks), and it scores each optional activity 0 points, where the grader counts it as extra "
                 "credit, so the two would give the class different totals",
    "generate_assignment": "`make release` writes release/<lab>/ from the instructor notebooks in source/, and the "
                           "grader records each lab in the gradebook itself; nbgrader's generate_assignment cannot "
                           "read source/ here, and with --force it deletes release/<lab>/ first",
    "generate_solution": "`python build_student.py --solved DIR` writes the notebooks with the reference solutions",
}
WHY_REFUSED["assign"] = WHY_REFUSED["generate_assignment"]


def safe_commands(app_class=NbGraderApp, words=()):
    """The commands of SAFE_HERE as they are typed (e.g. "db student add"), the listings left out."""
    for name, (kind, _) in app_class.subcommands.items():
        if isinstance(kind.subcommands, dict):  # a class that defines none has the trait, not a dict
            yield from safe_commands(kind, (*words, name))
        elif kind in SAFE_HERE:
            yield " ".join((*words, name))


def unverified():
    return (f"it is not one of the commands safe in this course folder ({', '.join(safe_commands())}): the "
            "gradebook's labs, cells and grades are the grader's to write, and the students' commands belong "
            "in a student's own folder")


def command_words(app):
    """The words that started `app`, e.g. ['db', 'student', 'add'], from its parents' subcommands."""
    words = []
    while app.parent is not None:
        # An exception here would not stop the command: traitlets logs a failing config file and goes on.
        name = next((name for name, (kind, _) in getattr(app.parent, "subcommands", {}).items()
                     if kind is type(app)), None)
        if name is None:
            break
        words.insert(0, name)
        app = app.parent
    return words or [app.name]


def refuse_unsafe_command():
    """Exit, saying what to run instead, when the nbgrader command now starting is not SAFE_HERE.
    Any other program reading this configuration (the grader, the tests, a Jupyter server's
    extensions) is no nbgrader command, and goes on."""
    app = Application.instance() if Application.initialized() else None
    if not isinstance(app, NbGrader) or type(app) in SAFE_HERE:
        return
    words = command_words(app)
    reason = WHY_REFUSED[words[0]] if words[0] in WHY_REFUSED else unverified()
    raise SystemExit(f"nbgrader {' '.join(words)}: refused in this course folder, before it changed anything: "
                     f"{reason}. See \"nbgrader\" in docs/graders.md.")


refuse_unsafe_command()
