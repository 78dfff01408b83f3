"""Naming the catalogued mistake a failing answer behaves like: a hidden case's verdict as a
token (case_tokens.py), a sketch of what an answer returned (answer_sketch.py), and the rule that
matches them against the stored fingerprints (matching.py). It reads the labs below it; grading
above it asks it for a diagnosis, and measuring/ builds the fingerprints it reads.
"""
