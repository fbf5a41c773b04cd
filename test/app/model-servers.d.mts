// Types of the scripted model servers (test/app/model-servers.mjs); test code.
export interface ScriptedCall {
  name: string;
  arguments: object | string;
}
export interface ScriptedReply {
  text?: string;
  toolCalls?: ScriptedCall[];
  hang?: boolean;
  status?: number;
}
export interface RecordedRequest {
  path: string;
  headers: Record<string, string | string[] | undefined>;
  body: any;
}
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
