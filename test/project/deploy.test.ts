// The deployment files hold together: the Containerfile and the Kubernetes manifests parsed and checked for replicas,
// probes, limits, secret references and the command lines they run (no container engine runs the image here); test
// side.
import { describe, expect, it } from 'vitest';
import { readFileSync, readdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { parseAllDocuments } from 'yaml';

const ROOT = resolve(import.meta.dirname, '..', '..');
const DEPLOY = join(ROOT, 'docs', 'deploy');
const K8S = join(DEPLOY, 'kubernetes');

/** A parsed manifest: checked field by field below. */
type Doc = any;
const docs: Doc[] = readdirSync(K8S)
  .filter((f) => f.endsWith('.yaml'))
  .flatMap((f) =>
    parseAllDocuments(readFileSync(join(K8S, f), 'utf8')).map((d) => {
      expect(d.errors, f).toEqual([]);
      return Object.assign(d.toJS({ maxAliasCount: 100 }) as Doc, { __file: f });
    }),
  );
const byKind = (kind: string): Doc[] => docs.filter((d) => d.kind === kind);
const one = (kind: string): Doc => {
  const all = byKind(kind);
  expect(all, kind).toHaveLength(1);
  return all[0];
};

describe('Kubernetes manifests', () => {
  const deployment = one('Deployment');
  const pod = deployment.spec.template.spec;
  const secret = one('Secret');

  it('every file parses, names its kind and is listed in the kustomization', () => {
    const kustomization = docs.find((d) => d.kind === 'Kustomization');
    const files = new Set(docs.filter((d) => d.kind !== 'Kustomization').map((d) => d.__file));
    expect(new Set(kustomization.resources)).toEqual(files);
    for (const d of docs) expect(d.apiVersion, d.__file).toBeTruthy();
  });

  it('several replicas, rolled one at a time, spread over nodes, kept by a disruption budget', () => {
    expect(deployment.spec.replicas).toBeGreaterThanOrEqual(2);
    expect(deployment.spec.strategy.rollingUpdate.maxUnavailable).toBe(0);
    expect(pod.topologySpreadConstraints[0].topologyKey).toBe('kubernetes.io/hostname');
    const pdb = one('PodDisruptionBudget');
    expect(pdb.spec.minAvailable).toBeLessThan(deployment.spec.replicas);
    expect(pdb.spec.selector.matchLabels).toEqual(deployment.spec.selector.matchLabels);
  });

  it('each container: liveness on /healthz, readiness on /readyz, a startup probe, on its own port', () => {
    for (const c of pod.containers) {
      const port = c.ports[0].containerPort;
      expect(c.livenessProbe.httpGet).toEqual({ path: '/healthz', port });
      expect(c.readinessProbe.httpGet).toEqual({ path: '/readyz', port });
      expect(c.startupProbe.httpGet.path).toBe('/healthz');
      const http = c.args[c.args.indexOf('--http') + 1];
      expect(http).toBe(`0.0.0.0:${port}`);
    }
  });

  it('each container: CPU, memory and ephemeral-storage requests and limits, and a memory budget below the limit', () => {
    const mib = (v: string) => Number.parseInt(v, 10) * (v.endsWith('Gi') ? 1024 : 1);
    for (const c of [...pod.containers, ...one('Job').spec.template.spec.containers]) {
      for (const k of ['cpu', 'memory']) {
        expect(c.resources.requests[k], `${c.name} requests.${k}`).toBeTruthy();
        expect(c.resources.limits[k], `${c.name} limits.${k}`).toBeTruthy();
      }
    }
    for (const c of pod.containers) {
      expect(c.resources.limits['ephemeral-storage']).toBeTruthy();
      const budget = Number(c.env.find((e: Doc) => e.name === 'TYCLI_MEMORY_BUDGET_MB').value);
      expect(budget).toBeLessThan(mib(c.resources.limits.memory));
    }
  });

  it('the database URL and the store key come from the Secret, by keys it has; the key is a file, never an env value', () => {
    const keys = new Set(Object.keys(secret.stringData ?? secret.data));
    for (const c of [...pod.containers, ...one('Job').spec.template.spec.containers]) {
      const store = c.env.find((e: Doc) => e.name === 'TYCLI_STORE');
      expect(store.valueFrom.secretKeyRef.name).toBe(secret.metadata.name);
      expect(keys.has(store.valueFrom.secretKeyRef.key)).toBe(true);
      expect(c.env.some((e: Doc) => e.name === 'TYCLI_STORE_KEY' || (/KEY$/.test(e.name) && e.valueFrom))).toBe(false);
    }
    for (const c of pod.containers) {
      const keyFile = c.env.find((e: Doc) => e.name === 'TYCLI_STORE_KEY_FILE').value as string;
      const mount = c.volumeMounts.find((m: Doc) => keyFile.startsWith(`${m.mountPath}/`));
      const vol = pod.volumes.find((v: Doc) => v.name === mount.name);
      expect(vol.secret.secretName).toBe(secret.metadata.name);
      expect(keys.has(vol.secret.items[0].key)).toBe(true);
      expect(`${mount.mountPath}/${vol.secret.items[0].path}`).toBe(keyFile);
      // readable by the owner (root) and the pod's fsGroup only (node/store/postgres/secrets.ts loadStoreKey)
      expect(vol.secret.defaultMode & 0o007).toBe(0);
      expect(mount.readOnly).toBe(true);
    }
  });

  it('beyond loopback: every server runs --behind-proxy (TLS at the ingress) or with --tls-cert/--tls-key', () => {
    for (const c of pod.containers)
      expect(c.args.includes('--behind-proxy') || (c.args.includes('--tls-cert') && c.args.includes('--tls-key'))).toBe(
        true,
      );
  });

  it('non-root, no privilege escalation, no capabilities, read-only root; what bubblewrap needs is set and said', () => {
    expect(pod.securityContext.runAsNonRoot).toBe(true);
    expect(pod.securityContext.runAsUser).toBeGreaterThan(0);
    expect(pod.hostUsers).toBe(false);
    expect(pod.automountServiceAccountToken).toBe(false);
    for (const c of pod.containers) {
      expect(c.securityContext.allowPrivilegeEscalation).toBe(false);
      expect(c.securityContext.readOnlyRootFilesystem).toBe(true);
      expect(c.securityContext.capabilities.drop).toEqual(['ALL']);
      expect(c.securityContext.procMount).toBe('Unmasked');
      expect(c.args).toEqual(expect.arrayContaining(['--sandbox', 'required']));
    }
    const doc = readFileSync(join(ROOT, 'docs', 'deploy.md'), 'utf8');
    for (const needed of ['hostUsers', 'procMount', 'seccomp', 'RuntimeClass', 'gVisor', 'Kata'])
      expect(doc, needed).toContain(needed);
  });

  it('the Service targets the named container ports; the migration Job runs tycli store migrate', () => {
    const svc = one('Service');
    const names = new Set(pod.containers.flatMap((c: Doc) => c.ports.map((p: Doc) => p.name)));
    for (const p of svc.spec.ports) expect(names.has(p.targetPort)).toBe(true);
    expect(svc.spec.selector).toEqual(deployment.spec.selector.matchLabels);
    expect(one('Job').spec.template.spec.containers[0].args).toEqual(['store', 'migrate']);
  });

  it('the settings ConfigMap is valid JSON mounted as the settings file', () => {
    const cm = one('ConfigMap');
    const settings = JSON.parse(cm.data['settings.json']);
    expect(settings.sandbox).toBe('required');
    const mount = pod.containers[0].volumeMounts.find((m: Doc) => m.subPath === 'settings.json');
    expect(mount.mountPath).toBe('/var/lib/tycli/config/settings.json');
  });
});

describe('Containerfile', () => {
  const text = readFileSync(join(DEPLOY, 'Containerfile'), 'utf8');
  const lines = text.split('\n').filter((l) => l.trim() && !l.trim().startsWith('#'));
  it('builds in one stage and runs as a non-root user in another, with bubblewrap and an init', () => {
    const from = lines.filter((l) => l.startsWith('FROM '));
    expect(from).toHaveLength(2);
    const node = readFileSync(join(ROOT, '.nvmrc'), 'utf8').trim();
    for (const f of from) expect(f).toContain(`node:${node}-`);
    expect(text).toMatch(/apt-get install[^\n]*bubblewrap/);
    expect(text).toContain('tini');
    const user = lines.filter((l) => l.startsWith('USER '));
    expect(user.at(-1)).toMatch(/^USER [1-9]\d*/);
    expect(lines.findIndex((l) => l.startsWith('USER '))).toBeGreaterThan(
      lines.findIndex((l) => /^FROM .*slim$/.test(l)),
    );
  });
  it('its entry point is tycli and the default command serves MCP beyond loopback behind a proxy', () => {
    const entry = JSON.parse(lines.find((l) => l.startsWith('ENTRYPOINT '))!.slice(11));
    expect(entry.slice(-2)).toEqual(['node', '/app/bin/tycli.mjs']);
    const cmd = JSON.parse(lines.find((l) => l.startsWith('CMD '))!.slice(4));
    expect(cmd).toEqual(['mcp', 'serve', '--http', '0.0.0.0:8080', '--behind-proxy']);
  });
});
