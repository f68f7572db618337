FROM node:20-bookworm-slim
WORKDIR /app
COPY package.json package-lock.json ./
# --omit=optional skips the embedded engine library (@chdb/lib-*, ~570 MB): compose uses CLICKHOUSE_URL.
RUN npm ci --omit=dev --omit=optional --no-audit --no-fund
COPY bin ./bin
COPY src ./src
COPY schema ./schema
ENV NODE_ENV=production HOST=0.0.0.0 PORT=8080
EXPOSE 8080
USER node
CMD ["node", "bin/tallyhouse.js", "serve"]
