"""Similar work in a graded class: the answers each record's notebook holds, compared activity by
activity (engine.py), and what an instructor reads of it: per lab the similar pairs and the
groups they join, each pair's answers side by side with what they share marked, a histogram of
pair scores, and `similarity.csv`.

The results' JSONs hold no code: each records the path of the notebook it graded
(`extra_data.path`), read here again as the grader read it (submission.load, answers). A notebook
gone or changed since it was graded is read as it is now; one that cannot be read is named.
"""
import html
import math
from dataclasses import dataclass, field

from autograder.grading.submission import SubmissionError, answers, load
from autograder.labs import course_labs
from autograder.labs.vocabulary import plural
from autograder.records.tables import NOT_HANDED_IN, csv_text
from autograder.reports.similarity.engine import THRESHOLD, activity_index, groups, scored_pairs, shared_lines

CSV = "similarity.csv"
CSV_FLOOR = 0.3  # pairs scored at least this go in the CSV, to see where the similar tail begins
BINS = 10


@dataclass
class LabSimilarity:
    lab: str
    answered: int  # students with an answer read
    pairs: list  # [engine.Pair] of every activity, the highest score first
    indexes: dict  # {activity: engine.ActivityIndex}
    sources: dict  # {student: {activity: answer}}
    unread: list = field(default_factory=list)  # [(student, why)]

    @property
    def similar(self):
        return [pair for pair in self.pairs if pair.similar]

    @property
    def large_groups(self):
        """The groups of more than two students that similar pairs join (a pair is shown as one)."""
        return [group for group in groups(self.pairs) if len(group) > 2]

    def flagged(self):
        """[(first, second, [Pair])]: each similar pair of students with its similar activities,
        the highest score first."""
        by_students = {}
        for pair in self.similar:
            by_students.setdefault((pair.first, pair.second), []).append(pair)
        return sorted(((*key, found) for key, found in by_students.items()),
                      key=lambda item: (-max(p.score for p in item[2]), item[0], item[1]))

    def best_scores(self):
        """{(first, second): the pair's highest score over the activities} of pairs sharing a rare fragment."""
        best = {}
        for pair in self.pairs:
            key = (pair.first, pair.second)
            best[key] = max(best.get(key, 0.0), pair.score)
        return best

    def histogram(self):
        """[(low %, high %, pairs)] of the best scores, in BINS bins of 0..100%."""
        counts = [0] * BINS
        for score in self.best_scores().values():
            counts[min(BINS - 1, int(score * BINS))] += 1
        return [(100 * i // BINS, 100 * (i + 1) // BINS, count) for i, count in enumerate(counts)]

    @property
    def unscored(self):
        """Pairs of students that share no rare fragment in any activity (score 0, not in the histogram)."""
        return math.comb(self.answered, 2) - len(self.best_scores())

    def side_by_side(self, pair):
        """(first's lines, second's lines) of the pair's answers to its activity: [(number, text, shared)]."""
        index = self.indexes[pair.activity]
        marked = shared_lines(index, pair.first, pair.second)
        return tuple([(number, text, number in lines) for number, text in
                      enumerate(self.sources[student][pair.activity].splitlines(), 1)]
                     for student, lines in zip((pair.first, pair.second), marked))


def lab_similarity(lab, sources, unread=()):
    """The LabSimilarity of {student: {activity: answer}}: answers left as the stub are not compared."""
    given = [cell.source for cell in lab.cells if cell.cell_type == "code" and cell.role == "given"]
    indexes, pairs = {}, []
    for activity_id, activity in lab.activities.items():
        stub = activity.stub.source.strip()
        answered = {student: found[activity_id] for student, found in sources.items()
                    if found.get(activity_id, "").strip() not in ("", stub)}
        indexes[activity_id] = activity_index(activity_id, answered, [*given, activity.stub.source])
        pairs += scored_pairs(indexes[activity_id])
    pairs.sort(key=lambda p: (-p.score, p.first, p.second, p.activity))
    answered = sum(1 for found in sources.values() if found)
    return LabSimilarity(lab.name, answered, pairs, indexes, sources, list(unread))


def read_answers(lab, records):
    """({student: {activity: answer}}, [(student, why)]) of the handed-in records of `lab`
    ({student: result}), read from the notebooks the results name."""
    sources, unread = {}, []
    for student, result in sorted(records.items()):
        if result["status"] in NOT_HANDED_IN:
            continue
        path = result["extra_data"].get("path")
        if not path:  # held in a gradebook only: no notebook to read
            continue
        try:
            notebook = load(path)
        except SubmissionError as problem:
            unread.append((student, str(problem)))
            continue
        sources[student] = {key.removesuffix("-answer"): code for key, code in answers(lab, notebook).items()}
    return sources, unread


def class_similarity(records, labs=None):
    """{lab: LabSimilarity} of the class's records ({(student, lab): result}) for `labs` (default: every lab)."""
    known = course_labs()
    wanted = sorted({lab for _, lab in records if lab in known and (labs is None or lab in labs)})
    found = {}
    for lab_name in wanted:
        sources, unread = read_answers(known[lab_name], {s: r for (s, l), r in records.items() if l == lab_name})
        found[lab_name] = lab_similarity(known[lab_name], sources, unread)
    return found


def similarity_sheet(found):
    """similarity.csv: a row per (lab, activity, pair of students) scored at least CSV_FLOOR."""
    rows = [(lab, p.activity, p.first, p.second, f"{p.score:.3f}", p.shared, "yes" if p.similar else "no")
            for lab, similarity in sorted(found.items()) for p in similarity.pairs if p.score >= CSV_FLOOR]
    return csv_text(["lab", "activity", "student", "other_student", "score", "rare_fragments_shared", "similar"],
                    rows)


def marked_code(lines):
    """The answer's lines as HTML, escaped, the shared ones in <mark>."""
    return "\n".join(f'<span class="n">{number:>3}</span> ' + (f"<mark>{html.escape(text)}</mark>" if shared and text.strip()
                                                                else html.escape(text))
                     for number, text, shared in lines)


def summary_lines(found):
    """What the command prints: per lab, how many pairs are similar and the groups."""
    lines = []
    for lab, similarity in sorted(found.items()):
        flagged = similarity.flagged()
        lines.append(f"== {lab}: {plural(similarity.answered, 'notebook')} compared, "
                     f"{plural(len(flagged), 'similar pair')} (a score of {THRESHOLD:.0%} or more in an activity)")
        lines += [f"  {first} and {second}: " + ", ".join(f"{p.activity} {p.score:.0%}" for p in pairs)
                  for first, second, pairs in flagged]
        lines += [f"  a group of {len(group)}: {', '.join(group)}" for group in similarity.large_groups]
        lines += [f"  not read: {student}: {why}" for student, why in similarity.unread]
    return lines
