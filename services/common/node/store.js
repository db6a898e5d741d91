// The one store of every Node.js service, with the semantics of
// services/common/store.py: validation before anything reaches MongoDB, ids
// are strings (seeded games: the appid; created ones: a fresh ObjectId's hex),
// list in _id order with skip/limit, update replaces, a lost database is
// UNAVAILABLE within MONGODB_TIMEOUT_MS.
import {
  MongoClient, MongoNetworkError, MongoOperationTimeoutError, MongoServerSelectionError,
  MongoTopologyClosedError, MongoNotConnectedError, ObjectId,
} from 'mongodb';
import {
  ContractError, DEFAULT_LIST_LIMIT, FIELDS, LANGUAGE_DETAILS, LANGUAGE_DETAIL_FIELDS,
  checkGame, checkId, checkPage,
} from './contract.js';

export const TIMEOUT_MS = Number.parseInt(process.env.MONGODB_TIMEOUT_MS ?? '5000', 10);
const DEFAULT_DB = 'protolab';
const COLLECTION = 'games';

const notFound = (id) => new ContractError('NOT_FOUND', `no game with id ${JSON.stringify(id)}`);

// Node's own socket errors, which the driver does not always wrap: mongodb
// 7.8.0's writeCommand rethrows the socket's 'error' as it is while it waits for
// 'drain', so a pooled connection the killed database had just closed answered
// EPIPE "This socket has been ended by the other party" (node_grpcjs said
// INTERNAL once in CI's run of tests/test_database_down.py).
const SOCKET_ERRORS = new Set([
  'EPIPE', 'ECONNRESET', 'ECONNREFUSED', 'ECONNABORTED', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH',
  'ERR_SOCKET_CLOSED', 'ERR_STREAM_DESTROYED', 'ERR_STREAM_WRITE_AFTER_END',
]);

export function databaseError(err) {
  if (err instanceof ContractError) return err;
  // timeoutMS ran out: choosing a server (none reachable) is a lost database,
  // anything after it a database that did not answer in time.
  if (err instanceof MongoOperationTimeoutError) {
    return err.cause instanceof MongoServerSelectionError
      ? new ContractError('UNAVAILABLE', `database unavailable: ${err.cause.message}`)
      : new ContractError('DEADLINE_EXCEEDED', `database did not answer within ${TIMEOUT_MS} ms: ${err.message}`);
  }
  if (err instanceof MongoNetworkError || err instanceof MongoServerSelectionError
      || err instanceof MongoTopologyClosedError || err instanceof MongoNotConnectedError
      || err?.hasErrorLabel?.('ResetPool') || err?.name === 'MongoPoolClearedError'
      || SOCKET_ERRORS.has(err?.code)) {
    return new ContractError('UNAVAILABLE', `database unavailable: ${err.message}`);
  }
  return err;
}

// The driver's timeoutMS is not a deadline for a reply that trickles in (its
// socket timeout is an idle timeout: a reply arriving a few bytes at a time kept
// an operation going for 2 s with timeoutMS at 600 ms, on a database link
// shaped to 8 kbit/s). So the service keeps its own: the contract's
// DEADLINE_EXCEEDED once TIMEOUT_MS (and a little, for the driver's own more
// precise error to come first) has passed. The operation may still finish
// after it, as with any client that stops waiting.
const DEADLINE_SLACK_MS = 50;

// When the deadline comes first, a database the driver's monitor already
// failed to reach is still a lost one: UNAVAILABLE. (With the database just
// killed and every service asked at once on 2 cores, the driver's own
// server-selection error came after the slack: node_yoga, node_grpcjs and
// sse/node_http answered DEADLINE_EXCEEDED, tests/test_database_down.py.)
function lostDatabase(client) {
  const servers = [...(client.topology?.description?.servers?.values() ?? [])];
  const lost = servers.length > 0 && servers.every((s) => s.type === 'Unknown' && s.error);
  return lost ? servers[0].error : null;
}

async function guarded(client, operation) {
  let timer;
  const deadline = new Promise((resolve, reject) => {
    timer = setTimeout(() => {
      const lost = lostDatabase(client);
      reject(lost
        ? new ContractError('UNAVAILABLE', `database unavailable: ${lost.message}`)
        : new ContractError('DEADLINE_EXCEEDED', `database did not answer within ${TIMEOUT_MS} ms`));
    }, TIMEOUT_MS + DEADLINE_SLACK_MS);
  });
  try {
    return await Promise.race([operation(), deadline]);
  } catch (err) {
    throw databaseError(err);
  } finally {
    clearTimeout(timer);
  }
}

// A stored document as the contract's Game: id first, then the contract's field order.
export function publicGame(id, doc) {
  const game = { id };
  for (const [name, kind] of Object.entries(FIELDS)) {
    const value = doc[name];
    game[name] = kind === LANGUAGE_DETAILS && Array.isArray(value)
      ? value.map((d) => Object.fromEntries(Object.keys(LANGUAGE_DETAIL_FIELDS).map((k) => [k, d[k]])))
      : value;
  }
  return game;
}

export class Store {
  constructor(uri = process.env.MONGODB_URI, db = process.env.MONGODB_DB ?? DEFAULT_DB) {
    if (!uri) throw new Error('MONGODB_URI is not set');
    // timeoutMS bounds a whole operation (server selection, connecting, every
    // read of its reply), as the Python store's; socketTimeoutMS alone bounds each read.
    this.client = new MongoClient(uri, {
      timeoutMS: TIMEOUT_MS, serverSelectionTimeoutMS: TIMEOUT_MS, connectTimeoutMS: TIMEOUT_MS,
      socketTimeoutMS: TIMEOUT_MS, appName: 'protolab',
    });
    this.games = this.client.db(db).collection(COLLECTION);
  }

  close() {
    return this.client.close();
  }

  async create(game) {
    const fields = checkGame(game);
    const id = new ObjectId().toHexString();
    await guarded(this.client, () => this.games.insertOne({ _id: id, ...fields }));
    return { id, ...fields };
  }

  async get(id) {
    checkId(id);
    const doc = await guarded(this.client, () => this.games.findOne({ _id: id }));
    if (doc === null) throw notFound(id);
    return publicGame(doc._id, doc);
  }

  async list(limit = DEFAULT_LIST_LIMIT, offset = 0) {
    const [l, o] = checkPage(limit, offset);
    const docs = await guarded(this.client, () => this.games.find({}).sort({ _id: 1 }).skip(o).limit(l).toArray());
    return docs.map((doc) => publicGame(doc._id, doc));
  }

  async update(id, game) {
    checkId(id);
    const fields = checkGame(game);
    const result = await guarded(this.client, () => this.games.replaceOne({ _id: id }, fields));
    if (result.matchedCount === 0) throw notFound(id);
    return { id, ...fields };
  }

  async delete(id) {
    checkId(id);
    const result = await guarded(this.client, () => this.games.deleteOne({ _id: id }));
    if (result.deletedCount === 0) throw notFound(id);
    return null;
  }

  /** The games collection's change stream (push.md `changes`), opened: resolves once the
   * database has accepted it, with `first`, a promise of its first change (or null).
   * The driver opens a stream lazily, at its first tryNext(): the aggregate, then, with
   * no change yet, a getMore the server holds up to its maxAwaitTimeMS (1 s). The
   * aggregate's answer carries the stream's resume token (resumeTokenChanged): the
   * stream is open then, and the subscription is confirmed without waiting out that
   * getMore (it took 1,005-1,025 ms to confirm against 2-16 ms on the Go and Python
   * services, 2026-11-28). A change in the aggregate's own batch resolves it too. */
  async watch(resumeToken) {
    const options = { fullDocument: 'updateLookup' };
    if (resumeToken !== undefined) options.resumeAfter = { _data: resumeToken };
    const stream = this.games.watch([], options);
    let tokened;
    const opened = new Promise((resolve) => { tokened = resolve; stream.once('resumeTokenChanged', resolve); });
    const first = stream.tryNext();
    first.catch(() => {}); // handled where it is awaited; not an unhandled rejection if it never is
    try {
      await Promise.race([first, opened]);
      return { stream, first };
    } catch (err) {
      await stream.close().catch(() => {});
      throw err;
    } finally {
      stream.off('resumeTokenChanged', tokened);
    }
  }

  async health() {
    await guarded(this.client, () => this.client.db('admin').command({ ping: 1 }));
    return null;
  }
}
