FROM python:3.13-slim
# STATIC_MANIFEST: collectstatic writes hashed, compressed files and the app serves them.
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 STATIC_MANIFEST=1
WORKDIR /app
COPY pyproject.toml README.md ./
COPY memadmin memadmin
COPY records records
COPY sweeper sweeper
COPY erasure erasure
COPY api api
COPY memadmin_client memadmin_client
RUN pip install --no-cache-dir '.[prod]'
COPY . .
RUN SECRET_KEY=build-only DATABASE_URL=postgres://build/none python manage.py collectstatic --noinput
RUN useradd --system memadmin && mkdir -p /app/var/metrics && chown -R memadmin /app/var
USER memadmin
# gunicorn binds 0.0.0.0:$PORT; the health check (python -m memadmin.healthcheck) asks it there.
ENV PORT=8000
EXPOSE 8000
CMD ["gunicorn", "memadmin.wsgi", "--workers", "3"]
