"""Bodies of the `python -m aka_graph` subcommands; `aka_graph.cli` only declares and wires them."""
