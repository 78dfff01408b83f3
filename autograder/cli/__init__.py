"""The commands of ``python -m autograder`` (commands.py, the student's check as the grader runs
it in check.py, what a run shows in progress.py), and nbgrader's settings for the course
(nbgrader_config.py) with the guard that refuses its commands that would break the course folder
(nbgrader_commands.py). The top of the grader: it may import every subpackage below it.
"""
