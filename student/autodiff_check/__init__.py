"""What a student can check on their own machine before submitting, with nothing of the grader.

The grader builds on this package (never the other way round): how a cell is named is decided
here once, for the student's check, the feedback and the grader's messages alike.

Importing this package first keeps every process that reads a notebook lean: jsonschema, which
nbformat imports, builds an RFC 3987 parser at import time when `rfc3987_syntax` is installed
(JupyterLab's dependencies install it), about 2 s of CPU. That parser checks the "iri" string
formats, which no notebook schema uses, so the module is marked absent.
"""
import sys

sys.modules.setdefault("rfc3987_syntax", None)

# The notebook's last cell does nothing in the kernel the check starts, where this is set; kept
# here, light to import, since the course's build writes it into that cell.
CHECKING = "AUTODIFF_CHECKING"
