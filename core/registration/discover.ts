// The OpenRPC 1.3 document of the registration protocol (`rpc.discover`), generated from the zod schemas in
// protocol/registration.ts with zod 4's JSON Schema output; core, trusted side.
//
// OpenRPC 1.3: https://spec.open-rpc.org/ (service discovery: the method `rpc.discover`). JSON Schema draft-07, as the
// OpenRPC meta-schema references it. The committed copy docs/openrpc.json is compared with this output by
// test/protocol/openrpc.test.ts; `npm run openrpc` writes it again after a schema change.
import { z } from 'zod';
import {
  CANCEL_METHOD,
  CancelParamsSchema,
  DISCOVER_METHOD,
  DiscoverParamsSchema,
  InitializeParamsSchema,
  InitializeResultSchema,
  LIST_CHANGED_METHOD,
  ListChangedParamsSchema,
  LOG_METHOD,
  LogParamsSchema,
  PARENT_CALL_METHOD,
  ParentCallParamsSchema,
  ParentCallResultSchema,
  PROGRESS_METHOD,
  ProgressParamsSchema,
  REGISTRATION_PROTOCOL,
  ToolActivateParamsSchema,
  ToolActivateResultSchema,
  ToolAddParamsSchema,
  ToolAddResultSchema,
  ToolListPageSchema,
  ToolListParamsSchema,
  ToolRemoveParamsSchema,
  ToolRemoveResultSchema,
  ToolRunParamsSchema,
  ToolRunResultSchema,
  ToolShowParamsSchema,
  ToolShowResultSchema,
  ProtocolErrorDataSchema,
} from '../../protocol/registration.js';
import { ToolManifestSchema } from '../../protocol/manifest.js';
import { RPC_CODES } from './rpc.js';

/** The OpenRPC version the document follows. */
export const OPENRPC_VERSION = '1.3.2';

type Json = Record<string, unknown>;

/** A zod schema as draft-07 JSON Schema (the input side: what a client sends and may rely on). */
function schemaOf(s: z.ZodType): Json {
  const j = z.toJSONSchema(s, { target: 'draft-7', io: 'input', unrepresentable: 'any' }) as Json;
  delete j.$schema;
  return j;
}

/** A by-name params list from an object schema (optional or not): one content descriptor per property. */
function paramsOf(s: z.ZodType): Json[] {
  const j = schemaOf(s);
  const obj = (Array.isArray(j.anyOf) ? (j.anyOf as Json[]).find((x) => x.type === 'object') : j) ?? {};
  const props = (obj.properties ?? {}) as Record<string, Json>;
  const required = new Set((obj.required ?? []) as string[]);
  return Object.entries(props).map(([name, schema]) => {
    const { description, ...rest } = schema;
    return {
      name,
      ...(typeof description === 'string' ? { description } : {}),
      required: required.has(name),
      schema: rest,
    };
  });
}

const ERRORS: Json[] = [
  { code: RPC_CODES.PARSE_ERROR, message: 'not JSON', data: { code: 'E_PROTOCOL' } },
  {
    code: RPC_CODES.INVALID_REQUEST,
    message: 'a batch, a request without an id, a bad id, a message over the size cap, a second initialize',
    data: { code: 'E_PROTOCOL' },
  },
  { code: RPC_CODES.METHOD_NOT_FOUND, message: 'unknown method', data: { code: 'E_PROTOCOL' } },
  { code: RPC_CODES.INVALID_PARAMS, message: "params do not match the method's schema", data: { code: 'E_USAGE' } },
  { code: RPC_CODES.NOT_INITIALIZED, message: 'a method before initialize', data: { code: 'E_PROTOCOL' } },
  {
    code: RPC_CODES.SERVER_ERROR,
    message: 'a refusal or failure; data.code is the stable code (docs/errors.md)',
  },
];

interface MethodSpec {
  name: string;
  summary: string;
  since: '1' | '1.1';
  params: z.ZodType;
  result?: { name: string; schema: z.ZodType | Json };
  /** Params whose schema is a component (the protocol schema leaves them open: the host checks them itself). */
  refs?: Record<string, string>;
}

const METHODS: MethodSpec[] = [
  {
    name: 'initialize',
    summary: 'The first request on every connection: settles the version, the principal and the capabilities.',
    since: '1',
    params: InitializeParamsSchema,
    result: { name: 'initializeResult', schema: InitializeResultSchema },
  },
  {
    name: 'tool/add',
    summary: 'Store a tool revision (the manifest with its source inlined); a new name is activated.',
    since: '1',
    params: ToolAddParamsSchema,
    result: { name: 'toolAddResult', schema: ToolAddResultSchema },
    refs: { manifest: '#/components/schemas/ToolManifest' },
  },
  {
    name: 'tool/list',
    summary: 'One page of the tools, sorted by name (1.1; a 1.0 connection gets every tool as an array).',
    since: '1',
    params: ToolListParamsSchema,
    result: { name: 'toolListPage', schema: ToolListPageSchema },
  },
  {
    name: 'tool/show',
    summary: 'One revision and its manifest.',
    since: '1',
    params: ToolShowParamsSchema,
    result: { name: 'toolShowResult', schema: ToolShowResultSchema },
  },
  {
    name: 'tool/activate',
    summary: 'Bind a name to an installed revision (moving an active binding asks a person).',
    since: '1',
    params: ToolActivateParamsSchema,
    result: { name: 'toolActivateResult', schema: ToolActivateResultSchema },
  },
  {
    name: 'tool/remove',
    summary: "Remove a name's binding (asks a person); stored revisions stay.",
    since: '1',
    params: ToolRemoveParamsSchema,
    result: { name: 'toolRemoveResult', schema: ToolRemoveResultSchema },
  },
  {
    name: 'tool/run',
    summary: 'Run one call through the gate and a sandbox; $/progress and $/log carry its id meanwhile.',
    since: '1',
    params: ToolRunParamsSchema,
    result: { name: 'toolRunResult', schema: ToolRunResultSchema },
  },
  {
    name: DISCOVER_METHOD,
    summary: 'This document (OpenRPC service discovery); answered before initialize too.',
    since: '1.1',
    params: DiscoverParamsSchema,
    result: { name: 'openrpcDocument', schema: { $ref: 'https://meta.open-rpc.org/' } },
  },
  {
    name: CANCEL_METHOD,
    summary: 'Notification (no id, no answer): cancel the run with request id `id`; it then fails with E_ABORTED.',
    since: '1',
    params: CancelParamsSchema,
  },
];

/** Server -> client messages, in the extension `x-notifications` (OpenRPC describes a server's methods only). */
const FROM_SERVER: MethodSpec[] = [
  {
    name: PROGRESS_METHOD,
    summary: 'Where a tool/run is: 1.0 resolved, done; 1.1 queued, started, progress, done with its outcome.',
    since: '1',
    params: ProgressParamsSchema,
  },
  {
    name: LOG_METHOD,
    summary: 'A line the tool wrote with console.* during the run (raw text: render it inert).',
    since: '1',
    params: LogParamsSchema,
  },
  {
    name: LIST_CHANGED_METHOD,
    summary: 'The tools changed (added, activated, removed by anyone sharing the store); to connections that asked.',
    since: '1.1',
    params: ListChangedParamsSchema,
  },
  {
    name: PARENT_CALL_METHOD,
    summary: 'Request from the browser host to its embedding page: run a tool the page executes itself.',
    since: '1',
    params: ParentCallParamsSchema,
    result: { name: 'parentCallResult', schema: ParentCallResultSchema },
  },
];

function methodObject(m: MethodSpec, withErrors: boolean): Json {
  const params = paramsOf(m.params).map((p) =>
    m.refs?.[p.name as string] ? { ...p, schema: { $ref: m.refs[p.name as string] } } : p,
  );
  const out: Json = { name: m.name, summary: m.summary, paramStructure: 'by-name', params };
  if (m.result) {
    const s = m.result.schema;
    out.result = { name: m.result.name, schema: s instanceof z.ZodType ? schemaOf(s) : s };
  }
  if (withErrors && m.name !== CANCEL_METHOD) out.errors = ERRORS;
  out['x-since'] = `tysandbox/${m.since}`;
  return out;
}

let cached: Json | undefined;

/**
 * The OpenRPC 1.3 document of tysandbox/1.1 (backward compatible with 1.0: `x-since` names the version that added each
 * method). Deterministic: the same schemas give the same document, key for key. `components.schemas` holds the tool
 * manifest (the `manifest` param of tool/add) and the `error.data` every refusal carries.
 * @returns a fresh deep copy (callers may change it).
 */
export function openRpcDocument(): Json {
  cached ??= {
    openrpc: OPENRPC_VERSION,
    info: {
      title: 'tysandbox registration protocol',
      version: REGISTRATION_PROTOCOL.slice('tysandbox/'.length),
      description:
        'Register, activate, list, run and remove sandboxed tool revisions over JSON-RPC 2.0 (docs/protocol.md). ' +
        'Transports: stdio NDJSON and HTTP (a host serving the protocol), postMessage (an app embedded in a page).',
      license: { name: 'MIT' },
    },
    methods: METHODS.map((m) => methodObject(m, true)),
    components: {
      schemas: {
        ToolManifest: schemaOf(ToolManifestSchema),
        ProtocolErrorData: schemaOf(ProtocolErrorDataSchema),
      },
    },
    'x-notifications': FROM_SERVER.map((m) => methodObject(m, false)),
  };
  return JSON.parse(JSON.stringify(cached)) as Json;
}
