#!/usr/bin/env node
// The dashboard's first load: index.html and everything it loads at start (its stylesheets,
// scripts and icon, and every ES module reachable from its module script through static
// imports), each gzipped at level 9, from the built web directory.
//
//   node tests/web/measure_size.mjs WEB_DIR [--max BYTES]
//
// Prints one line per file and the totals; exits 1 when the gzipped total is over --max.
import fs from 'node:fs';
import path from 'node:path';
import zlib from 'node:zlib';

const args = process.argv.slice(2);
const webDir = args[0];
const maxIndex = args.indexOf('--max');
const max = maxIndex >= 0 ? Number(args[maxIndex + 1]) : Infinity;
if (!webDir || !fs.existsSync(path.join(webDir, 'index.html'))) {
  console.error(`usage: measure_size.mjs WEB_DIR [--max BYTES]; no index.html in ${webDir}`);
  process.exit(2);
}

const files = [];
const seen = new Set();
function add(rel) {
  const clean = rel.replace(/^\.?\//, '');
  if (seen.has(clean)) return;
  seen.add(clean);
  const full = path.join(webDir, clean);
  if (!fs.existsSync(full)) throw new Error(`index.html loads ${clean}, which is not in ${webDir}`);
  files.push(clean);
  if (clean.endsWith('.js')) {
    const text = fs.readFileSync(full, 'utf8');
    // Static imports only (import x from './y.js'; import './y.js'; export ... from './y.js').
    for (const m of text.matchAll(/(?:^|\n)\s*(?:import|export)\s[^'"]*?['"](\.{1,2}\/[^'"]+)['"]/g)) {
      add(path.posix.join(path.posix.dirname(clean), m[1]));
    }
  }
}

add('index.html');
const html = fs.readFileSync(path.join(webDir, 'index.html'), 'utf8');
for (const m of html.matchAll(/<(?:script|link)\b[^>]*?\b(?:src|href)="([^"]+)"/g)) {
  if (/^[a-z]+:/i.test(m[1])) throw new Error(`index.html loads ${m[1]} from elsewhere`);
  add(m[1]);
}

let raw = 0;
let gz = 0;
for (const f of files) {
  const bytes = fs.readFileSync(path.join(webDir, f));
  const z = zlib.gzipSync(bytes, { level: 9 }).length;
  raw += bytes.length;
  gz += z;
  console.log(`${String(bytes.length).padStart(8)} ${String(z).padStart(8)}  ${f}`);
}
const kb = (n) => (n / 1024).toFixed(1);
console.log(`${String(raw).padStart(8)} ${String(gz).padStart(8)}  total: ${files.length} files, ${kb(raw)} KB raw, ${kb(gz)} KB gzipped` +
  (Number.isFinite(max) ? ` (limit ${kb(max)} KB gzipped)` : ''));
if (gz > max) {
  console.error(`FAIL: the first load is ${kb(gz)} KB gzipped, over ${kb(max)} KB`);
  process.exit(1);
}
