"""Signals of the runs app.

execution_finished: sent once per sweep run (SweepExecution), after the commit that marks it
finished, i.e. when every run it queued has ended (succeeded, failed, cancelled or lost).
sender=SweepExecution, kwargs: execution (the SweepExecution, its sweep selected).
"""
from __future__ import annotations

from django.dispatch import Signal

execution_finished = Signal()
