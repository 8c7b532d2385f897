"""The Kubernetes API adapter, along its seams: `transport` (the official client, timeouts
and the one retry policy), `exchange` and `deadlines` (every request through one bounded
urllib3 pool), `discovery` (kind -> resource and scope, cached), `verbs` (apply, get, list,
delete by manifest: `KubeCluster`, the `ClusterPort` of a real server), `apierrors` (pure:
what went wrong, in words a user can act on, never a Secret's value) and `lease` (leader
election). Only `transport` and `lease` import `kubernetes`."""
