// GraphQL over HTTP: graphql-yoga on Node's http server (its http2 server for
// LAB_HTTP=h2 or h2c, lab/axes.py: env.js createHttpServer), the schema read from
// contract/schema.graphql, field names as the dataset's.
//
// POST /graphql with {"query", "variables", "operationName"}. The body is read
// under the contract's limit (413 RESOURCE_EXHAUSTED, after draining it) and
// parsed here, then handed to yoga. As services/graphql/python_graphene: every
// error carries extensions.code from the contract's table (yoga's and
// graphql-js's own codes become INVALID_ARGUMENT, a masked one INTERNAL); a
// request that never executed (parse, validation, variable coercion) answers
// 400 without data, an executed one 200 with data.
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { GraphQLError, getOperationAST, parse as parseDocument } from 'graphql';
import { createSchema, createYoga } from 'graphql-yoga';
import { readBody } from '../../common/node/body.js';
import {
  ContractError, ERRORS, asContractError, checkResponseSize, invalid,
} from '../../common/node/contract.js';
import { sendWhole } from '../../common/node/compression.js';
import { HOST, PORT, createHttpServer, noDelay, listen, onStop } from '../../common/node/env.js';
import { dumps, parse } from '../../common/node/json.js';
import { Store } from '../../common/node/store.js';

const SCHEMA = fileURLToPath(new URL('../../../contract/schema.graphql', import.meta.url));
const store = new Store();

// A resolver whose contract errors reach the client as GraphQL errors with extensions.code.
const resolver = (fn) => async (root, args) => {
  try {
    return await fn(args);
  } catch (err) {
    if (!(err instanceof ContractError)) console.error(err);
    const e = asContractError(err);
    throw new GraphQLError(e.message, { extensions: { code: e.code } });
  }
};

// graphql-js hands input objects over with a null prototype; only
// is_kernel_ac, being nullable, may be left out in GraphQL: it reads as null.
const gameInput = (game) => ({ ...game, is_kernel_ac: game.is_kernel_ac ?? null });

const schema = createSchema({
  typeDefs: readFileSync(SCHEMA, 'utf8'),
  resolvers: {
    Query: {
      game: resolver(({ id }) => store.get(id)),
      games: resolver(({ limit, offset }) => store.list(limit, offset)),
      health: resolver(async () => { await store.health(); return true; }),
    },
    Mutation: {
      create_game: resolver(({ game }) => store.create(gameInput(game))),
      update_game: resolver(({ id, game }) => store.update(id, gameInput(game))),
      delete_game: resolver(async ({ id }) => { await store.delete(id); return true; }),
    },
  },
});

function contractCode(error) {
  const code = error.extensions?.code;
  if (code in ERRORS) return code;
  return code === 'INTERNAL_SERVER_ERROR' ? 'INTERNAL' : 'INVALID_ARGUMENT';
}

const contractErrors = {
  // The body was read and checked already: yoga takes the parameters from here.
  onRequestParse({ serverContext, setRequestParser }) {
    if (serverContext.params) setRequestParser(() => serverContext.params);
  },
  onResultProcess({ result, setResult }) {
    if (Array.isArray(result) || !result?.errors?.length) return;
    const executed = result.errors.some((e) => e.path !== undefined);
    setResult({
      ...result,
      errors: result.errors.map((error) => new GraphQLError(error.message, {
        nodes: error.nodes, source: error.source, positions: error.positions, path: error.path,
        originalError: error.originalError,
        extensions: { ...error.extensions, code: contractCode(error), http: { status: executed ? 200 : 400 } },
      })),
    });
  },
};

const yoga = createYoga({
  schema, graphqlEndpoint: '/graphql', logging: false, landingPage: false, graphiql: false,
  batching: false, plugins: [contractErrors],
});

// GraphQL over HTTP: the reply's media type by Accept, as python_graphene:
// application/graphql-response+json when the client names it (and prefers it at
// least as much as JSON), else application/json (also for no Accept or */*);
// null when Accept allows neither (406).
const JSON_TYPE = 'application/json';
const GRAPHQL_RESPONSE = 'application/graphql-response+json';

function mediaType(req) {
  const header = req.headers.accept;
  if (!header) return JSON_TYPE;
  const ranges = header.split(',').map((part) => {
    const [type, ...options] = part.trim().toLowerCase().split(';');
    const q = options.map((o) => o.trim()).find((o) => o.startsWith('q='));
    return { type: type.trim(), q: q ? Number.parseFloat(q.slice(2)) || 0 : 1 };
  });
  const quality = (type) => {
    const [major] = type.split('/');
    let best = { specificity: -1, q: 0 };
    for (const r of ranges) {
      const specificity = r.type === type ? 2 : r.type === `${major}/*` ? 1 : r.type === '*/*' ? 0 : -1;
      if (specificity > best.specificity) best = { specificity, q: r.q };
    }
    return best.q;
  };
  const named = ranges.some((r) => r.type === GRAPHQL_RESPONSE);
  if (named && quality(GRAPHQL_RESPONSE) > 0 && quality(GRAPHQL_RESPONSE) >= quality(JSON_TYPE)) return GRAPHQL_RESPONSE;
  if (quality(JSON_TYPE) > 0) return JSON_TYPE;
  return quality(GRAPHQL_RESPONSE) > 0 ? GRAPHQL_RESPONSE : null;
}

// Gzip-compressed when LAB_COMPRESSION=gzip and the request asks for it (common/node/compression.js).
function respond(res, status, body, headers = {}) {
  sendWhole(res, status, { ...headers, 'Content-Type': mediaType(res.req) ?? JSON_TYPE }, dumps(body));
}

const fail = (res, code, message, status = ERRORS[code].http, headers = {}) => respond(res, status, {
  errors: [{ message, extensions: { code } }],
}, headers);

class Refused extends Error {
  constructor(message, status, headers = {}) {
    super(message);
    this.status = status;
    this.headers = headers;
  }
}

// GET: query, operationName and variables (a JSON object) from the query string.
function getParams(req) {
  const search = new URL(req.url, 'http://lab').searchParams;
  const body = { query: search.get('query') ?? undefined, operationName: search.get('operationName') ?? undefined };
  if (search.has('variables')) {
    try {
      body.variables = parse(Buffer.from(search.get('variables'), 'utf8'));
    } catch (err) {
      throw invalid(`malformed JSON in 'variables': ${err.message}`);
    }
  }
  return body;
}

// A mutation (or subscription) needs POST: 405 with Allow: POST.
function refuseMutationOverGet({ query, operationName }) {
  let document;
  try {
    document = parseDocument(query);
  } catch {
    return; // execution reports the syntax error as usual
  }
  const operation = getOperationAST(document, operationName);
  if (operation && operation.operation !== 'query') {
    throw new Refused(`a ${operation.operation} needs POST`, 405, { Allow: 'POST' });
  }
}

// Python's `body.get("variables") or {}`: any falsy value means no variables.
const falsy = (v) => !v || (Array.isArray(v) && v.length === 0)
  || (typeof v === 'object' && Object.keys(v).length === 0);

function params(body) {
  if (body === null || typeof body !== 'object' || Array.isArray(body) || typeof body.query !== 'string') {
    throw invalid("the body must be an object with a string 'query'");
  }
  const variables = falsy(body.variables) ? {} : body.variables;
  if (typeof variables !== 'object' || Array.isArray(variables)) throw invalid("'variables' must be an object");
  const operationName = body.operationName ?? undefined;
  if (operationName !== undefined && typeof operationName !== 'string') {
    throw invalid("'operationName' must be a string");
  }
  return { query: body.query, variables, operationName };
}

// yoga is given the parameters through the server context (contractErrors.onRequestParse).
const URL_OF_GRAPHQL = `http://${HOST}:${PORT}/graphql`;
const JSON_HEADERS = { 'content-type': 'application/json', accept: 'application/json' };

async function graphql(req, res) {
  let request;
  try {
    if (req.method === 'GET') {
      request = params(getParams(req));
      refuseMutationOverGet(request);
    } else {
      const declared = Number.parseInt(req.headers['content-length'] ?? '', 10);
      const body = await readBody(req, declared); // read whole first: the connection stays usable
      const mimetype = (req.headers['content-type'] ?? '').split(';')[0].trim().toLowerCase();
      if (mimetype !== JSON_TYPE) {
        throw new Refused(`a GraphQL POST must have Content-Type application/json, not '${mimetype || 'none'}'`, 415);
      }
      request = params(parse(body));
    }
  } catch (err) {
    if (err instanceof Refused) {
      fail(res, 'INVALID_ARGUMENT', err.message, err.status, err.headers);
      return;
    }
    const e = asContractError(err);
    fail(res, e.code, e.message);
    return;
  }
  const response = await yoga.fetch(URL_OF_GRAPHQL, { method: 'POST', headers: JSON_HEADERS }, { params: request });
  const text = await response.text();
  const size = Buffer.byteLength(text);
  try {
    checkResponseSize(size); // as python_graphene: the whole answer over the limit is RESOURCE_EXHAUSTED
  } catch (err) {
    fail(res, err.code, err.message);
    return;
  }
  sendWhole(res, response.status, { 'Content-Type': mediaType(req) ?? JSON_TYPE }, text);
}

async function health(res) {
  try {
    await store.health();
    respond(res, 200, { status: 'ok' });
  } catch (err) {
    const e = asContractError(err);
    fail(res, e.code, e.message);
  }
}

const server = noDelay(createHttpServer({ keepAliveTimeout: 75_000 }, (req, res) => {
  const path = req.url.split('?')[0];
  const route = `${req.method} ${path}`;
  let handled;
  if (path === '/graphql' && mediaType(req) === null) {
    handled = fail(res, 'INVALID_ARGUMENT', `Accept must allow ${GRAPHQL_RESPONSE} or ${JSON_TYPE}`, 406);
  } else if (route === 'POST /graphql' || route === 'GET /graphql') handled = graphql(req, res);
  else if (route === 'GET /health') handled = health(res);
  else if (path === '/graphql' || path === '/health') {
    handled = fail(res, 'INVALID_ARGUMENT', `method ${req.method} not allowed`, 405,
      { Allow: path === '/graphql' ? 'GET, POST' : 'GET' });
  }
  else handled = fail(res, 'NOT_FOUND', `no route ${route}`);
  Promise.resolve(handled).catch((err) => {
    console.error(err);
    if (!res.headersSent) fail(res, 'INTERNAL', String(err?.message ?? err));
    else res.destroy();
  });
}));
listen(server);
onStop(() => new Promise((resolve) => {
  server.close(() => store.close().finally(resolve));
  server.closeIdleConnections?.(); // node:http's; an HTTP/2 server's sessions end with the process (env.js onStop)
}));
