"""Grading on Gradescope: `python -m autograder gradescope LAB --out autograder.zip` writes the
autograder bundle (bundle.py); on Gradescope its run_autograder grades each submission with this
same grader and sandbox (run.py).

Gradescope's contract, which the bundle follows: the zip is unpacked into /autograder/source;
setup.sh (at the zip's root) runs once, as root, when Gradescope builds the autograder's image;
run_autograder (also at the root, copied to /autograder/run_autograder) runs for every
submission, with the student's files in /autograder/submission, and must write
/autograder/results/results.json.

It imports records/, grading/ and what lies below them; of the commands, only `gradescope` reaches it.
"""
