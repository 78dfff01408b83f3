"""Grade many submissions at once, each result handed over as soon as it is ready."""
import ast
import traceback
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import replace

from autograder.grade import error_result, grade
from autograder.labs import course_labs, gradable_labs
from autograder.sandbox import Pool
from autograder.submission import student_name


def safe_grade(path, options):
    """Grading never raises: a grader bug becomes a result too, and the batch goes on."""
    try:
        return grade(path, options)
    except Exception as error:  # the batch must finish whatever one notebook does
        detail = "".join(traceback.format_exception_only(type(error), error)).strip()
        return error_result(student_name(path), path, "grader_error", f"the grader failed: {detail}", 0.0), {}


def lab_imports():
    """The modules the labs' code imports, for the zygote to import once for every worker."""
    found = {"IPython.core.interactiveshell"}
    for lab in course_labs().values():
        for cell in lab.cells:
            if cell.cell_type != "code":
                continue
            try:
                tree = ast.parse(cell.source)
            except SyntaxError:
                continue
            for node in ast.walk(tree):
                if isinstance(node, ast.Import):
                    found |= {alias.name for alias in node.names}
                elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                    found.add(node.module)
    return sorted(found)


def grade_all(named_paths, options, jobs, on_result):
    """Grade (name, path) pairs with `jobs` at a time; call on_result(name, result, answers)
    from this thread as each one finishes. Workers are subprocesses, so threads suffice."""
    gradable_labs()  # checks every lab and computes PyTorch's answers once, before the threads start
    zygote = Pool.start(lab_imports()) if options.warm and options.sandboxed and options.pool is None else None
    if zygote is not None:
        options = replace(options, pool=zygote)
    try:
        with ThreadPoolExecutor(max_workers=jobs) as threads:
            pending = {threads.submit(safe_grade, path, options): name for name, path in named_paths}
            for future in as_completed(pending):
                result, answers = future.result()
                result["extra_data"]["submission"] = pending[future]
                on_result(pending[future], result, answers)
    finally:
        if zygote is not None:
            zygote.close()
