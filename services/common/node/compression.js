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

/** Does an Accept-Encoding header (RFC 9110, 12.5.3) take gzip? */
export function acceptsGzip(header) {
  if (!header) return false;
  return String(header).split(',').some((item) => {
    const [name, ...params] = item.trim().toLowerCase().split(';');
    if (!['gzip', 'x-gzip', '*'].includes(name.trim())) return false;
    const q = params.map((p) => p.trim()).find((p) => p.startsWith('q='));
    return q === undefined || Number.parseFloat(q.slice(2)) > 0;
  });
}

/** Will the reply to `req` be compressed? */
export const gzipFor = (req) => COMPRESSION === 'gzip' && req.method !== 'HEAD'
  && acceptsGzip(req.headers['accept-encoding']);

/** `headers` and `body` (a string or Buffer) as the reply to `req` carries them:
 * gzip-compressed, with Content-Encoding, Vary and the new Content-Length, when
 * gzipFor(req); else as given. The headers' Content-Length is replaced either way. */
export function encoded(req, headers, body) {
  const bytes = Buffer.isBuffer(body) ? body : Buffer.from(body ?? '');
  const out = Object.fromEntries(Object.entries(headers).filter(([k]) => k.toLowerCase() !== 'content-length'));
  if (!gzipFor(req) || bytes.length === 0) return { headers: { ...out, 'Content-Length': bytes.length }, body: bytes };
  const compressed = gzipSync(bytes);
  return {
    headers: { ...out, 'Content-Encoding': 'gzip', Vary: 'Accept-Encoding', 'Content-Length': compressed.length },
    body: compressed,
  };
}
