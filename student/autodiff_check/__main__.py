"""python -m autodiff_check NOTEBOOK [--restore CELL]

Check a lab's notebook before submitting: its locked cells as released, its answer cells there,
then a run top to bottom in a fresh kernel with the visible checks (save it first). The grader
also runs hidden checks, which this never runs. --restore CELL puts the released locked cell CELL
(the id the check names) back into the notebook, and keeps the file as it was in NOTEBOOK.bak."""
import argparse
import sys

from autodiff_check.check import check
from autodiff_check.restore import command_restore


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m autodiff_check", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("notebook", help="the lab's notebook, saved (e.g. pt03_autodiff.ipynb)")
    parser.add_argument("--restore", metavar="CELL", help="put this locked cell back as released, then stop")
    args = parser.parse_args(argv)
    if args.restore:
        return command_restore(args.notebook, args.restore)
    return check(args.notebook)


if __name__ == "__main__":
    sys.exit(main())
