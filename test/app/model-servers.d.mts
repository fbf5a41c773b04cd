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
}
export interface RecordedRequest {
  path: string;
  headers: Record<string, string | string[] | undefined>;
  body: any;
  /** Why the history was refused with HTTP 400 (the provider's message), when it was. */
  rejected?: string;
}
export function historyError(kind: 'openai' | 'anthropic', body: any): string | undefined;
export interface ScriptedModel {
  url: string;
  origin: string;
  requests: RecordedRequest[];
  close(): Promise<void>;
}
export function startScriptedModel(opts: {
  kind: 'openai' | 'anthropic';
  script: (body: any, n: number, req: RecordedRequest) => ScriptedReply;
}): Promise<ScriptedModel>;
