"""Write a lab's Gradescope autograder bundle: a zip holding setup.sh and run_autograder at its
root; the grader as the package setup.sh installs (pyproject.toml and the grader's sources, taken
from where this grader runs, with this lab's grading knowledge and no other lab's); and the lab's
part of the course folder: its instructor notebook (the grader runs the lab's given code from it),
its data, its release (so that the bundle is a course folder that `autograder grade` takes as it
is, its gradebook included), and the course secret, as .autograder-secret at the root, so that
Gradescope draws each submission's hidden inputs as the course's own grading does
(autograder/grading/secret.py). The same files and secret always give the same bytes: fixed dates, a
fixed order."""
import io
import zipfile
from pathlib import Path

from autograder.grading.secret import SECRET_FILE, course_secret
from autograder.labs import LabNotGradable, course_labs, grading_for
from autograder.records.results_store import atomic_write
from course.folder import PACKAGES
from course.labs import ROOT

HERE = Path(__file__).resolve().parent
SCRIPTS = ("setup.sh", "run_autograder")  # at the zip's root, where Gradescope looks; executable
EARLIEST_ZIP_DATE = (1980, 1, 1, 0, 0, 0)


def grader_files(lab):
    """The files of the package setup.sh installs, as pyproject.toml builds it from a checkout:
    every module of the grader's, whichever subpackage holds it (a list of them missed a new one,
    and each Gradescope run failed importing it), its templates, and of the labs' grading
    knowledge `lab`'s alone."""
    package = PACKAGES / "autograder"

    def wanted(path):
        parts = path.relative_to(package).parts
        return parts[0] != "labs" or len(parts) == 2 or parts[1] == lab.name

    return [PACKAGES / "pyproject.toml", PACKAGES / "build_student.py",
            *sorted(path for pattern in ("**/*.py", "reports/templates/*.html", f"labs/{lab.name}/*.json")
                    for path in package.glob(pattern) if wanted(path)),
            *(HERE / name for name in SCRIPTS), *PACKAGES.glob("course/*.py"),
            # the student's package, which the grader builds on, with this lab's released cells alone
            *PACKAGES.glob("student/autodiff_check/*.py"), PACKAGES / "student" / "autodiff_check" / "labs" /
            f"{lab.name}.json"]


def bundle_files(lab):
    """{name in the zip: file on disk} for `lab`'s bundle."""
    release = ROOT / "release" / lab.name
    course = [lab.path, release / f"{lab.name}.ipynb", *(ROOT / "data" / name for name in lab.data_files),
              *(release / "data" / name for name in lab.data_files)]
    files = {name: HERE / name for name in SCRIPTS}
    files.update({path.relative_to(PACKAGES).as_posix(): path for path in grader_files(lab)})
    files.update({path.relative_to(ROOT).as_posix(): path for path in course})
    return dict(sorted(files.items()))


def bundle_bytes(lab, secret=None):
    """The zip of `lab`'s bundle, carrying `secret` (default: the course secret)."""
    contents = {name: path.read_bytes() for name, path in bundle_files(lab).items()}
    contents[SECRET_FILE.name] = secret or course_secret()
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as bundle:
        for name, data in sorted(contents.items()):
            entry = zipfile.ZipInfo(name, EARLIEST_ZIP_DATE)
            entry.compress_type = zipfile.ZIP_DEFLATED
            mode = 0o755 if Path(name).name in SCRIPTS else 0o600 if name == SECRET_FILE.name else 0o644
            entry.external_attr = (0o100000 | mode) << 16  # Unix mode bits
            bundle.writestr(entry, data)
    return buffer.getvalue()


def write_bundle(lab_name, out, secret_file=None):
    """Write the bundle of `lab_name` to `out`, with the secret of `secret_file` (default: the
    course secret); exit with a message for a lab that does not exist or cannot be graded (a
    bundle would give every student the same error)."""
    labs = course_labs()
    if lab_name not in labs:
        raise SystemExit(f"autograder: there is no lab {lab_name} in source/ (labs: {', '.join(sorted(labs))})")
    try:
        grading_for(lab_name)
    except LabNotGradable as error:
        raise SystemExit(f"autograder: {error}") from None
    lab = labs[lab_name]
    missing = [str(path) for path in bundle_files(lab).values() if not path.is_file()]
    if missing:
        raise SystemExit(f"autograder: cannot bundle {lab_name}, missing: {', '.join(missing)} "
                         "(`make release` writes release/; pyproject.toml is in a checkout of the grader, "
                         "not in an installed one)")
    data = bundle_bytes(lab, course_secret(secret_file))
    Path(out).parent.mkdir(parents=True, exist_ok=True)
    atomic_write(out, data)
    print(f"wrote {out}: the Gradescope autograder of {lab_name}, {len(data) / 1024:.0f} KiB. On Gradescope, make a "
          f"programming assignment worth {sum(a.points for a in lab.activities.values() if not a.optional)} points "
          "(bonus points count as extra credit) and upload this file as its autograder.")
    return 0
