"""pytest's settings: SparkDash's own, read after tests/__init__.py set the environment's defaults."""
from sparkdash.settings import *  # noqa: F403
