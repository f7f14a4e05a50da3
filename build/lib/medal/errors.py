"""Errors a user can fix. The CLI and the app show their message, never a traceback."""


class MedalError(Exception):
    """Base class: the message says what is wrong and how to fix it."""


class InputError(MedalError, ValueError):
    """A bad parameter, prompt, problem or file."""


class ModelLoadError(MedalError):
    """A model could not be loaded (missing weights, opt-in needed, out of memory...)."""


class TraceError(MedalError, ValueError):
    """A trace file that is malformed, too large or of an unknown version."""
