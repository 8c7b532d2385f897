"""Querying the Prometheus servers a rollout's analysis names (`instant`)."""
