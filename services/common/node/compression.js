// The lab's compression axis (lab/axes.py, axis `compression`) for the Node.js
// HTTP services: with LAB_COMPRESSION=gzip a reply goes out in HTTP's gzip
// content coding when its request asks for it (Accept-Encoding names gzip at a
// q above 0), with its own Content-Length; otherwise as it is.
import { gzipSync } from 'node:zlib';

function setting() {
  const value = process.env.LAB_COMPRESSION || 'identity';
  if (value !== 'identity' && value !== 'gzip') {
    console.error(`LAB_COMPRESSION=${JSON.stringify(value)}: expected identity or gzip`);
    process.exit(2);
  }
  return value;
}

export const COMPRESSION = setting();

/** Does an Accept-Encoding header (RFC 9110, 12.5.3) take gzip? gzip (or x-gzip)
 * named with a q-value above 0; else, gzip unnamed, "*" with a q-value above 0. */
export function acceptsGzip(header) {
  if (!header) return false;
  let named = -1;
  let wildcard = -1;
  for (const item of String(header).split(',')) {
    const [name, ...params] = item.trim().toLowerCase().split(';');
    const coding = name.trim();
    if (!['gzip', 'x-gzip', '*'].includes(coding)) continue;
    const q = params.map((p) => p.trim()).find((p) => p.startsWith('q='));
    const value = q === undefined ? 1 : Number.parseFloat(q.slice(2));
    if (Number.isNaN(value)) continue;
    if (coding === '*') wildcard = Math.max(wildcard, value);
    else named = Math.max(named, value);
  }
  return named >= 0 ? named > 0 : wildcard > 0;
}

/** Will the reply to `req` be compressed? */
export const gzipFor = (req) => COMPRESSION === 'gzip' && req.method !== 'HEAD'
  && acceptsGzip(req.headers['accept-encoding']);

/** Writes a whole reply, `text` (a string) with `headers` (no Content-Length: set here):
 * gzip-compressed, with Content-Encoding, Vary and the compressed length, when
 * gzipFor(res.req); else as the services always wrote it (writeHead, end(text)). */
export function sendWhole(res, status, headers, text) {
  if (!gzipFor(res.req) || text.length === 0) {
    res.writeHead(status, { ...headers, 'Content-Length': Buffer.byteLength(text) });
    res.end(text);
    return;
  }
  const compressed = gzipSync(Buffer.from(text));
  res.writeHead(status, {
    ...headers, 'Content-Encoding': 'gzip', Vary: 'Accept-Encoding', 'Content-Length': compressed.length,
  });
  res.end(compressed);
}
