"""The parts of docs/RESULTS.md, by job; scripts/results_md.py puts them together."""
