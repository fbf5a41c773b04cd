// Public API of `tysandbox/client` under the `browser` export condition: the typed client of the registration protocol
// for pages (connectWindow to an app in a frame, connectHttp to `tycli serve --http`); runs on the client's side.
//
// This file is the complete public surface of the entry: named exports only, no wildcards. It imports no Node built-in
// and no zod (browser/build/client-bundle.mjs bundles it alone into dist/client/browser.js); the Node entry
// (node/client.ts) has the same exports plus connectStdio.
export { connectHttp, connectWindow, type MessageSource } from '../core/registration/connect.js';
export {
  ProtocolClient,
  ProtocolError,
  type ClientOptions,
  type ClientTransport,
  type RunOptions,
} from '../core/registration/client.js';
export {
  REGISTRATION_PROTOCOL,
  REGISTRATION_PROTOCOL_V1,
  REGISTRATION_METHODS,
  REGISTRATION_METHODS_V1,
  type RegistrationMethod,
} from '../protocol/registration-names.js';
export type {
  RegistrationResults,
  InitializeResult,
  ToolRunResult,
  ToolListResult,
  ToolListPage,
  ToolChange,
  ListChangedParams,
  ProgressParams,
  LogParams,
  ParentCallParams,
} from '../protocol/registration.js';
