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


class EngineFault(LogitscopeError):
    """The engine process died or hung; the message names the phase it was in.

    Args:
        message: the message for people.
        kind: engine_died or engine_hung.
    """

    def __init__(self, message: str, kind: str = "engine_died"):
        super().__init__(message)
        self.kind = kind


def error_for(record) -> LogitscopeError:
    """The exception an ErrorRecord stands for (for callers that raise instead of show).

    Args:
        record: an ErrorRecord.

    Returns:
        EngineFault for engine_died and engine_hung, SettingsError for settings
        (bad input: the command line exits with 2), ServerError for server, and
        ModelError for any other kind.
    """
    if record.kind in ("engine_died", "engine_hung"):
        return EngineFault(record.message, record.kind)
    if record.kind == "settings":
        return SettingsError(record.message)
    if record.kind == "server":
        return ServerError(record.message)
    return ModelError(record.message)
