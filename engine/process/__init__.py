"""The engine process and its client: EngineClient (client.py) starts, talks to and
watches the process; worker.py is the process; operations.py the requests that
cross the pipe; watchdog_messages.py what the watchdog says.

Imports nothing."""
