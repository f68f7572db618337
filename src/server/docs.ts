import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';

/**
 * The API reference page: Redoc rendering /openapi.json, with Redoc's bundle served by the
 * service itself (no CDN: the page must work on a machine without Internet access).
 */
export const REDOC_PATH = '/docs/redoc.standalone.js';

export const DOCS_HTML = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>tallyhouse API</title>
<style>body { margin: 0; }</style>
</head>
<body>
<redoc spec-url="/openapi.json" hide-download-button="false"></redoc>
<script src="${REDOC_PATH}"></script>
</body>
</html>
`;

/**
 * Nothing but this service: Redoc's sidebar otherwise fetches its logo from cdn.redoc.ly, telling a
 * third party who reads the docs (and failing offline). Redoc injects its styles inline.
 */
export const DOCS_CSP = "default-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline'; script-src 'self'; worker-src 'self' blob:; connect-src 'self'; font-src 'self' data:";

let bundle: Buffer | undefined;

/** Redoc's standalone bundle (about 1 MB), read once on first use. */
export function redocBundle(): Buffer {
  bundle ??= readFileSync(createRequire(import.meta.url).resolve('redoc/bundles/redoc.standalone.js'));
  return bundle;
}
