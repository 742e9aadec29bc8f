"""Verdicts from facts: the shutdown checklist (checklist) and its gathering and fixing
(release_actions), the preflight of a fresh box (preflight), and the data-starvation
diagnosis (diagnosis)."""
