"""User-facing errors. Their message is shown as is: one line saying what was
wrong and what to do. Anything else escaping the engine is a bug."""


class LogitscopeError(Exception):
    """Base class of every error meant for the person using the app."""


class ModelError(LogitscopeError):
    """A model could not be found, read, converted or loaded."""


class SettingsError(LogitscopeError):
    """A sampling setting or prompt is out of range."""


class ServerError(LogitscopeError):
    """A remote server refused, failed or could not be reached."""

    kind = "server"
