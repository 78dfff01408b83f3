"""The grader's own exception: a problem of a given kind that becomes a status or a message."""


class GradingProblem(Exception):
    def __init__(self, kind, message):
        super().__init__(message)
        self.kind = kind
