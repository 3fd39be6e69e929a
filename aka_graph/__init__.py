"""aka_graph: a budget-bounded GPU-kernel optimization campaign whose verdicts the agent cannot game."""

__version__ = "0.1.0"
