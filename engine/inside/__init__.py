"""Inside: what a person asks to see inside the model at one step
(inspect_request.py) and the frozen results the engine answers with
(inside_results.py).

Imports nothing."""
