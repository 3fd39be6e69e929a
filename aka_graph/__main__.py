"""`python -m aka_graph ...` entry point."""

from aka_graph.cli import main

if __name__ == "__main__":
    main()
