"""The front end's layout rules, kept true: no inline script, style or event handler in templates, small JS
functions, one view script per job kind, one formatter, and no benchmark hook in what ships.

Templates and scripts are those of templates/ and static/js/ and those of each job kind's folder
(runs/core/jobs/<kind>/page.html and view.js).

The JS scan is a brace matcher over the code with its strings, comments and regex literals
blanked out: good enough for our hand-written files (vendored Chart.js lives in static/vendor/).
"""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from runs.core import registry

pytestmark = pytest.mark.backend_free

ROOT = Path(__file__).resolve().parents[1]
TEMPLATES = ROOT / "templates"
STATIC = ROOT / "static"
JS = STATIC / "js"
JOBS = ROOT / "runs" / "core" / "jobs"
MAX_FUNCTION_LINES = 40
# Inline bodies the offline report may keep: a whole static file's contents, inlined by runs/report.py.
INLINED_FILE = re.compile(r"<(script|style)>\{\{ \w+\|safe \}\}</\1>")
# Inline event handlers (onclick=...) too: the Content-Security-Policy allows script files only.
INLINE = re.compile(r"<style\b|\sstyle=|<script\b(?![^>]*\bsrc=)|\son[a-z]+=", re.IGNORECASE)
# A whole file's wrapper, `(function () {` or `window.X = (function () {` at the start of a line.
MODULE_WRAPPER = re.compile(r"^(window\.\w+ = )?\(function \(\) \{$")
# After these (or at the start), a "/" opens a regex literal rather than dividing.
REGEX_BEFORE = set("(,=:[!&|?{};+-*%<>~^") | {""}


def _js_files() -> list[Path]:
    return sorted([*JS.rglob("*.js"), *JOBS.glob("*/view.js")])


def _templates() -> list[Path]:
    return sorted([*TEMPLATES.rglob("*.html"), *JOBS.glob("*/page.html")])


def _skip_regex(text: str, i: int) -> int:
    """The index just past the regex literal starting at text[i] == "/"."""
    j, in_class = i + 1, False
    while j < len(text) and text[j] != "\n":
        c = text[j]
        if c == "\\":
            j += 2
            continue
        if c == "[" or (c == "]" and in_class):
            in_class = c == "["
        elif c == "/" and not in_class:
            return j + 1
        j += 1
    return j


def _skip_quoted(text: str, i: int) -> int:
    """The index just past the string starting at text[i] (', " or `)."""
    quote, j = text[i], i + 1
    while j < len(text) and text[j] != quote:
        j += 2 if text[j] == "\\" else 1
    return j + 1


def _skip_comment(text: str, i: int) -> int:
    """The index just past the // or /* comment starting at text[i] (a line comment keeps its newline)."""
    if text[i + 1] == "/":
        end = text.find("\n", i)
        return len(text) if end == -1 else end
    end = text.find("*/", i + 2)
    return len(text) if end == -1 else end + 2


def code_only(text: str) -> str:
    """`text` with every string, comment and regex literal blanked (its newlines kept)."""
    out, i, last = [], 0, ""
    while i < len(text):
        c, nxt = text[i], text[i + 1 : i + 2]
        if c in "'\"`":
            end = _skip_quoted(text, i)
        elif c == "/" and nxt in ("/", "*"):
            end = _skip_comment(text, i)
        elif c == "/" and last in REGEX_BEFORE:
            end = _skip_regex(text, i)
        else:
            out.append(c)
            last = c if not c.isspace() else last
            i += 1
            continue
        out.append(re.sub(r"[^\n]", " ", text[i:end]))
        i, last = end, "x"
    return "".join(out)


def _closing(code: str, open_at: int) -> int:
    depth = 0
    for j in range(open_at, len(code)):
        depth += {"{": 1, "}": -1}.get(code[j], 0)
        if depth == 0:
            return j
    raise AssertionError("unbalanced braces")


def long_functions(text: str) -> list[tuple[int, int]]:
    """(first line, length in lines) of each function over MAX_FUNCTION_LINES, file wrappers aside."""
    code, lines, found = code_only(text), text.splitlines(), []
    for match in re.finditer(r"\bfunction\b[^{]*\{", code):
        first = code.count("\n", 0, match.start())
        if MODULE_WRAPPER.match(lines[first]):
            continue
        length = code.count("\n", match.start(), _closing(code, match.end() - 1)) + 1
        if length > MAX_FUNCTION_LINES:
            found.append((first + 1, length))
    return found


def test_it_finds_a_long_function_past_strings_comments_and_regexes():
    body = "\n".join(f"  var x{i} = '}}' + /[}}]/.source; // }}" for i in range(MAX_FUNCTION_LINES))
    short = "  function short() { return 1; }"
    text = f"(function () {{\n  function long() {{\n{body}\n  }}\n{short}\n}})();\n"
    assert long_functions(text) == [(2, MAX_FUNCTION_LINES + 2)]


def test_it_keeps_every_js_function_within_forty_lines():
    too_long = {str(p.relative_to(ROOT)): long_functions(p.read_text(encoding="utf-8")) for p in _js_files()}
    assert {path: found for path, found in too_long.items() if found} == {}


def test_it_has_no_inline_script_or_style_in_templates():
    offenders = []
    for path in _templates():
        text = INLINED_FILE.sub("", path.read_text(encoding="utf-8"))
        offenders += [f"{path.relative_to(ROOT)}: {m.group(0).strip()}" for m in INLINE.finditer(text)]
    assert offenders == []


@pytest.mark.parametrize("tree", [STATIC, TEMPLATES, JOBS], ids=["static", "templates", "jobs"])
def test_it_ships_no_benchmark_hook(tree):
    hooked = [str(p.relative_to(ROOT)) for p in tree.rglob("*") if p.is_file()
              and "__sparkdashLive" in p.read_text(encoding="utf-8", errors="ignore")]
    assert hooked == []


def test_it_has_one_view_script_per_job_that_registers_itself():
    assert not (JS / "jobs").exists()  # a kind's script lives in its folder, nowhere else
    scripts = {p.parent.name for p in JOBS.glob("*/view.js")}
    assert scripts == {spec.folder.name for spec in registry.JOBS.values() if spec.folder}
    for job, spec in registry.JOBS.items():
        assert f'RunCharts.register("{job}"' in (spec.folder / "view.js").read_text(encoding="utf-8")


def _files_with(needle: str) -> list[str]:
    return [str(p.relative_to(JS if p.is_relative_to(JS) else ROOT)) for p in _js_files()
            if needle in p.read_text(encoding="utf-8")]


def test_it_formats_spreads_and_slugs_in_format_js_only():
    assert _files_with('" (n="') == ["format.js"]
    assert _files_with("function slugify") == ["format.js"]
    assert _files_with("[^\\w\\s-]") + _files_with("[^a-z0-9") == ["format.js"]
