"""The grader's own exception: a problem of a given kind that becomes a status or a message."""


class GradingProblem(Exception):
    def __init__(self, kind, message):
        super().__init__(message)
        self.kind = kind


class GraderError(GradingProblem):
    """The lab's own code could not run for this submission: a problem for a person, not a score."""

    def __init__(self, message):
        super().__init__("grader_error", message)
