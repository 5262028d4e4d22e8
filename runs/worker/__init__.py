"""Step 3: the machine's worker: dispatch, claim, execute, guard, engine session, recorder, reaper."""
