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
