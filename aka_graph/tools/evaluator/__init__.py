"""The evaluator: the GPU-side harness, the sandboxes that run it, and the coordinator's client for both."""
