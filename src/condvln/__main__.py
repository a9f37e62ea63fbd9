"""Entry point for ``python -m condvln``."""

from condvln.cli import main

if __name__ == "__main__":
    main()
