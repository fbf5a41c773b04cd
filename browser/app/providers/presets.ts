// Connection presets: the URL, API and CORS note for OpenAI, Anthropic, OpenRouter and local servers; browser app,
// trusted side.
import type { ApiKind } from '../models/types.js';

export interface Preset {
  id: string;
  /** The name a new connection gets, and the option's label. */
  label: string;
  api: ApiKind;
  endpoint: string;
  /** Does the service want a key? `none`: a local server without one (a key can still be set). */
  key: 'required' | 'none';
  /** Send images to its models by default (hosted vision models; local models vary: off). */
  images: boolean;
  /** What to run or where to get a key. */
  run: string;
  /**
   * What the service needs so that this page may call it (CORS), with `ORIGIN` standing for the app's origin
   * (docs/app.md has a section per preset).
   */
  cors: string;
}

/** Every preset, in the order the "Preset" menu lists them (docs/app.md "Presets" has one section each). */
export const PRESETS: readonly Preset[] = [
  {
    id: 'openai',
    label: 'OpenAI',
    api: 'openai',
    endpoint: 'https://api.openai.com/v1',
    key: 'required',
    images: true,
    run: 'An API key from platform.openai.com (API keys).',
    cors: "OpenAI's API answers requests from web pages: nothing to set up.",
  },
  {
    id: 'anthropic',
    label: 'Anthropic',
    api: 'anthropic',
    endpoint: 'https://api.anthropic.com',
    key: 'required',
    images: true,
    run: 'An API key from console.anthropic.com (API keys).',
    cors:
      'Anthropic answers a page only when the request carries anthropic-dangerous-direct-browser-access: true, ' +
      'which the app sends.',
  },
  {
    id: 'openrouter',
    label: 'OpenRouter',
    api: 'openai',
    endpoint: 'https://openrouter.ai/api/v1',
    key: 'required',
    images: true,
    run: 'An API key from openrouter.ai (Keys).',
    cors: 'OpenRouter answers requests from web pages: nothing to set up.',
  },
  {
    id: 'ollama',
    label: 'Ollama (local)',
    api: 'openai',
    endpoint: 'http://127.0.0.1:11434/v1',
    key: 'none',
    images: false,
    run: 'ollama serve, and a model with tool support: ollama pull llama3.2',
    cors:
      'Ollama allows pages on 127.0.0.1 and localhost (any port), so tycli app works as is; for another origin start ' +
      'it with OLLAMA_ORIGINS=ORIGIN ollama serve.',
  },
  {
    id: 'llamacpp',
    label: 'llama.cpp server (local)',
    api: 'openai',
    endpoint: 'http://127.0.0.1:8080/v1',
    key: 'none',
    images: false,
    run: 'llama-server -m MODEL.gguf --jinja (--jinja makes it parse tool calls)',
    cors: 'llama-server answers requests from any origin: nothing to set up.',
  },
  {
    id: 'vllm',
    label: 'vLLM (local)',
    api: 'openai',
    endpoint: 'http://127.0.0.1:8000/v1',
    key: 'none',
    images: false,
    run: 'vllm serve MODEL --enable-auto-tool-choice --tool-call-parser PARSER',
    cors: 'vllm serve allows every origin unless told otherwise; to allow only this app add --allowed-origins \'["ORIGIN"]\'.',
  },
  {
    id: 'lmstudio',
    label: 'LM Studio (local)',
    api: 'openai',
    endpoint: 'http://127.0.0.1:1234/v1',
    key: 'none',
    images: false,
    run: "LM Studio's local server (Developer tab, Start server), or lms server start",
    cors: 'Turn on "Enable CORS" in the server settings (or lms server start --cors).',
  },
];

/** A preset by id. */
export function presetById(id: string | undefined): Preset | undefined {
  return PRESETS.find((p) => p.id === id);
}

/** The preset's CORS note with the app's origin in place of ORIGIN. */
export function corsNote(p: Preset, origin: string): string {
  return p.cors.replaceAll('ORIGIN', origin);
}
