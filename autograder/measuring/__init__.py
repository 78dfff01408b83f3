"""What the checks still miss, measured by grading known wrong answers: the mistake catalogue
(catalogue.py), the fingerprints that diagnosis reads (fingerprints.py), one-change mutants of the
reference (mutants.py) and which declared contract boundaries the hidden cases reach
(contract_coverage.py). It drives grading and reads records; the commands run it.
"""
