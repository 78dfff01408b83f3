"""Tables the documentation takes from the code, so that a page never disagrees with what runs.

    ```{lab-activities} pt03_autodiff
    ```
        the lab's activities as its instructor notebook declares them (course.labs.find_labs):
        id, title, points, required or optional, the functions students write;

    ```{autograder-commands}
    ```
        every command of `python -m autograder` with its usage and options, read from the parser
        that the command itself parses with (autograder.__main__.build_parser);

    ```{course-file-policy}
    per: what a started unit of lateness is
    ...
    ```
        the late policy's settings with their defaults (autograder.records.lateness.Policy); the body
        describes each, and a setting described but not in the code, or in the code and not
        described, fails the build.
"""
import argparse
import dataclasses
import functools
import re

from docutils import nodes
from sphinx.util.docutils import SphinxDirective

USAGE_WIDTH = 100  # the usage lines' width, fixed so that the page does not follow the terminal's


def inline(text):
    """A paragraph of `text` whose `backticked` parts are code, as the notebooks' headings write them."""
    paragraph = nodes.paragraph()
    for number, part in enumerate(re.split(r"`([^`]*)`", text)):
        if part:
            paragraph += nodes.literal(part, part) if number % 2 else nodes.Text(part)
    return paragraph


def code(text):
    return nodes.paragraph("", "", nodes.literal(text, text)) if text else nodes.paragraph()


def table(header, rows, widths):
    """A docutils table: `header` names, `rows` of cell nodes (paragraphs), `widths` relative."""
    group = nodes.tgroup(cols=len(header))
    for width in widths:
        group += nodes.colspec(colwidth=width)
    head = nodes.thead()
    head += nodes.row("", *(nodes.entry("", nodes.paragraph(text=name)) for name in header))
    body = nodes.tbody()
    for cells in rows:
        body += nodes.row("", *(nodes.entry("", cell) for cell in cells))
    group += head
    group += body
    return nodes.table("", group)


class LabActivities(SphinxDirective):
    required_arguments = 1

    def run(self):
        from course.labs import find_labs

        labs = {lab.name: lab for lab in find_labs()}
        name = self.arguments[0]
        if name not in labs:
            raise self.error(f"no lab {name} in source/ (its labs: {', '.join(sorted(labs))})")
        lab = labs[name]
        self.env.note_dependency(str(lab.path))  # an edited notebook rebuilds its page
        activities = list(lab.activities.values())
        rows = [[code(activity.id), inline(activity.title), nodes.paragraph(text=str(activity.points)),
                 nodes.paragraph(text="optional (bonus)" if activity.optional else "required"),
                 inline(", ".join(f"`{function}`" for function in activity.functions))]
                for activity in activities]
        required = sum(activity.points for activity in activities if not activity.optional)
        bonus = sum(activity.points for activity in activities if activity.optional)
        total = nodes.paragraph(text=f"{lab.title}: {required} points + {bonus} bonus points"
                                     + (f"; it reads {', '.join(lab.data_files)} from data/." if lab.data_files
                                        else "; it reads no data file."))
        return [table(("id", "title", "points", "kind", "functions students write"), rows, (6, 30, 6, 12, 46)), total]


def subcommands(parser):
    """(name, help, parser) for each command of the argparse `parser`, in the order it adds them."""
    (choices,) = [action for action in parser._actions if isinstance(action, argparse._SubParsersAction)]
    helps = {action.dest: action.help for action in choices._choices_actions}
    return [(name, helps.get(name, ""), command) for name, command in choices.choices.items()]


def option_rows(command):
    rows = []
    for action in command._actions:
        if isinstance(action, argparse._HelpAction):
            continue
        flags = ", ".join(action.option_strings) or action.metavar or action.dest
        if action.choices:
            takes = " | ".join(map(str, action.choices))
        elif action.nargs == 0:
            takes = ""
        else:
            takes = action.metavar or action.dest.upper()
        default = action.default
        shown = "" if default in (None, False, argparse.SUPPRESS) or action.required else str(default)
        rows.append([code(flags), code(takes), code(shown), inline(action.help or "")])
    return rows


class AutograderCommands(SphinxDirective):
    def run(self):
        from autograder.__main__ import build_parser

        parser = build_parser()
        found = []
        for name, summary, command in subcommands(parser):
            command.formatter_class = functools.partial(argparse.RawDescriptionHelpFormatter, width=USAGE_WIDTH)
            usage = command.format_usage().removeprefix("usage: ").strip()
            found += [nodes.rubric(text=f"{name}: {summary}"),
                      nodes.literal_block(usage, usage, language="text"),
                      table(("option", "takes", "default", "what"), option_rows(command), (20, 16, 10, 54))]
        return found


class CourseFilePolicy(SphinxDirective):
    has_content = True

    def run(self):
        from autograder.records.lateness import Policy

        described = {}
        for line in self.content:
            key, _, text = line.partition(":")
            described[key.strip()] = text.strip()
        settings = {field.name: field.default for field in dataclasses.fields(Policy)}
        if set(described) != set(settings):
            raise self.error(f"the late policy's settings are {', '.join(settings)}; the page describes "
                             f"{', '.join(described)}")
        rows = [[code(key), code(repr(default).replace("'", '"') if default is not None else "(none)"),
                 inline(described[key])] for key, default in settings.items()]
        return [table(("setting", "default", "what"), rows, (20, 14, 66))]


def setup(app):
    app.add_directive("lab-activities", LabActivities)
    app.add_directive("autograder-commands", AutograderCommands)
    app.add_directive("course-file-policy", CourseFilePolicy)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
