# ExpBench image: one image for web (gunicorn behind its buffering front), the workers and beat
# (see docker-compose.yml). The base image is pinned to an exact release: upgrade it on purpose.
FROM python:3.11.10-slim-bookworm

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    OMP_WAIT_POLICY=PASSIVE \
    EXPBENCH_VAR_DIR=/var/lib/expbench

WORKDIR /app
# bubblewrap runs code submissions (docs/sandbox.md); libseccomp2 gives the sandboxed child its
# system-call filter; setpriv and prlimit come with util-linux.
RUN apt-get update \
    && apt-get install -y --no-install-recommends bubblewrap libseccomp2 \
    && rm -rf /var/lib/apt/lists/*
# The whole stack, QUACKIE models included (requirements-models.txt reads requirements.txt).
# CPU torch by default; the GPU models worker (docker-compose.yml, profile "gpu") builds with
# TORCH_INDEX set to a CUDA wheel index.
ARG TORCH_INDEX=https://download.pytorch.org/whl/cpu
COPY requirements.txt requirements-models.txt ./
RUN pip install --no-cache-dir --extra-index-url "$TORCH_INDEX" -r requirements-models.txt

COPY . .
# The data folders exist in the image, owned by the app user: an empty named volume mounted
# on one of them (docker-compose.yml mounts "media" and "models") takes over that ownership; a folder
# Docker creates itself would be root-owned and unwritable for uploads.
RUN useradd --system --uid 10001 --home /app expbench \
    && mkdir -p /var/lib/expbench/media /var/lib/expbench/models \
    && SECRET_KEY=build-only python manage.py collectstatic --noinput \
    && chown -R expbench /var/lib/expbench
USER expbench

EXPOSE 8000
# The web process's health (database, broker, cache: /healthz, answered before the host check).
# docker-compose.yml gives each worker a check of its own in place of this one.
HEALTHCHECK --interval=30s --timeout=10s --start-period=120s --retries=3 \
    CMD ["python", "-c", "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8000/healthz', timeout=8)"]
CMD ["gunicorn", "config.asgi:application", "--worker-class", "asgi", "--bind", "0.0.0.0:8000", "--workers", "3"]
