# syntax=docker/dockerfile:1
# Node 24: the LTS line the suite runs on in .ci/run besides Node 20 (supported to
# April 2028). Node 26 became LTS only in October 2026: move once .ci/run covers it.
# Build stage: full dependencies, compile TypeScript. No install script runs (.npmrc:
# none is needed), and Scarf's telemetry is off (package.json scarfSettings, and here).
FROM node:24-bookworm-slim AS build
ENV SCARF_ANALYTICS=false \
    DO_NOT_TRACK=1
WORKDIR /app
COPY package.json package-lock.json .npmrc ./
RUN npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
RUN npm run build && npm prune --omit=dev

# Runtime stage: production dependencies and dist only, non-root.
# BACKEND_API_HOST=0.0.0.0 lets other containers reach /v1 on 8081, so the gateway
# refuses to start without BACKEND_API_TOKEN (docker run -e BACKEND_API_TOKEN=<secret>);
# BACKEND_API_INSECURE=true starts it open anyway, with a warning at every start.
FROM node:24-bookworm-slim
ENV NODE_ENV=production \
    HOST=0.0.0.0 \
    PORT=8080 \
    BACKEND_API_HOST=0.0.0.0 \
    BACKEND_API_PORT=8081
WORKDIR /app
COPY --from=build --chown=node:node /app/package.json ./
COPY --from=build --chown=node:node /app/node_modules ./node_modules
COPY --from=build --chown=node:node /app/dist ./dist
COPY --chown=node:node config ./config
USER node
# 8080: public (WebSocket + health). 8081: internal backend API + metrics — never publish it to the internet.
EXPOSE 8080 8081
# Liveness on the public port: it answers all through a drain (SIGTERM), where
# /health/ready turns 503 for readiness probes and load balancers (README, Operations).
HEALTHCHECK --interval=10s --timeout=3s --start-period=5s --retries=3 \
  CMD ["node", "-e", "require('http').get('http://127.0.0.1:'+(process.env.PORT||8080)+'/health/live',r=>process.exit(r.statusCode===200?0:1)).on('error',()=>process.exit(1))"]
STOPSIGNAL SIGTERM
CMD ["node", "dist/main.js"]
