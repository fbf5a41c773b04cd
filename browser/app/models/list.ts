// The model list of a connection: GET /v1/models of the OpenAI-compatible APIs and of Anthropic's Models API; browser
// app, trusted side.
import { anthropicHeaders, anthropicUrl } from './anthropic.js';
import { ModelError, joinEndpoint, requestJson, type ApiKind } from './types.js';

/** Most model ids kept from one listing (a server listing more is cut here). */
export const MAX_MODELS = 2000;
/** Most pages of Anthropic's paginated list followed (1000 models each). */
const MAX_PAGES = 5;

export interface ListModelsRequest {
  api: ApiKind;
  endpoint: string;
  /** Sent only in this request's authentication header; empty: none. */
  apiKey: string;
  /** The connection's extra headers (the client's own win). */
  headers?: Record<string, string>;
  signal: AbortSignal;
}

/**
 * The ids in one page of a models list (`{"data": [{"id": ...}]}`, the shape of OpenAI's, OpenRouter's, Ollama's,
 * llama.cpp's, vLLM's, LM Studio's and Anthropic's lists), with Anthropic's pagination fields.
 * @throws ModelError E_MODEL_PROTOCOL when the body has no `data` array
 */
export function parseModelPage(body: unknown): { ids: string[]; hasMore: boolean; lastId?: string } {
  const b = body as { data?: unknown; has_more?: unknown; last_id?: unknown } | null;
  if (!b || typeof b !== 'object' || !Array.isArray(b.data))
    throw new ModelError('the model list has no "data" array', 200, 'E_MODEL_PROTOCOL');
  const ids: string[] = [];
  for (const m of b.data) {
    const id = (m as { id?: unknown } | null)?.id;
    if (typeof id === 'string' && id.length > 0 && id.length <= 200) ids.push(id);
  }
  return {
    ids,
    hasMore: b.has_more === true,
    ...(typeof b.last_id === 'string' ? { lastId: b.last_id } : {}),
  };
}

/**
 * The models a connection offers, sorted and without duplicates (at most MAX_MODELS). OpenAI-compatible APIs: GET
 * `<endpoint>/models` with `Authorization: Bearer <key>` when a key is set
 * (https://platform.openai.com/docs/api-reference/models/list). Anthropic: GET `<base>/v1/models?limit=1000` with
 * `x-api-key`, `anthropic-version` and `anthropic-dangerous-direct-browser-access`, following `has_more` / `after_id`
 * (https://docs.anthropic.com/en/api/models-list).
 * @throws ModelError as requestJson (HTTP status, network or CORS), E_MODEL_PROTOCOL for a body that is not a list
 */
export async function listModels(req: ListModelsRequest): Promise<string[]> {
  const out = new Set<string>();
  const read = async (url: string, headers: Record<string, string>) => {
    const res = await requestJson(url, { accept: 'application/json', ...headers }, undefined, req.signal, req.headers);
    let body: unknown;
    try {
      body = await res.json();
    } catch {
      throw new ModelError('the model list is not JSON', res.status, 'E_MODEL_PROTOCOL');
    }
    return parseModelPage(body);
  };
  if (req.api === 'anthropic') {
    let after: string | undefined;
    for (let page = 0; page < MAX_PAGES; page++) {
      const url = `${anthropicUrl(req.endpoint, '/models')}?limit=1000${after ? `&after_id=${encodeURIComponent(after)}` : ''}`;
      const p = await read(url, anthropicHeaders(req.apiKey));
      for (const id of p.ids) out.add(id);
      if (!p.hasMore || !p.lastId || out.size >= MAX_MODELS) break;
      after = p.lastId;
    }
  } else {
    const p = await read(
      joinEndpoint(req.endpoint, '/models'),
      req.apiKey ? { authorization: `Bearer ${req.apiKey}` } : {},
    );
    for (const id of p.ids) out.add(id);
  }
  return [...out].sort((a, b) => a.localeCompare(b)).slice(0, MAX_MODELS);
}
