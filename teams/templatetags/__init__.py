"""Template tags of the teams app."""
