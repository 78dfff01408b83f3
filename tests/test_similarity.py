"""Similar work across a class (autograder/reports/similarity/): on a class built here
(tests/similarity_class.py), every disguised copy is similar to what it copies and no two
independent authors are; the code's normal form sees through each disguise; and the command and
the class report show it."""
import csv
import json
import re

import pytest

from autograder.__main__ import main
from autograder.labs import course_labs
from autograder.reports.report_page import render
from autograder.reports.similarity.classwide import lab_similarity
from autograder.reports.similarity.engine import activity_index, scored_pairs
from autograder.reports.similarity.normalise import answer_tokens
from tests.helpers import ROOT, lab_notebook, read
from tests.similarity_class import (COMMON_FORM_COPY, DISGUISES, LAB_NAMES, STYLES, authors, disguised_class, mistaken,
                                    one_text, solved_form)
from tests.submissions import save, with_answer

STYLE_AUTHORS = sorted({author for styles in STYLES.values() for author in styles})  # the written styles


def similar_pairs(lab, students):
    """{(first, second)} of the class {student: {activity: answer}} similar in some activity."""
    return {(first, second) for first, second, _ in lab_similarity(lab, students).flagged()}


@pytest.fixture(scope="module")
def measured():
    """{(lab, disguise): (similar pairs, copied pairs)} of each lab's class with each disguise."""
    found = {}
    for name in LAB_NAMES:
        lab = course_labs()[name]
        for kind in DISGUISES:
            students, copies = disguised_class(lab, kind)
            found[name, kind] = similar_pairs(lab, students), copies
    return found


@pytest.mark.parametrize("lab_name", LAB_NAMES)
def test_no_disguise_hides_a_copy_of_an_author_s_answers(measured, lab_name):
    for kind in DISGUISES:
        similar, copies = measured[lab_name, kind]
        for author in STYLE_AUTHORS:
            assert tuple(sorted((author, f"copy-of-{author}"))) in similar, (kind, author)


@pytest.mark.parametrize("lab_name", LAB_NAMES)
def test_no_two_independent_students_are_similar(measured, lab_name):
    # Every pair but a copy and its original is independent work: the authors, the students of the
    # solved form, the catalogue's mistakes, and any of them with another's copy.
    written_as_one = one_text(course_labs()[lab_name])
    for kind in DISGUISES:
        similar, copies = measured[lab_name, kind]
        assert not similar - copies - written_as_one, kind


@pytest.mark.parametrize("lab_name", LAB_NAMES)
def test_the_solved_form_the_class_shares_is_no_evidence_and_one_author_s_is(lab_name):
    # Where many students reach the solved answers' form on their own, it is no evidence: neither
    # they nor a disguised copy of one of them is similar to another. Where it is one author's (the
    # class without them and without the catalogue's mistakes, each the solved answer with a slip),
    # its copy is similar.
    lab = course_labs()[lab_name]
    students, copies = disguised_class(lab, "all")
    common = {*solved_form(lab), *COMMON_FORM_COPY}
    assert not {s for pair in similar_pairs(lab, students) for s in pair} & common
    alone = {s: answers for s, answers in students.items() if s not in {*mistaken(lab), *solved_form(lab)}}
    assert COMMON_FORM_COPY in similar_pairs(lab, alone)


def test_an_answer_the_whole_class_writes_makes_no_pair_similar():
    lab = course_labs()["pt03_autodiff"]
    one_liners = lab.activities["1c"].reference.source
    students = {f"s{n:02d}": {"1c": one_liners} for n in range(30)}
    assert scored_pairs(activity_index("1c", {s: a["1c"] for s, a in students.items()})) == []
    assert not lab_similarity(lab, students).flagged()


def test_the_release_s_given_code_and_stub_are_no_evidence():
    lab = course_labs()["scalar_engine"]
    given = max((c.source for c in lab.cells if c.cell_type == "code" and c.role == "given"), key=len)
    stub = lab.activities["2"].stub.source
    students = {"p": {"2": given}, "q": {"2": given}, "r": {"2": stub}, "s": {"2": stub}}
    similarity = lab_similarity(lab, {**students, **{f"t{n}": {"2": lab.activities["2"].reference.source}
                                                     for n in range(3)}})
    assert not {"p", "q", "r", "s"} & {s for p in similarity.pairs for s in (p.first, p.second)}


@pytest.mark.parametrize("pair", [
    ("a.grad += out.grad * b.data", "a.grad = a.grad + b.data * out.grad"),
    ("def f(xs, k):\n    return [k * x for x in xs if x]",
     "def g(values, factor):\n    # scale\n\n    found = []\n    for v in values:\n        if v:\n"
     "            found.append(v * factor)\n    return found"),
    ("def f(x):\n    return x + 1\n\n\ndef g(y):\n    return y * 2",
     "def h(y):\n    '''twice'''\n    return 2 * y\n    print(y)\n\n\ndef k(x):\n    if False:\n        x = 0\n"
     "    return 1 + x"),
    ("if not x > 0:\n    y = 1\nelse:\n    y = 2\nz = 3 if not y else 4", "if 0 < x:\n    y = 2\nelse:\n    y = 1\n"
                                                                      "z = 4 if y else 3"),
    ("order, seen = [], set()", "order = []\nseen = set()"),
])
def test_the_normal_form_sees_through_each_disguise(pair):
    first, second = pair
    assert [t for t, _ in answer_tokens(first)] == [t for t, _ in answer_tokens(second)]


def test_a_magic_or_a_shell_escape_does_not_keep_an_answer_from_being_compared():
    answer = authors(course_labs()["scalar_engine"])["ana"]["2"]
    plain = [t for t, _ in answer_tokens(answer)]
    assert [t for t, _ in answer_tokens("%load_ext autoreload\n!pip list\n" + answer)][-len(plain):] == plain


def test_the_normal_form_keeps_what_differs():
    # a swap is not two assignments, and `a < b` is not `a <= b`
    for first, second in (("a, b = b, a", "a = b\nb = a"), ("x = a < b", "x = b >= a")):
        assert [t for t, _ in answer_tokens(first)] != [t for t, _ in answer_tokens(second)]


def test_the_styles_answer_only_activities_the_lab_has_and_differ_from_the_solved_answers():
    for lab_name, styles in STYLES.items():
        lab = course_labs()[lab_name]
        for author, answers in authors(lab).items():
            assert set(answers) <= set(lab.activities), (lab_name, author)
            for activity, code in answers.items():
                assert set(lab.activities[activity].functions) <= {
                    line.split("(")[0][4:] for line in code.splitlines() if line.startswith("def ")}


def test_the_command_and_the_class_report_show_similar_work_escaped(tmp_path):
    lab = course_labs()["scalar_engine"]
    release = read(lab_notebook(ROOT / "release", lab))
    ana = authors(lab)["ana"]["2"]
    copied = ana.replace("ordered", "result").replace("visited", "done") + '\nNOTE = "<script>alert(1)</script>"\n'
    answers = {"amy": ana, "bob": copied, "cat": authors(lab)["ben"]["2"], "dan": authors(lab)["reference"]["2"]}
    out = tmp_path / "graded"
    for student, answer in answers.items():
        path = save(with_answer(release, "2", answer), tmp_path, student)
        (out / student).mkdir(parents=True)
        (out / student / f"{lab.name}.json").write_text(json.dumps(  # as the grader writes it, what is read of it
            {"status": "graded", "score": 0, "tests": [], "execution_time": 1.0, "output": "",
             "extra_data": {"student": student, "lab": lab.name, "path": str(path)}}))
    for command, page in ((["similarity", str(out), "--lab", lab.name], "similarity.html"),
                          (["report", str(out)], "report.html")):  # the class report writes the CSV it links
        (out / "similarity.csv").unlink(missing_ok=True)
        assert main(command) == 0
        rows = list(csv.DictReader((out / "similarity.csv").open()))
        assert [(r["student"], r["other_student"], r["activity"], r["score"]) for r in rows if r["similar"] == "yes"] \
            == [("amy", "bob", "2", "1.000")]
        assert '<a href="similarity.csv">similarity.csv</a>' in (out / page).read_text()
    for page in ((out / "similarity.html").read_text(), (out / "report.html").read_text()):
        assert "amy and bob" in page and "cat and" not in page and "and dan" not in page
        assert "<script>" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page
        assert re.search(r"<mark>\s*for child in v\._prev:</mark>|<mark>[^<]*_prev[^<]*</mark>", page)
        assert "plagiar" not in page.lower() and "similar" in page.lower()


def test_a_class_report_without_similar_work_says_nothing():
    lab = course_labs()["scalar_engine"]
    record = {"status": "graded", "score": 0, "tests": [], "execution_time": 1.0, "output": "",
              "extra_data": {"student": "amy", "lab": lab.name, "path": "/nonexistent.ipynb"}}
    page = render({("amy", lab.name): record})
    assert re.search(r'<p id="scalar_engine-similar">Nothing: ', page)
    assert "amy: " in page  # the notebook that could not be read again is named


@pytest.mark.slow
@pytest.mark.parametrize("lab_name", LAB_NAMES)
def test_every_style_passes_its_activities_visible_checks(lab_name, monkeypatch):
    # The independent authors must be right, or their answers would be no class's answers.
    from autograder.measuring.catalogue import visible_steps

    monkeypatch.chdir(ROOT)  # where the checks find the lab's data/
    lab = course_labs()[lab_name]
    for author in STYLE_AUTHORS:
        for activity, answer in authors(lab)[author].items():
            space = {}
            for step in visible_steps(lab, activity, answer):
                exec(compile(step.source, f"{author} {activity}: {step.label}", "exec"), space)
