"""Every box at once: fleet rows and the forgotten-box alarm (rows), and their Prometheus
exposition under DCGM-exporter names (metrics)."""
