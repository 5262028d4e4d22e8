import csv
import json
import re

import pytest

from runs.core.jobs.agent_table import Row, grade, load_fixture, parse_rows
from runs.core.jobs.agent_table.fixture import FIXTURES_DIR, parse_truth
from runs.core.jobs.agent_table.grader import METHODS

pytestmark = pytest.mark.backend_free

ROUTES_47 = load_fixture("routes_47")
ROUTES_12 = load_fixture("routes_12")
TRUTH = ROUTES_47.truth


def markdown(rows, outer=True):
    lines = ["| Method | Path | Line |", "|:------:|------|-----:|"]
    lines += [f"| {r.method} | `{r.path}` | {r.line} |" for r in rows]
    return "\n".join(line.strip("|").strip() if not outer else line for line in lines)


@pytest.mark.parametrize("name", ["routes_47", "routes_12"])
def test_it_ships_fixtures_whose_truth_matches_the_source(name):
    fixture = load_fixture(name)
    source = (fixture.root / fixture.source).read_text().splitlines()
    found = set()
    for number, text in enumerate(source, start=1):
        method = re.match(r'\s*(?:el)?if\b.*\bmethod\s*===?\s*"([A-Z]+)"', text)
        path = re.search(r'"(/[^"]*)"', text)
        if method and path:
            found.add(Row(method.group(1), path.group(1), number))
    assert found == set(fixture.truth)
    assert len(fixture.truth) == {"routes_47": 47, "routes_12": 12}[name]
    with (FIXTURES_DIR / name / "truth.csv").open() as f:
        assert next(csv.reader(f)) == ["method", "path", "line"]


def test_it_scores_a_markdown_table_with_outer_pipes_and_an_alignment_row():
    result = grade(markdown(TRUTH), TRUTH)
    assert (result.score, result.rows, result.exact) == (47, 47, True)
    assert result.extra == () and result.missing == ()


def test_it_scores_a_markdown_table_without_outer_pipes():
    assert grade(markdown(TRUTH, outer=False), TRUTH).exact


def test_it_follows_the_column_order_a_header_names():
    csv_text = "line, method, path\n" + "\n".join(f"{r.line}, {r.method}, {r.path}" for r in TRUTH)
    numbered = "| # | Method | Path | Line no. |\n|---|---|---|---|\n" + "\n".join(
        f"| {i} | {r.method} | {r.path} | {r.line} |" for i, r in enumerate(TRUTH, start=1)
    )
    assert grade(csv_text, TRUTH).exact
    assert grade(numbered, TRUTH).exact


@pytest.mark.parametrize("separator", [";", "\t", ","])
def test_it_reads_separated_lines_with_or_without_a_header(separator):
    body = "\n".join(separator.join((r.method, r.path, str(r.line))) for r in TRUTH)
    assert grade(body, TRUTH).exact
    assert grade(separator.join(("Method", "Path", "Line")) + "\n" + body, TRUTH).exact


def test_it_reads_loose_lines_and_lowercase_methods():
    styles = [
        "{m} {p} (line {n})",
        "- `{m} {p}` \u2014 line {n}",
        "{n}: {lm} {p}",
        "server.py:{n} {m} {p}",
        "1. **{m}** {p}, L{n}",
        "{m} {p} at lines {n}-{n2}",
    ]
    for style in styles:
        text = "\n".join(
            style.format(m=r.method, lm=r.method.lower(), p=r.path, n=r.line, n2=r.line + 3) for r in TRUTH
        )
        assert grade(text, TRUTH).exact, style


def test_it_reads_a_table_inside_a_code_fence_among_prose():
    text = (
        "I read server.py (540 lines) and found 47 routes in Handler.route.\n\n"
        "```markdown\n" + markdown(TRUTH) + "\n```\n\n"
        "The routes after line 255 need a logged-in user; see lines 255-257."
    )
    result = grade(text, TRUTH)
    assert result.exact and result.extra == ()


def test_it_reads_a_json_list_of_rows():
    rows = [{"method": r.method, "path": r.path, "line": r.line} for r in TRUTH]
    assert grade("```json\n" + json.dumps(rows, indent=2) + "\n```", TRUTH).exact


def test_it_grades_the_second_fixture():
    truth = ROUTES_12.truth
    rows = "\n".join(f"{r.method} | {r.path} | {r.line}" for r in truth)
    text = "Method | Path | Line\n--- | --- | ---\n" + rows
    result = grade(text, truth)
    assert (result.score, result.rows) == (12, 12)
    assert Row("GET", "/notes/:id", 129) in parse_rows(text)


def test_it_scores_a_partial_and_partly_wrong_answer():
    wrong_line = Row(TRUTH[3].method, TRUTH[3].path, TRUTH[3].line + 1)
    wrong_method = Row("PUT", TRUTH[4].path, TRUTH[4].line)
    answer = [*TRUTH[:3], wrong_line, wrong_method, *TRUTH[5:40]]
    result = grade(markdown(answer), TRUTH)
    assert (result.score, result.rows, result.exact) == (38, 47, False)
    assert [(r.method, r.line) for r in result.extra] == [
        (wrong_line.method, wrong_line.line), ("PUT", TRUTH[4].line),
    ]
    assert result.missing == (TRUTH[3], TRUTH[4], *TRUTH[40:])


def test_it_counts_a_duplicate_row_once():
    result = grade(markdown([*TRUTH, TRUTH[0], TRUTH[0]]), TRUTH)
    assert (result.score, len(result.extra)) == (47, 2)
    assert result.extra[0].line == TRUTH[0].line
    assert not result.exact and result.precision == pytest.approx(47 / 49)


def test_it_makes_every_method_on_every_line_neither_exact_nor_precise():
    # The field report's padded answer: 80 lines (every route's and 33 more), every method on each.
    route_lines = sorted({r.line for r in TRUTH})
    others = [n for n in range(route_lines[0], route_lines[-1]) if n not in route_lines]
    lines = sorted(route_lines + others[:80 - len(route_lines)])
    body = "\n".join(f"| {' '.join(METHODS)} | /api | {n} |" for n in lines)
    result = grade("| Method | Path | Line |\n|---|---|---|\n" + body, TRUTH)
    assert (result.answered, result.score, result.rows) == (560, 47, 47)
    assert not result.exact
    assert result.precision is not None and result.precision < 0.1
    assert result.f1 == pytest.approx(2 * 47 / (47 + 560))


def test_it_weighs_precision_and_recall_into_f1():
    wrong = [Row("PUT", r.path, r.line + 1) for r in TRUTH[:10]]
    result = grade(markdown([*TRUTH[:30], *wrong]), TRUTH)
    assert (result.score, result.answered) == (30, 40)
    assert (result.precision, result.recall) == (pytest.approx(0.75), pytest.approx(30 / 47))
    assert result.f1 == pytest.approx(2 * 0.75 * (30 / 47) / (0.75 + 30 / 47))
    assert grade(markdown(TRUTH), TRUTH).f1 == 1.0


def test_it_scores_method_and_line_whatever_the_path():
    answer = [Row(r.method, "/somewhere/else", r.line) for r in TRUTH]
    assert grade(markdown(answer), TRUTH).exact


def test_it_gives_zero_for_an_answer_without_a_table():
    result = grade("I could not finish reading server.py; it has many routes, e.g. the login route.", TRUTH)
    assert (result.score, result.extra, len(result.missing)) == (0, (), 47)
    assert (result.precision, result.f1, result.exact) == (None, 0.0, False)
    assert grade("", TRUTH).score == 0


def test_it_rejects_a_truth_file_without_its_header_or_with_a_bad_line():
    with pytest.raises(ValueError, match="header method,path,line"):
        parse_truth("GET,/x,1\n")
    with pytest.raises(ValueError, match="line 3"):
        parse_truth("method,path,line\nGET,/x,1\nPOST,/y\n")
