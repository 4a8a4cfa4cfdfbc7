"""`python -m engine` is the `logitscope` command line."""

from engine.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
