// Types of test/browser/mcp-http-fixture.mjs; test code.
export interface McpFixture {
  url: string;
  origin: string;
  /** Tool names called, in order. */
  calls: string[];
  /** The Authorization header of every POST. */
  authSeen: (string | undefined)[];
  close(): Promise<void>;
}
export declare const FIXTURE_TOOLS: {
  name: string;
  description: string;
  inputSchema: Record<string, unknown>;
  annotations?: Record<string, unknown>;
}[];
export declare function startMcpFixture(opts?: {
  cors?: 'allow' | 'refuse';
  token?: string;
  json?: boolean;
  elicit?: boolean;
}): Promise<McpFixture>;
export declare function closedUrl(): Promise<string>;
