import course  # noqa: F401  (first, so that reading notebooks stays cheap: see course/__init__.py)
