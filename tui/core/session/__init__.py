"""Where a session to the box stands (conn_state), why a terminal handoff failed
(handoff_reason) and where each box's daemon listens (probe_sockets)."""
