// Reading an HTTP request body under the contract's size limit
// (services/common/http_body.py): an oversize body is read to its end (up to
// DRAIN_LIMIT) before the 413 goes out, so a keep-alive connection stays usable.
import { ContractError, MAX_REQUEST_BYTES } from './contract.js';

export const DRAIN_LIMIT = 16 * MAX_REQUEST_BYTES; // beyond this the connection may be closed

const tooLarge = (size) => new ContractError('RESOURCE_EXHAUSTED',
  `request body of ${size} bytes exceeds the limit of ${MAX_REQUEST_BYTES} bytes`);

/** Resolves to the body (a Buffer) or rejects with RESOURCE_EXHAUSTED once it has been drained. */
export function readBody(stream, declaredLength) {
  return new Promise((resolve, reject) => {
    const chunks = [];
    let size = 0;
    let over = Number.isFinite(declaredLength) && declaredLength > MAX_REQUEST_BYTES;
    const done = (err) => {
      stream.removeListener('data', onData);
      stream.removeListener('end', onEnd);
      stream.removeListener('error', onError);
      if (err) reject(err); else resolve(Buffer.concat(chunks));
    };
    const onData = (chunk) => {
      size += chunk.length;
      if (size > MAX_REQUEST_BYTES) over = true;
      if (!over) chunks.push(chunk);
      else if (size > DRAIN_LIMIT) {
        stream.pause();
        done(tooLarge(size));
      }
    };
    const onEnd = () => done(over ? tooLarge(Math.max(size, declaredLength || 0)) : null);
    const onError = (err) => done(err);
    stream.on('data', onData);
    stream.on('end', onEnd);
    stream.on('error', onError);
  });
}
