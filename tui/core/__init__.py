"""Decisions and local state: billing, checklist, diagnosis, preflight, config, ledger, reports.

Imports neither textual nor asyncssh (an import contract in the tests enforces it)."""
