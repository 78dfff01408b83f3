"""What a student can check on their own machine before submitting, with nothing of the grader.

The grader builds on this package (never the other way round): how a cell is named is decided
here once, for the student's check, the feedback and the grader's messages alike."""
