"""`python -m gitgate.cli`."""

from gitgate.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
