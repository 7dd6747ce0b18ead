# hwgateway in a container. Build: docker build -t hwgateway .
# Run (see README, "Containers"): docker run --network host -v /etc/hwgateway:/etc/hwgateway:ro hwgateway

FROM python:3.11-slim AS build
COPY pyproject.toml README.md /src/
COPY gateway /src/gateway
COPY devices /src/devices
COPY protocols /src/protocols
COPY scripts/install-venv.sh /src/scripts/install-venv.sh
RUN /src/scripts/install-venv.sh /opt/hwgateway/venv gamepad,ble

FROM python:3.11-slim
RUN groupadd --system hwgateway \
    && useradd --system --gid hwgateway --groups dialout --home-dir /nonexistent --no-create-home \
       --shell /usr/sbin/nologin hwgateway \
    && install -d -o hwgateway -g hwgateway -m 0750 /run/hwgateway
COPY --from=build /opt/hwgateway /opt/hwgateway
COPY config.toml /etc/hwgateway/config.toml
ENV PATH=/opt/hwgateway/venv/bin:$PATH PYTHONUNBUFFERED=1
USER hwgateway
EXPOSE 8470/tcp 8471/tcp
HEALTHCHECK --interval=30s --timeout=5s --start-period=10s --retries=3 \
    CMD ["python", "-c", "import sys, urllib.request; sys.exit(urllib.request.urlopen('http://127.0.0.1:8470/healthz', timeout=4).status != 200)"]
CMD ["hwgateway", "run", "--config", "/etc/hwgateway/config.toml", "--log-format", "json"]
