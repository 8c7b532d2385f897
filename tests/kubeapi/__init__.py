"""A Kubernetes API emulator for tests: HTTP on loopback, server-side apply with field
ownership, discovery with CRDs added at runtime, Karmada's policy webhook rules, a request
log, and fault hooks. Held to a recorded real kube-apiserver by tests/integration."""
