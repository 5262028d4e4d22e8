"""Figures of runs and their comparison, without Django: scorecard values, tables, sweep grids, parity."""
