"""A job's parameters: each checks a value from a form, a script or a sweep, and says its range.

`help()` says a parameter's range in English; `help_text()` gives the same as a marked template
and its values, which a page fills in the reader's language (gettext(text) % values).
`clean(name, value, data_dirs)` returns the value to store (None: take the config's) or raises
ValueError naming the field. `data_dirs` are the folders a run may read files from
(SPARKDASH_DATA_DIRS): the worker reads the files a parameter names, so nothing outside them.
Plain Python, no Django.
"""
from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ConfigDict, TypeAdapter, ValidationError

from measure.words import gettext_noop
from runs.core.jobs.quality_data import SAMPLE_DATASET
from runs.core.jsonlimits import check_depth
from runs.core.refusal import Refusal

__all__ = [
    "ChoiceParam", "DatasetParam", "FixtureParam", "FractionListParam", "IntListParam", "IntParam",
    "Param", "ParamError", "RequestsParam", "inside_data_dirs",
]

DataDirs = Sequence[Path | str]
HelpText = tuple[str, dict[str, Any]]

ParamError = Refusal  # a parameter's refused value


# pydantic parses a form's or a script's text: "12" and 12 are a whole number, "1.5", "x" and
# True are not (a bool is refused before, whitespace trimmed).
_WHOLE: TypeAdapter[int] = TypeAdapter(int, config=ConfigDict(str_strip_whitespace=True))
_NUMBER: TypeAdapter[float] = TypeAdapter(float, config=ConfigDict(str_strip_whitespace=True))


def _parsed(adapter: TypeAdapter[Any], value: Any) -> Any:
    """`value` as `adapter`'s type, or None when it is not one (a bool is never a number here)."""
    if isinstance(value, bool):
        return None
    try:
        return adapter.validate_python(value)
    except ValidationError:
        return None


class _Helped:
    """A parameter whose help() is what it does (`what`, where its range alone does not say) and
    its help_text() filled in (English)."""

    what = ""

    def help_text(self) -> HelpText:
        raise NotImplementedError

    def help(self) -> str:
        """What the parameter does, its range and default, in English (the bench command's help)."""
        text, values = self.help_text()
        return f"{self.what} ({text % values})" if self.what else text % values


@dataclass(frozen=True)
class IntParam(_Helped):
    """An integer parameter with an inclusive range and a default (None: take the config's)."""

    label: str
    low: int
    high: int
    default: int | None
    what: str = ""

    def clean(self, name: str, value: Any, data_dirs: DataDirs = ()) -> int | None:
        if value is None:
            return self.default
        whole = _parsed(_WHOLE, value)
        if whole is None:
            raise ParamError(gettext_noop("%(name)s must be a whole number, not %(value)s"), name=name,
                             value=repr(value))
        value = whole
        if not self.low <= value <= self.high:
            raise ParamError(gettext_noop("%(name)s must be between %(low)s and %(high)s, not %(value)s"),
                             name=name, low=self.low, high=self.high, value=value)
        return value

    def clean_whole(self, name: str, value: Any) -> int:
        """One whole number in range (a list's item: never the default)."""
        clean = self.clean(name, value)
        if clean is None:
            raise ParamError(gettext_noop("%(name)s must be a whole number, not %(value)s"), name=name,
                                 value=repr(value))
        return clean

    def help_text(self) -> HelpText:
        values: dict[str, Any] = {"low": self.low, "high": self.high}
        # The en dash is the range's own (RUF001 reads it as a mistyped hyphen).
        if self.default is None:
            return gettext_noop("%(low)s–%(high)s, default the config's"), values  # noqa: RUF001
        values["default"] = self.default
        return gettext_noop("%(low)s–%(high)s, default %(default)s"), values  # noqa: RUF001


@dataclass(frozen=True)
class IntListParam(_Helped):
    """A list of integers in an inclusive range ("0,2,4" or [0, 2, 4]), at most `most` long."""

    label: str
    low: int
    high: int
    default: tuple[int, ...]
    most: int = 16
    what: str = ""

    def clean(self, name: str, value: Any, data_dirs: DataDirs = ()) -> list[int]:
        if value is None:
            return list(self.default)
        items = value.split(",") if isinstance(value, str) else value
        if not isinstance(items, list | tuple) or not 1 <= len(items) <= self.most:
            raise ParamError(gettext_noop("%(name)s must be a list of 1 to %(most)s whole numbers"),
                             name=name, most=self.most)
        element = IntParam(self.label, self.low, self.high, None)
        return [element.clean_whole(f"{name} item", item) for item in items]

    def help_text(self) -> HelpText:
        values = {"low": self.low, "high": self.high, "default": ",".join(str(v) for v in self.default)}
        return gettext_noop("comma-separated, each %(low)s–%(high)s, default %(default)s"), values  # noqa: RUF001


@dataclass(frozen=True)
class FractionListParam(_Helped):
    """A list of fractions in [0, 1] ("0.1,0.5,0.9" or [0.1, 0.5, 0.9])."""

    label: str
    default: tuple[float, ...]
    most: int = 11
    what: str = ""

    def clean(self, name: str, value: Any, data_dirs: DataDirs = ()) -> list[float]:
        if value is None:
            return list(self.default)
        items = value.split(",") if isinstance(value, str) else value
        if not isinstance(items, list | tuple) or not 1 <= len(items) <= self.most:
            raise ParamError(gettext_noop("%(name)s must be a list of 1 to %(most)s fractions"), name=name,
                             most=self.most)
        parsed = [_parsed(_NUMBER, item) for item in items]
        if any(f is None for f in parsed):
            raise ParamError(gettext_noop("%(name)s must be fractions between 0 and 1, e.g. 0.1,0.5,0.9"),
                             name=name)
        fractions = [float(f) for f in parsed if f is not None]
        if any(not 0 <= f <= 1 for f in fractions):
            raise ParamError(gettext_noop("%(name)s must be fractions between 0 and 1, not %(value)s"),
                             name=name, value=fractions)
        return fractions

    def help_text(self) -> HelpText:
        values = {"default": ",".join(str(v) for v in self.default)}
        return gettext_noop("comma-separated fractions 0–1, default %(default)s"), values  # noqa: RUF001


@dataclass(frozen=True)
class RequestsParam(_Helped):
    """Recorded request bodies to replay: a JSONL text or an already parsed list; none: the shipped
    `sample` (the replay kind's five requests of a coding agent's session), read by its `parse`.

    The kind gives its sample and reader, so this shared module imports no kind's code."""

    label: str
    sample: Path = Path()
    parse: Callable[[str], list[dict[str, Any]]] = lambda text: []

    def clean(self, name: str, value: Any, data_dirs: DataDirs = ()) -> list[dict[str, Any]]:
        if value is None:
            value = self.sample.read_text(encoding="utf-8")
        try:
            if not isinstance(value, str):
                for body in value:
                    check_depth(body)  # before json.dumps recurses into it
            text = value if isinstance(value, str) else "\n".join(json.dumps(v) for v in value)
            return self.parse(text)
        except ValueError as exc:
            raise ParamError(gettext_noop("%(name)s: %(reason)s"), name=name, reason=exc) from None

    def help_text(self) -> HelpText:
        return gettext_noop("a JSON Lines file of recorded chat request bodies, one a line, up to 5 MB; "
                            "none: a shipped sample of five requests from a coding agent's session"), {}


@dataclass(frozen=True)
class FixtureParam(_Helped):
    """An agent-table fixture: a shipped fixture's name (in `shipped`) or a folder with one source
    file and truth.csv; `locate` finds its folder and `load` reads it (the kind's own functions)."""

    label: str
    shipped: Path = Path()
    locate: Callable[[str], Path] = Path
    load: Callable[[str], object] = Path
    default: str = "routes_47"

    def clean(self, name: str, value: Any, data_dirs: DataDirs = ()) -> str:
        value = self.default if value in (None, "") else str(value)
        inside_data_dirs(name, self.locate(value), data_dirs, also=self.shipped)
        try:
            self.load(value)
        except ValueError as exc:
            raise ValueError(f"{name}: {exc}") from None
        return value

    def help_text(self) -> HelpText:
        text = gettext_noop("a shipped fixture (routes_47, routes_12) or a folder with one source file and "
                            "truth.csv; default %(default)s")
        return text, {"default": self.default}


@dataclass(frozen=True)
class ChoiceParam(_Helped):
    """One of a few names (the first is the default), each with the label a form shows."""

    label: str
    choices: tuple[tuple[str, str], ...]
    what: str = ""

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(name for name, _ in self.choices)

    def clean(self, name: str, value: Any, data_dirs: DataDirs = ()) -> str:
        value = self.names[0] if value in (None, "") else str(value).strip()
        if value not in self.names:
            raise ParamError(gettext_noop("%(name)s must be one of %(names)s, not %(value)s"), name=name,
                             names=", ".join(self.names), value=repr(value))
        return value

    def help_text(self) -> HelpText:
        if len(self.names) == 2:
            values = {"first": self.names[0], "second": self.names[1], "default": self.names[0]}
            return gettext_noop("%(first)s or %(second)s, default %(default)s"), values
        return gettext_noop("%(names)s, default %(default)s"), {"names": " or ".join(self.names),
                                                                 "default": self.names[0]}


@dataclass(frozen=True)
class DatasetParam(_Helped):
    """A benchmark's local dataset: a file or folder on the worker, "sample" for the shipped subset,
    or blank for the benchmark's usual hub download."""

    label: str

    def clean(self, name: str, value: Any, data_dirs: DataDirs = ()) -> str | None:
        if value in (None, ""):
            return None
        value = str(value).strip()
        if value == SAMPLE_DATASET:
            return value
        path = inside_data_dirs(name, Path(value).expanduser(), data_dirs)
        if not path.exists():
            raise ParamError(gettext_noop("%(name)s: no such file or folder: %(value)s"), name=name,
                             value=value)
        return str(path)

    def help_text(self) -> HelpText:
        return gettext_noop("a file or folder on the worker in the dataset's own format, sample (a few "
                            "shipped questions), or blank to download it"), {}


Param = (
    IntParam | IntListParam | FractionListParam | RequestsParam | FixtureParam | ChoiceParam | DatasetParam
)


def inside_data_dirs(name: str, path: Path, data_dirs: DataDirs, also: Path | None = None) -> Path:
    """`path` resolved, if it lies in one of `data_dirs` or in `also`; else ValueError naming the field.

    A run's parameters come from a web form, and its worker reads the files they name: without
    this, anyone who can start a run could have the worker read any file on the machine.
    """
    resolved = path.resolve()
    roots = [Path(root).resolve() for root in data_dirs]
    if any(resolved.is_relative_to(root) for root in roots + ([also.resolve()] if also else [])):
        return resolved
    folders = ", ".join(str(root) for root in roots) or "none"
    raise ParamError(gettext_noop("%(name)s: %(path)s is outside the data folders (%(folders)s; set "
                                  "SPARKDASH_DATA_DIRS)"), name=name, path=path, folders=folders)
