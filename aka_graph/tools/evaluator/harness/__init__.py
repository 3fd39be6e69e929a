"""GPU-side evaluation harness (design §4–§5), uploaded into sandbox jobs as the top-level package `harness`.

Standard library and torch only (triton/numpy are imported only by candidates that need them); every
import inside the package is relative so the same files run in-tree as `aka_graph.tools.evaluator.harness`.
"""
