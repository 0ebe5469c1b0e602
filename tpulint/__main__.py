"""`python -m tpulint`."""

from tpulint.cli import main

if __name__ == "__main__":
    main()
