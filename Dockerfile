# One image for every SparkDash process: daphne (the default), Celery worker and beat, simulator.
FROM python:3.11-slim

ENV PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

WORKDIR /app
COPY requirements.txt .
RUN pip install -r requirements.txt

COPY . .
# Needs no database or secret: the settings' defaults suffice at build time.
RUN python manage.py collectstatic --noinput -v 0 \
    && useradd --create-home sparkdash \
    && mkdir -p var && chown sparkdash var

# The image has no .git, so the commit measured must come in from the build.
ARG SPARKDASH_HARNESS_COMMIT=""
ENV SPARKDASH_HARNESS_COMMIT=${SPARKDASH_HARNESS_COMMIT}

USER sparkdash
EXPOSE 8000
CMD ["daphne", "-b", "0.0.0.0", "-p", "8000", "sparkdash.asgi:application"]
