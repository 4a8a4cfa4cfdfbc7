"""`logitscope serve`: an OpenAI-compatible endpoint whose every token is recorded.

    app.py         the Starlette routes (/v1/models, /v1/chat/completions, /v1/completions),
                   and --route: a small model first, a large one below a confidence threshold
    validation.py  a request body to a ServeRequest, or an ApiError in OpenAI's shape
    stream.py      records to OpenAI chunks and responses (streamed and not)
    scheduler.py   the one thread that runs the model; a bounded queue in front of it
    jobs.py        the scheduler's contract with its runners: Job, END, JobSource
    batch.py       continuous batching: the requests in flight decoded together
    serial.py      one request at a time through the engine's own generate_records
    runs.py        every request a run of the "server" session in the journal
    events.py      live request events for a watcher (the window's Follow requests)
    events_feed.py GET /logitscope/events: those events as SSE, for a follower out of process
    server.py      uvicorn, started in the foreground (CLI) or on a thread (tests)

All model work happens on the scheduler's thread; the asyncio handlers only
validate, queue and relay records. Nothing here imports Qt.
"""
