"""Plain-Python figures shared by runs and traffic: spreads and their intervals (stats), the one
way a figure is written (text), and when repeated reads are a read loop (read_loop).

No Django, and nothing of runs or traffic: both import it, neither imports the other's internals.
"""
