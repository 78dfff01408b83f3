# The course's nbgrader settings, apart from where a course folder keeps its files (the root
# nbgrader_config.py says that for this checkout), so that any nbgrader course folder can load
# them with load_subconfig("<checkout>/autograder/cli/nbgrader_config.py").
from nbgrader.preprocessors import (CheckCellMetadata, ClearHiddenTests, ClearMarkScheme, ClearOutput, ClearSolutions,
                                     ComputeChecksums, IncludeHeaderFooter, InstantiateTests, LockCells, SaveCells)

c = get_config()  # noqa: F821 -- provided by traitlets when nbgrader loads the file
c.CourseDirectory.course_id = "autodiff"
c.Execute.timeout = 600


class KeepReleasedStubs(ClearSolutions):
    """nbgrader's ClearSolutions, except on our student notebooks. build_student.py already wrote
    them as nbgrader writes a release (every cell locked and checksummed); their stubs carry the
    signatures and the "Complete Activity ..." messages, which ClearSolutions, finding no
    solution markers, would replace by its bare code stub. Any other notebook of the course is an
    instructor's, whose reference cells and answers only build_student.py knows how to drop."""

    def preprocess(self, nb, resources):
        if all("checksum" in cell.metadata.get("nbgrader", {}) for cell in nb.cells):
            return nb, resources
        if "course" in nb.metadata:
            raise ValueError(f"{resources['unique_key']} is an instructor notebook of this course, not a "
                             "student notebook; `python build_student.py` writes release/<lab>/, and nbgrader's "
                             "source/<lab>/ takes a copy of that")
        return super().preprocess(nb, resources)


# nbgrader's own list, with ClearSolutions in its place as KeepReleasedStubs.
c.GenerateAssignment.preprocessors = [
    IncludeHeaderFooter, InstantiateTests, LockCells, KeepReleasedStubs, ClearOutput, CheckCellMetadata,
    ComputeChecksums, SaveCells, ClearHiddenTests, ClearMarkScheme, ComputeChecksums, CheckCellMetadata,
]
