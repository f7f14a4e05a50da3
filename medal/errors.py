"""Errors a user can fix. The CLI and the app show their message, never a traceback.

A message leads with what failed and what to do (its first line); details -- figures,
what a library said -- follow on later lines. Raise with ``fix=`` and ``details=`` to
keep that order: ``str(error)`` is the first line, then the details.
"""


class MedalError(Exception):
    """Base class: the message says what is wrong and how to fix it."""

    def __init__(self, message: str = "", *args, fix: str | None = None,
                 details: str | None = None):
        self.what, self.fix, self.details = str(message), fix, details
        first = self.what if not fix else f"{self.what.rstrip('. ')}: {fix}"
        super().__init__(first if not details else f"{first}\n{details}", *args)


class MedalWarning(UserWarning):
    """Something the user should know, that does not stop the work (the CLI prints it as
    ``medal: warning: ...``)."""


class InputError(MedalError, ValueError):
    """A bad parameter, prompt, problem or file."""


class ModelLoadError(MedalError):
    """A model could not be loaded (missing weights, opt-in needed, out of memory...)."""


class TraceError(MedalError, ValueError):
    """A trace file that is malformed, too large or of an unknown version."""


def quoted(value, most: int = 60) -> str:
    """``repr(value)`` for an error message, cut in its middle past ``most`` characters
    (an echoed input never buries what the message says to do)."""
    text = repr(value)
    if len(text) <= most:
        return text
    return f"{text[:most * 2 // 3]}…{text[-(most // 3):]} ({len(text):,} characters)"


# ---------------------------------------------------------------------- on a command line

MAX_ERROR_CHARS = 1_000   # an error's first line: what failed and what to do
MAX_WORD_CHARS = 80       # one quoted input within it (a 100,000-number --problem)
MAX_PATH_CHARS = 400      # a file's path is kept whole up to this (the user copies it)
MAX_DETAIL_LINES = 12


def _elide_words(line: str) -> str:
    """Each run of more than MAX_WORD_CHARS non-blank characters (an echoed input) cut in
    its middle, saying how long it was; the words around it are kept whole, and so is a
    file's path up to MAX_PATH_CHARS (it names the file to fix)."""
    out = []
    for word in line.split(" "):
        most = MAX_PATH_CHARS if word.startswith(("/", "./", "~/")) else MAX_WORD_CHARS
        if len(word) > most:
            word = f"{word[:40]}…({len(word):,} characters)…{word[-20:]}"
        out.append(word)
    return " ".join(out)


def _bounded(line: str, most: int) -> str:
    """``line`` within ``most`` characters, its start (what failed) and its end (what to
    do) kept: only the middle of an over-long line gives way."""
    line = _elide_words(" ".join(line.split()))
    if len(line) <= most:
        return line
    tail = most // 3
    return f"{line[:most - tail - 3]} … {line[-tail:]}"


def error_line(message) -> str:
    """``error: ...``: the first line of the message (what failed and what to do), whole
    unless an echoed input makes it long, then the details indented below it."""
    first, *rest = str(message).split("\n")
    lines = ["error: " + _bounded(first, MAX_ERROR_CHARS)]
    rest = [r for r in rest if r.strip()]
    lines += ["  " + _bounded(r, MAX_ERROR_CHARS) for r in rest[:MAX_DETAIL_LINES]]
    if len(rest) > MAX_DETAIL_LINES:
        lines.append(f"  ({len(rest) - MAX_DETAIL_LINES} more lines)")
    return "\n".join(lines)
