"""Reading the class report's page as text: every table with an id, as rows of cell texts."""
from html.parser import HTMLParser

# The tables of grading times: the same class graded twice takes other times.
TIMING = ("-time", "-slowest")


class Tables(HTMLParser):
    def __init__(self):
        super().__init__()
        self.tables, self.current, self.row, self.cell = {}, None, None, None

    def handle_starttag(self, tag, attrs):
        if tag == "table" and dict(attrs).get("id"):
            self.current = self.tables.setdefault(dict(attrs)["id"], [])
        elif tag == "tr" and self.current is not None:
            self.row = []
        elif tag in ("td", "th") and self.row is not None:
            self.cell = []

    def handle_endtag(self, tag):
        if tag == "table":
            self.current = None
        elif tag == "tr" and self.row is not None:
            self.current.append(self.row)
            self.row = None
        elif tag in ("td", "th") and self.cell is not None:
            self.row.append(" ".join("".join(self.cell).split()))
            self.cell = None

    def handle_data(self, data):
        if self.cell is not None:
            self.cell.append(data)


def page_tables(html, timing=True):
    """{table id: [[cell text]]} of the page; without the grading-time tables unless `timing`."""
    reader = Tables()
    reader.feed(html)
    return {name: rows for name, rows in reader.tables.items() if timing or not name.endswith(TIMING)}
