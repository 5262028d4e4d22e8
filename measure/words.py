"""Marks the English a person reads, for the Japanese catalogue, without importing Django.

The measurement core and the engine clients are plain Python (no Django), yet their labels,
help texts and warnings reach the dashboard. Wrapping such a string in `gettext_noop` changes
nothing at run time: it stays English in stored summaries and exports, and `makemessages` finds
it (the keyword is the one Django's own `gettext_noop` uses), so a page can translate it where it
is shown (`{% translate value %}` or `gettext(value)`). A sentence with figures keeps them apart:
`"text"` is the marked template with `%(name)s` holes and `"params"` fills them (docs/i18n.md).
What was marked is also remembered (`marked()`), so the JavaScript catalogue can carry its
translation and a script can say a stored label in the reader's language too.
"""

from __future__ import annotations

from collections.abc import Sequence

_MARKED: set[str] = set()


def gettext_noop(message: str) -> str:
    """Returns `message` unchanged; `makemessages` collects it for the catalogue."""
    _MARKED.add(message)
    return message


def marked() -> frozenset[str]:
    """Every string marked so far in this process (module constants are marked on import)."""
    return frozenset(_MARKED)


class Words(str):
    """English text (a `str`) that keeps its marked template and figures for a page to translate.

    `Words(gettext_noop("lookahead is %(n)s"), n=0)` equals "lookahead is 0" wherever it is
    compared, logged or stored; the `words` template filter renders `gettext(text) % params`
    in the reader's language, translating any figure that is itself `Words`.
    `Words.ngettext` keeps a count's two English forms, `Words.joined` a list of such texts.
    """

    text: str
    params: dict[str, object]
    many: str = ""  # the plural template; params["n"] picks the form
    parts: tuple[str, ...] = ()  # for a list: the texts that `text` joins

    def __new__(cls, text: str, **params: object) -> Words:
        self = super().__new__(cls, text % params if params else text)
        self.text, self.params = text, params
        return self

    @classmethod
    def ngettext(cls, one: str, many: str, n: int, **params: object) -> Words:
        """A count's sentence: `one` when n is 1, else `many` (n is a param); the name is the
        keyword `makemessages` reads both forms from."""
        self = cls(one if n == 1 else many, n=n, **params)
        self.text, self.many = one, many
        return self

    @classmethod
    def joined(cls, separator: str, parts: Sequence[str]) -> Words:
        """`parts` joined by `separator`, each part translated on its own where shown."""
        self = super().__new__(cls, separator.join(parts))
        self.text, self.params, self.parts = separator, {}, tuple(parts)
        return self
