// The command line's McpDefinitionSource: definitions and namespaces as 0600 files of the settings folder, watched with
// fs.watch; Node host, trusted side.
import type { McpDefinitionSource } from '../../core/mcp/server-definition.js';
import { fingerprint, listDefinitions, loadDefinition, loadDefinitionSync } from './definitions.js';
import { listNamespaces, loadNamespace } from './namespaces.js';
import { watchDefinitions } from './definition-watch.js';

/**
 * Definitions under `<home>/config/mcp`, namespaces under `<home>/config/mcp-namespaces`, each read again on every
 * call.
 */
export function fileDefinitionSource(home: string): McpDefinitionSource {
  return {
    list: () => listDefinitions(home),
    load: (name) => loadDefinition(home, name),
    loadSync: (name) => loadDefinitionSync(home, name),
    fingerprint,
    listNamespaces: () => listNamespaces(home),
    loadNamespace: (name) => loadNamespace(home, name),
    watch: (changed, opts) => watchDefinitions(home, changed, opts.only !== undefined ? { only: opts.only } : {}),
  };
}
