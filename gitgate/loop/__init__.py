"""The reconcile loop of `gitgate run` and `apply --wait`, a module per job: `schedule` (pure:
when a pass is due), `reconciler` (the turns, built whole by one constructor), `shardturn`
(whose turn it is to write), `observer` (what Karmada reports; the only writer of a Bundle's
cluster status), `reporting` (a pass's metrics, notifications and log line), `headtrust`,
`loopdocs`, `freezewatch`, `halts` and `snapshot` (what a turn publishes for the page)."""
