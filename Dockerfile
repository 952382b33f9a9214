# One image for every service; docker-compose.yml picks the process with `command`.
FROM python:3.12-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    DATA_DIR=/data

WORKDIR /app
COPY requirements.txt ./
RUN pip install --no-cache-dir -r requirements.txt
COPY common ./common
COPY gateway ./gateway
# The /docs and /map pages' browser code and the geocoder's words for kinds of places: pinned npm
# tarballs, checked (gateway/vendor.py).
RUN python -m gateway.vendor --pages-only
COPY auth_service ./auth_service
COPY geo_service ./geo_service
COPY route_service ./route_service
COPY optimize_service ./optimize_service
COPY job_service ./job_service
COPY launcher ./launcher

RUN useradd --create-home --uid 10001 app && mkdir -p /data && chown app /data
USER 10001
VOLUME ["/data"]
