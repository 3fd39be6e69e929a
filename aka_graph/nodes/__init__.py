"""One module per graph node; each node reads state, calls tools, and returns a partial state update."""
