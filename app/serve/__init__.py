"""Server ▸ Serve on port… and Follow requests (issue 39's window half).

dialog.py   where to serve: host, port, the environment variable holding an API key
process.py  `python -m engine serve …` as a child process: ready, stopped, its last words
feed.py     the server's /logitscope/events read on a thread (httpx), no MLX here
follow.py   each followed request shown live in the playground, through the session's methods
menu.py     the Server menu and the status-bar note, over the three above
"""
