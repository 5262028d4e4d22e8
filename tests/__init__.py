"""SparkDash's test suite.

Importing it (pytest's settings module tests/settings.py, or `python -m tests.<tool>`) gives this
process, and the servers and workers it starts, a developer's environment without asking for one:
DEBUG off as `make run` has it, plain HTTP (HTTPS=False), and a secret key of this session's own.
"""
import os
import secrets

os.environ.setdefault("HTTPS", "False")
if not (os.environ.get("SECRET_KEY") or os.environ.get("SECRET_KEY_FILE")):
    os.environ["SECRET_KEY"] = secrets.token_urlsafe(50)
