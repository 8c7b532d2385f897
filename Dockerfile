# gitgate: the reconciler that runs beside Karmada.
# Build: docker build -t gitgate .   Run: see deploy/ and the README ("Run beside Karmada").
FROM python:3.11-slim AS build
WORKDIR /src
RUN apt-get update && apt-get install -y --no-install-recommends git && rm -rf /var/lib/apt/lists/*
COPY pyproject.toml README.md ./
COPY gitgate ./gitgate
COPY tools ./tools
RUN python -m venv /opt/gitgate \
 && /opt/gitgate/bin/pip install --no-cache-dir . \
 && /opt/gitgate/bin/python tools/install_tools.py --bin /opt/gitgate/bin --cache /tmp/tools \
 && rm -rf /tmp/tools

FROM python:3.11-slim
RUN apt-get update && apt-get install -y --no-install-recommends git openssh-client ca-certificates \
 && rm -rf /var/lib/apt/lists/* \
 && useradd --uid 65532 --user-group --home-dir /tmp --no-create-home gitgate
COPY --from=build /opt/gitgate /opt/gitgate
ENV PATH=/opt/gitgate/bin:$PATH \
    HOME=/tmp \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1
# With a read-only root filesystem, /tmp and the cache dir are emptyDir volumes (deploy/).
USER 65532:65532
EXPOSE 8080
ENTRYPOINT ["gitgate"]
CMD ["run", "--help"]
