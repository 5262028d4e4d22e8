"""The plain-Python part of claims: reading claim files and recipes, mapping settings onto a config's,
the roofline's plausibility and each figure's verdict. No Django here."""
