"""SparkDash settings, read from the environment (every variable is listed in .env.example).

With neither DATABASE_URL nor REDIS_URL set, SparkDash runs on an embedded default:
SQLite, an in-memory channel layer and an in-process worker. With them, it uses
Postgres, Redis (channel layer and Celery broker) and real Celery workers.
"""
import ipaddress
import os
from datetime import timedelta
from pathlib import Path

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

from sparkdash.secretkey import PUBLIC_KEYS, default_key_path, local_secret_key

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = Path(os.getenv("SPARKDASH_VAR_DIR", BASE_DIR / "var"))
# The folders whose datasets and agent fixtures a run may name (os.pathsep-separated); the
# shipped samples are always allowed. Anything else a form names is refused, not read.
SPARKDASH_DATA_DIRS = [
    Path(p) for p in os.getenv("SPARKDASH_DATA_DIRS", str(VAR_DIR / "datasets")).split(os.pathsep) if p
]


def envbool(name: str, default: str) -> bool:
    """Read a True/False (or 1/0) variable; anything else is a configuration error."""
    value = os.getenv(name, default)
    if value not in ("True", "False", "1", "0"):
        raise ImproperlyConfigured(f"{name} must be True or False (or 1 or 0), not {value!r}")
    return value in ("True", "1")


def envint(name: str, default: int) -> int:
    """Read an integer variable; a non-integer is a configuration error."""
    value = os.getenv(name, str(default))
    try:
        return int(value)
    except ValueError:
        raise ImproperlyConfigured(f"{name} must be an integer, not {value!r}") from None


def envfloat(name: str, default: float) -> float:
    """Read a number variable; anything else is a configuration error."""
    value = os.getenv(name, str(default))
    try:
        return float(value)
    except ValueError:
        raise ImproperlyConfigured(f"{name} must be a number, not {value!r}") from None


def envsecret(name: str, default: str = "") -> str:
    """Read a secret from NAME or from the file named by NAME_FILE (Docker secrets)."""
    path = os.getenv(f"{name}_FILE")
    if path:
        return Path(path).read_text().strip()
    return os.getenv(name, default)


# --- Safe by default (issue 31): DEBUG, the secret key, HTTPS ---
# DEBUG is off unless the developer turns it on (DEBUG=True or DEBUG=1): its error pages show the
# settings (database and Redis URLs with their passwords) to anyone who can reach the port.
DEBUG = envbool("DEBUG", "False")
# Without SECRET_KEY (or SECRET_KEY_FILE): a random key generated once for this user, kept outside
# the repository (sparkdash/secretkey.py). Several web servers that share sessions need one key: set it.
SECRET_KEY = envsecret("SECRET_KEY")
if not SECRET_KEY:
    try:
        SECRET_KEY = local_secret_key(default_key_path())
    except (OSError, ValueError) as error:
        raise ImproperlyConfigured(f"no SECRET_KEY set, and the generated key is unusable: {error}") from None
if not DEBUG and SECRET_KEY in PUBLIC_KEYS:
    raise ImproperlyConfigured("SECRET_KEY is a published example value: set a long random one")
ALLOWED_HOSTS = os.getenv("ALLOWED_HOSTS", "127.0.0.1,localhost,testserver").split(",")
CSRF_TRUSTED_ORIGINS = [o for o in os.getenv("CSRF_TRUSTED_ORIGINS", "").split(",") if o]
# Whether browsers reach the site over HTTPS (TLS here or at a proxy). On by default with DEBUG off,
# so production is HTTPS-only (redirect, secure cookies, HSTS) and `check --deploy` passes; `make
# run` serves plain HTTP on 127.0.0.1 and sets HTTPS=False. Behind a TLS-terminating proxy, set
# SECURE_PROXY_SSL_HEADER=1 so the X-Forwarded-Proto header it sends is trusted.
HTTPS = envbool("HTTPS", str(not DEBUG))
SECURE_SSL_REDIRECT = envbool("SECURE_SSL_REDIRECT", str(HTTPS))
SESSION_COOKIE_SECURE = CSRF_COOKIE_SECURE = envbool("SECURE_COOKIES", str(HTTPS))
SECURE_HSTS_SECONDS = envint("SECURE_HSTS_SECONDS", 31_536_000 if HTTPS else 0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = envbool("SECURE_HSTS_INCLUDE_SUBDOMAINS", str(HTTPS))
# The HSTS preload list is for public domains; a dashboard on a team network does not join it.
SILENCED_SYSTEM_CHECKS = ["security.W021"]
if envbool("SECURE_PROXY_SSL_HEADER", "False"):
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
# --- end of safe by default ---
SESSION_COOKIE_HTTPONLY = True
X_FRAME_OPTIONS = "DENY"

# --- Content-Security-Policy and Permissions-Policy (issue 31) ---
# Scripts, styles, fonts and Chart.js/Pico are all served from static/ (no inline script or style:
# tests/test_static_layout.py); the live pages' sockets are same-origin. Pico's icons are data: URIs.
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": ["'self'"],
        "script-src": ["'self'"],
        "style-src": ["'self'"],
        "img-src": ["'self'", "data:"],
        "font-src": ["'self'"],
        "connect-src": ["'self'"],
        "object-src": ["'none'"],
        "base-uri": ["'none'"],
        "form-action": ["'self'"],
        "frame-ancestors": ["'none'"],
    }
}
# No page uses a device or sensor; the launch recipe's Copy button writes the clipboard.
PERMISSIONS_POLICY: dict[str, list[str]] = {
    feature: []
    for feature in (
        "accelerometer", "autoplay", "browsing-topics", "camera", "display-capture",
        "geolocation", "gyroscope", "hid", "magnetometer", "microphone", "midi", "payment", "serial",
        "usb", "xr-spatial-tracking",
    )
} | {"clipboard-write": ["self"]}

# --- Request bodies (issue 31): every body is capped before Django reads it (sparkdash/bodylimit.py),
# at the largest a form takes (a 5 MB replay file and its fields); form fields other than files
# are capped at Django's DATA_UPLOAD_MAX_MEMORY_SIZE.
SPARKDASH_MAX_REQUEST_BYTES = envint("SPARKDASH_MAX_REQUEST_BYTES", 6 * 1024 * 1024)
DATA_UPLOAD_MAX_MEMORY_SIZE = envint("DATA_UPLOAD_MAX_MEMORY_SIZE", 2_621_440)

INSTALLED_APPS = [
    "daphne",
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "channels",
    "django_celery_beat",
    "engines",
    "runs",
    "traffic",
    "claims",
    "teams",
    # Accounts (issue 31): login throttling (axes), and the project package's own signals, after it.
    "axes",
    "sparkdash.apps.SparkDashConfig",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    # Safe by default (issue 31): CSP and Permissions-Policy on every answer; /api/ errors in JSON
    # (inside these three, so a JSON error gets their headers too).
    "csp.middleware.CSPMiddleware",
    "django_permissions_policy.PermissionsPolicyMiddleware",
    "sparkdash.middleware.ApiErrorsAsJson",
    # Serves static/ from daphne itself: no CDN, no separate file server to set up.
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    # After sessions, before common: the header's switcher (a cookie) wins, else Accept-Language.
    "django.middleware.locale.LocaleMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    # Accounts (issue 31): extends a logged-in session as it is used (the idle timeout, sparkdash.idle);
    # turns a login refused for a lockout into the lockout page (axes: last, as it asks).
    "sparkdash.idle.IdleTimeoutMiddleware",
    "axes.middleware.AxesMiddleware",
]

ROOT_URLCONF = "sparkdash.urls"
TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
            # Django's own two (what APP_DIRS gives), then each job kind's page part read from its
            # folder (runs.job_files), not cached so a kind added at run time (a test's) is found.
            "loaders": [
                ("django.template.loaders.cached.Loader", [
                    "django.template.loaders.filesystem.Loader",
                    "django.template.loaders.app_directories.Loader",
                ]),
                "runs.job_files.JobPageLoader",
            ],
        },
    }
]
WSGI_APPLICATION = "sparkdash.wsgi.application"
ASGI_APPLICATION = "sparkdash.asgi.application"

DATABASE_URL = os.getenv("DATABASE_URL", "")
if DATABASE_URL:
    # Health checks: a kept connection that a restarted Postgres closed is replaced, not used.
    DATABASES = {
        "default": dj_database_url.parse(
            DATABASE_URL, conn_max_age=envint("CONN_MAX_AGE", 0), conn_health_checks=True
        )
    }
else:
    VAR_DIR.mkdir(parents=True, exist_ok=True)
    DATABASES = {
        "default": {
            "ENGINE": "django.db.backends.sqlite3",
            "NAME": str(VAR_DIR / "sparkdash.sqlite3"),
            # A file, not memory, so that a live-server test process sees the same rows.
            "TEST": {"NAME": str(VAR_DIR / "test-sparkdash.sqlite3")},
            # WAL: a commit appends to one log instead of writing, syncing and deleting a rollback
            # journal, and the pages read while the worker writes (a third of the database
            # thread's CPU per recorder pass, issue 41); NORMAL syncs at checkpoints, not at
            # every commit, the setting SQLite's documentation gives for WAL.
            "OPTIONS": {"timeout": 30, "transaction_mode": "IMMEDIATE",
                        "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL"},
        }
    }
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

REDIS_URL = os.getenv("REDIS_URL", "")
# A watcher's socket waits on the channel layer with blocking pops of 5 s (channels_redis's
# brpop_timeout). redis-py 8 gives up reading after 5 s by default, so an idle watcher's receive
# raised TimeoutError and its socket closed (redis-py issue 4091). The layer's reads have no
# client-side timeout, as before redis-py 8: every pop ends on the server's side within 5 s.
if REDIS_URL:
    CHANNEL_LAYERS = {
        "default": {
            "BACKEND": "channels_redis.core.RedisChannelLayer",
            "CONFIG": {"hosts": [{"address": REDIS_URL, "socket_timeout": None}]},
        }
    }
else:
    CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}

# "celery" sends runs to per-machine Celery queues; "inprocess" runs them on threads of the
# web process (one per machine), for the embedded default where there is no broker.
SPARKDASH_WORKER = os.getenv("SPARKDASH_WORKER", "celery" if REDIS_URL else "inprocess")
if SPARKDASH_WORKER not in ("celery", "inprocess"):
    raise ImproperlyConfigured(f"SPARKDASH_WORKER must be celery or inprocess, not {SPARKDASH_WORKER!r}")
if SPARKDASH_WORKER == "celery" and not REDIS_URL:
    raise ImproperlyConfigured("SPARKDASH_WORKER=celery needs REDIS_URL (the broker the workers share)")

CELERY_BROKER_URL = REDIS_URL or "memory://"
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_IGNORE_RESULT = True
CELERY_TASK_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_TASK_TIME_LIMIT = envint("CELERY_TASK_TIME_LIMIT", 6 * 3600)
CELERY_TASK_SOFT_TIME_LIMIT = envint("CELERY_TASK_SOFT_TIME_LIMIT", 6 * 3600 - 60)
# A run is long; redelivery must wait longer than the longest run (Redis visibility timeout).
CELERY_BROKER_TRANSPORT_OPTIONS = {"visibility_timeout": CELERY_TASK_TIME_LIMIT + 600}
CELERY_BEAT_SCHEDULER = "django_celery_beat.schedulers:DatabaseScheduler"
# Claims re-checked every night (claims.schedules): beat sends their tick every minute.
CELERY_BEAT_SCHEDULE = {
    "claim schedules": {"task": "claims.tasks.tick_claim_schedules", "schedule": 60.0},
}

# --- Accounts (issue 31): login throttling, password rules, idle sessions (docs/SECURITY.md) ---
# django-axes refuses a login, right password or not, once a username or an address has
# AXES_FAILURE_LIMIT failed logins within the cool-off; the lockout lifts AXES_COOLOFF_MINUTES after
# the last counted failure, or when an admin resets it (the admin's "Access attempts", or
# `manage.py axes_reset_username NAME` / `axes_reset_ip ADDRESS`).
AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",  # first: a locked-out login never reaches a password check
    "django.contrib.auth.backends.ModelBackend",
]
AXES_FAILURE_LIMIT = envint("AXES_FAILURE_LIMIT", 10)
AXES_COOLOFF_TIME = timedelta(minutes=envint("AXES_COOLOFF_MINUTES", 15))
AXES_LOCKOUT_PARAMETERS = ["username", "ip_address"]  # each on its own: per user and per address
# Failures while locked out do not push the end further, so the lockout page can say when it ends.
AXES_RESET_COOL_OFF_ON_FAILURE_DURING_LOCKOUT = False
# Axes' default: a success does not wipe the failures; it would wipe every failure from the same
# address too, so a member could clear their guesses at a teammate's password by logging in.
AXES_RESET_ON_SUCCESS = False
AXES_ENABLE_ACCESS_FAILURE_LOG = True
AXES_LOCKOUT_CALLABLE = "sparkdash.accounts.lockout_response"
AXES_CLIENT_IP_CALLABLE = "sparkdash.accounts.client_address"
AXES_VERBOSE = False  # no banner at every command; the failures are logged by sparkdash.security
# Reverse proxies in front of SparkDash that append to X-Forwarded-For; 0 (default): the header is
# ignored and REMOTE_ADDR counts (a client could write the header itself).
SPARKDASH_TRUSTED_PROXIES = envint("SPARKDASH_TRUSTED_PROXIES", 0)
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {
        "NAME": "django.contrib.auth.password_validation.MinimumLengthValidator",
        "OPTIONS": {"min_length": envint("PASSWORD_MIN_LENGTH", 12)},
    },
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
# An idle timeout, not an absolute one: a logged-in session is extended as it is used (at most every
# 5 minutes, sparkdash.idle, rather than SESSION_SAVE_EVERY_REQUEST's write on every request).
# 8 hours: a working day, so a long run watched over lunch keeps its page; a browser left logged in
# overnight on a shared screen does not.
SESSION_COOKIE_AGE = envint("SESSION_IDLE_MINUTES", 8 * 60) * 60
# --- end of Accounts ---
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "runs:home"
LOGOUT_REDIRECT_URL = "login"

# English is the default; the Japanese catalogue lives in locale/ja (docs/i18n.md).
LANGUAGE_CODE = "en"
LANGUAGES = [("en", "English"), ("ja", "日本語")]
LOCALE_PATHS = [BASE_DIR / "locale"]
LANGUAGE_COOKIE_AGE = 365 * 24 * 3600
TIME_ZONE = os.getenv("TIME_ZONE", "UTC")
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
# Django's own two, then each job kind's script read from its folder (runs.job_files).
STATICFILES_FINDERS = [
    "django.contrib.staticfiles.finders.FileSystemFinder",
    "django.contrib.staticfiles.finders.AppDirectoriesFinder",
    "runs.job_files.JobScriptFinder",
]
STATIC_ROOT = BASE_DIR / "staticfiles"
STATIC_ROOT.mkdir(parents=True, exist_ok=True)  # whitenoise warns at every start without it
# Without collectstatic (make run), serve straight from static/.
WHITENOISE_USE_FINDERS = True

# Live updates: at most this many flushes (DB write + broadcast) per second per run.
SPARKDASH_FLUSH_INTERVAL_S = envfloat("SPARKDASH_FLUSH_INTERVAL_S", 0.25)
SPARKDASH_HARNESS_COMMIT = os.getenv("SPARKDASH_HARNESS_COMMIT", "")
# Hardware telemetry during every run (docs/metrics.md "Hardware telemetry"): readings a second,
# the idle baseline taken before the job (energy figures subtract it), and the share of a GPU's
# maximum SM clock under which a busy GPU counts as throttled (DGX Spark: 2,457-2,496 of 3,003 MHz
# under load is normal, 82 %). SPARKDASH_TELEMETRY_HZ=0 turns telemetry off (no sampler thread, no
# telemetry samples; the baseline still waits, a pre-heat runs its whole preheat_s; the summary says
# "off"): the telemetry benchmark's reference (`make bench BENCH_ARGS="--only telemetry"`).
SPARKDASH_TELEMETRY_HZ = envfloat("SPARKDASH_TELEMETRY_HZ", 10.0)
SPARKDASH_TELEMETRY_BASELINE_S = envfloat("SPARKDASH_TELEMETRY_BASELINE_S", 2.0)
SPARKDASH_THROTTLE_CLOCK_FLOOR_PCT = envfloat("SPARKDASH_THROTTLE_CLOCK_FLOOR_PCT", 70.0)
# Pre-heating (a config's preheat_s): the readings of this many seconds must be steady.
SPARKDASH_PREHEAT_SETTLE_S = envfloat("SPARKDASH_PREHEAT_SETTLE_S", 10.0)
# A recorded NVML trace (JSON, engines.telemetry.recorded) played back instead of the GPU: for tests
# and for checking the pages without a GPU; the run's telemetry names it as a recording.
SPARKDASH_NVML_TRACE = os.getenv("SPARKDASH_NVML_TRACE", "")
# A running run whose worker sent no heartbeat for this long is failed as lost.
SPARKDASH_LOST_RUN_S = envint("SPARKDASH_LOST_RUN_S", 300)
# A running job's heartbeat, and how soon it notices a cancel from the UI.
SPARKDASH_WATCH_INTERVAL_S = envfloat("SPARKDASH_WATCH_INTERVAL_S", 1.0)
# Worker presence on the pages: how long one broadcast asking workers for their queues waits for
# answers, and how long its answer is reused (Django's cache), so pages stay fast.
SPARKDASH_WORKER_INSPECT_TIMEOUT_S = envfloat("SPARKDASH_WORKER_INSPECT_TIMEOUT_S", 1.0)
SPARKDASH_WORKER_PRESENCE_TTL_S = envfloat("SPARKDASH_WORKER_PRESENCE_TTL_S", 12.0)
# The machines whose Celery workers `manage.py serve` starts beside the dashboard: "all", "none", or
# names (comma-separated). A team whose Sparks run their own `make worker` names only the local box.
SPARKDASH_SERVE_WORKERS = os.getenv("SPARKDASH_SERVE_WORKERS", "all").strip()
# How often each Celery worker looks for lost runs on every machine.
SPARKDASH_REAP_INTERVAL_S = envfloat("SPARKDASH_REAP_INTERVAL_S", 30.0)
# How long a managed engine may take to answer /health: vLLM's CPU build took 90 to over 300 s on
# 2 busy cores, and a large model loads for minutes on a Spark; a start that dies fails at once.
SPARKDASH_ENGINE_START_TIMEOUT_S = envfloat("SPARKDASH_ENGINE_START_TIMEOUT_S", 900.0)
# How long an engine may send nothing before a request fails (agent steps are not streamed).
SPARKDASH_REQUEST_TIMEOUT_S = envfloat("SPARKDASH_REQUEST_TIMEOUT_S", 300.0)
SPARKDASH_AGENT_REQUEST_TIMEOUT_S = envfloat("SPARKDASH_AGENT_REQUEST_TIMEOUT_S", 1800.0)
# A job still running after this long fails; under the Celery soft limit, so the reason is ours.
SPARKDASH_JOB_TIMEOUT_S = envfloat("SPARKDASH_JOB_TIMEOUT_S", CELERY_TASK_SOFT_TIME_LIMIT - 60)
# A machine whose relay (manage.py relay) sent a heartbeat this recently is busy with real traffic:
# runs on it are refused, at start and when a worker claims one (one engine per machine).
SPARKDASH_RELAY_ACTIVE_S = envfloat("SPARKDASH_RELAY_ACTIVE_S", 15.0)
# A quality job's tokens per answer when the config asks for thinking without a budget: reasoning
# plus the answer. MMLU-Pro answers took ~16k reasoning tokens in the field, plus lm-eval's 2,048.
SPARKDASH_THINKING_ANSWER_BUDGET = envint("SPARKDASH_THINKING_ANSWER_BUDGET", 18_432)
# A captured request body or answer is cut to this many bytes (on machines that capture bodies).
SPARKDASH_TRAFFIC_BODY_CAP_BYTES = envint("SPARKDASH_TRAFFIC_BODY_CAP_BYTES", 256 * 1024)
# Deprecated: one bearer token for GET /metrics that shows EVERY team's series (the operator's own
# Prometheus). Empty (the default): off; teams use their own metrics tokens (manage.py metricstoken).
SPARKDASH_METRICS_TOKEN = envsecret("SPARKDASH_METRICS_TOKEN")
# Networks a sweep's webhook may reach beyond public addresses (comma-separated, e.g. 10.0.0.0/8);
# empty: loopback, link-local, private and reserved addresses are refused (runs/actions/webhooks.py).
# A network that does not parse stops the server at start rather than at the first alert.
SPARKDASH_WEBHOOK_ALLOWED_NETWORKS = [
    str(ipaddress.ip_network(n.strip(), strict=False))
    for n in os.getenv("SPARKDASH_WEBHOOK_ALLOWED_NETWORKS", "").split(",") if n.strip()
]

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": os.getenv("LOG_LEVEL", "INFO")},
    # One line per engine request drowns the worker's log.
    "loggers": {"httpx": {"level": "WARNING"}, "httpcore": {"level": "WARNING"}},
}

# Accounts (issue 31): failed logins are logged on sparkdash.security (username, address, never the
# password); axes' own lines say the same with both masked, so only its warnings are kept.
LOGGING["loggers"]["axes"] = {"level": "WARNING"}  # type: ignore[index]
