'use strict';
/**
 * Builds the demo chat page in memory: main.ts (with the client SDK from
 * client/src) bundled by esbuild into one script, beside index.html and
 * style.css. The example backend serves the result.
 */
const fs = require('node:fs');
const path = require('node:path');
const esbuild = require('esbuild');

/**
 * Resolves the page's files by URL path: `{ '/': {type, body}, '/app.js': …, '/style.css': … }`.
 * index.html holds the placeholder {{GATEWAY_PORT}} for the server to fill in.
 */
async function buildChatPage() {
  const result = await esbuild.build({
    entryPoints: [path.join(__dirname, 'main.ts')],
    bundle: true,
    format: 'iife',
    target: ['es2020'],
    minify: true,
    sourcemap: 'inline',
    write: false,
    logLevel: 'warning',
  });
  const read = (name) => fs.readFileSync(path.join(__dirname, name), 'utf8');
  return {
    '/': { type: 'text/html; charset=utf-8', body: read('index.html') },
    '/app.js': { type: 'text/javascript; charset=utf-8', body: result.outputFiles[0].text },
    '/style.css': { type: 'text/css; charset=utf-8', body: read('style.css') },
  };
}

module.exports = { buildChatPage };
