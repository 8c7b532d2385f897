"""gitgate: a GitOps reconciler for Karmada whose pauses are commits."""

__version__ = "0.1.0"
