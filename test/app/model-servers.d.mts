// Types of the scripted model servers (test/app/model-servers.mjs); test code.
export interface ScriptedCall {
  name: string;
  arguments: object | string;
}
export interface ScriptedReply {
  text?: string;
  toolCalls?: ScriptedCall[];
  /** Keep the stream open after the text until the client goes away. */
  hang?: boolean;
  /** Answer with this HTTP status (the provider's error shape). */
  status?: number;
  /** The Retry-After header value of an error answer (seconds or an HTTP date). */
  retryAfter?: string;
  errorMessage?: string;
  /** Drop the connection after the text, without the stream's end. */
  cut?: boolean;
  /** Stream the text as `tokens` words every `everyMs` ms. */
  pace?: { tokens: number; everyMs: number };
  /** Wait before answering (ms). */
  delayMs?: number;
  /** Report no token usage (a provider that sends none). */
  noUsage?: boolean;
}
export interface RecordedRequest {
  path: string;
  method: 'GET' | 'POST';
  headers: Record<string, string | string[] | undefined>;
  body: any;
  /** Why the request was refused (a history, a format, a key or a model the provider refuses): its message. */
  rejected?: string;
  /** The token usage the peer reported for this request's reply. */
  usage?: { input: number; output: number };
}
export type PeerKind = 'openai' | 'anthropic' | 'openai-responses';
export function historyError(kind: 'openai' | 'anthropic', body: any): string | undefined;
export interface ScriptedModel {
  url: string;
  origin: string;
  requests: RecordedRequest[];
  close(): Promise<void>;
}
export function startScriptedModel(opts: {
  kind: PeerKind;
  script: (body: any, n: number, req: RecordedRequest) => ScriptedReply;
  /** Every request must carry exactly this key in the API's own header (else 401). */
  key?: string;
  /** The models it knows (GET /v1/models lists them; another one gets 404). */
  models?: string[];
  /** More request headers CORS allows. */
  allowHeaders?: string[];
}): Promise<ScriptedModel>;
