"""Autostop, enforced on the box: when to release (policy), what counts as idle (idle_rules,
idle_count), the watcher that outlives the daemon (supervise) and whether a release was real
(release_verify)."""
