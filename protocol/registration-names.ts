// The registration protocol's names without their schemas (versions, methods, notifications, paging bounds): what the
// typed client imports, so a browser build of it loads no zod; pure data, crosses every client boundary.

/** The first version of the protocol; a client naming it gets exactly the 1.0 wire (tool/list an array, ...). */
export const REGISTRATION_PROTOCOL_V1 = 'tysandbox/1' as const;
/**
 * The current version: 1.0 plus `tool/listChanged` notifications, `rpc.discover`, `tool/list` pages and `$/progress`
 * stages. Backward compatible: a server speaks both and `initialize` settles which one a connection uses.
 */
export const REGISTRATION_PROTOCOL = 'tysandbox/1.1' as const;
/** Every version a server of this build speaks, oldest first. */
export const SUPPORTED_PROTOCOLS: readonly string[] = [REGISTRATION_PROTOCOL_V1, REGISTRATION_PROTOCOL];
/** A version string a client may name: `tysandbox/MAJOR` or `tysandbox/MAJOR.MINOR`. */
export const PROTOCOL_VERSION_RE = /^tysandbox\/([0-9]{1,4})(?:\.([0-9]{1,4}))?$/;

/** The request methods of tysandbox/1, in the order `initialize` lists them. Names are fixed: clients rely on them. */
export const REGISTRATION_METHODS_V1 = [
  'initialize',
  'tool/add',
  'tool/list',
  'tool/show',
  'tool/activate',
  'tool/remove',
  'tool/run',
] as const;
/** OpenRPC service discovery (https://spec.open-rpc.org/#service-discovery-method): the protocol's own description. */
export const DISCOVER_METHOD = 'rpc.discover' as const;
/** The request methods of tysandbox/1.1: those of 1.0 and `rpc.discover`. */
export const REGISTRATION_METHODS = [...REGISTRATION_METHODS_V1, DISCOVER_METHOD] as const;
export type RegistrationMethod = (typeof REGISTRATION_METHODS)[number];

/** The only notification a client may send (every other id-less message is refused). */
export const CANCEL_METHOD = '$/cancel' as const;
/** Notifications a server sends during a `tool/run`; each carries the request's `id`. */
export const PROGRESS_METHOD = '$/progress' as const;
export const LOG_METHOD = '$/log' as const;
/** 1.1: the tools changed (added, activated, removed by anyone sharing the store); only to sessions that asked. */
export const LIST_CHANGED_METHOD = 'tool/listChanged' as const;
/** The request the browser host sends to its embedding page to run a tool the page executes itself. */
export const PARENT_CALL_METHOD = 'tool/call' as const;

/** `tool/list` page size when the client names none, and the largest it may ask for (entries). */
export const TOOL_LIST_PAGE = 100;
export const TOOL_LIST_MAX_PAGE = 500;
/** `$/progress` with stage `progress`: at most one per run per this many ms (the rest coalesced to the latest). */
export const PROGRESS_INTERVAL_MS = 100;
/** Longest `message` of a progress report, characters (longer ones are cut). */
export const PROGRESS_MESSAGE_MAX = 200;
