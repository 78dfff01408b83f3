"""The course's instructor tools.

Importing this package first keeps every process of the course lean: jsonschema, which nbformat
imports, builds an RFC 3987 parser at import time when `rfc3987_syntax` is installed (JupyterLab's
dependencies install it), about 2 s of CPU in every process that reads a notebook. That parser
checks the "iri" string formats, which no notebook schema uses, so the module is marked absent.
"""
import sys

sys.modules.setdefault("rfc3987_syntax", None)
