"""Hostile and broken submissions with the results the grader must give them.

    common.py   an Attack, the notebook surgery attacks share, and the choices they make from
                a lab (its n-th activity, a function, a caught wrong answer)
    generic.py  attacks written in terms of any lab: they run for every lab of source/
    files.py    attacks through the batch folder: links, pipes, devices and odd file names
    pt03.py     attacks that only make sense with pt03_autodiff's functions
    corpus.py   a lab's corpus (generic + its own), grading it in one batch, the verdicts,
                and the table: python -m tests.adversarial.corpus [--lab NAME]
"""
