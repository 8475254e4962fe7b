import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { collectDefaultMetrics, Registry } from 'prom-client';
import { parse } from 'yaml';
import { loadConfig } from '../../src/config/app-config.js';
import {
  DEPLOY,
  key,
  KubernetesObject,
  KUSTOMIZATION,
  kustomizeBuild,
  Manifest,
  manifests,
  ROOT,
  schemaProblems,
  unknownFields,
  yamlFiles,
} from './kubernetes-manifests.js';
import { alertExpressions, dashboard, dashboardExpressions, metricNames, usedMetrics } from './monitoring.js';
import { readEnvExample } from './env-example.js';

const KUBERNETES = join(DEPLOY, 'kubernetes');
const NAME = 'tax-document-gateway';

const all = manifests();
const objects = all.filter((m) => key(m.object) !== KUSTOMIZATION);
const kustomizations = all.filter((m) => key(m.object) === KUSTOMIZATION);
const find = (source: string, kind: string) => {
  const found = objects.find((m) => m.source.startsWith(`deploy/kubernetes/${source}#`) && m.object.kind === kind);
  if (!found) throw new Error(`no ${kind} in deploy/kubernetes/${source}`);
  return found.object as KubernetesObject & { spec: any; data?: Record<string, string>; stringData?: Record<string, string> };
};

const deployment = find('deployment.yaml', 'Deployment');
const podSpec = deployment.spec.template.spec;
const container = podSpec.containers[0];
const podLabels: Record<string, string> = deployment.spec.template.metadata.labels;
const configMap = find('configmap.yaml', 'ConfigMap');
const job = find('migrations/job.yaml', 'Job');
const matches = (selector: Record<string, string>, labels: Record<string, string>) => Object.entries(selector).every(([k, v]) => labels[k] === v);

/** The metrics the gateway exports today, prom-client's default ones included (read from prom-client itself). */
function exportedToday(): Set<string> {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  const defaults = registry.getMetricsAsArray().map((m) => ({ name: m.name, type: String(m.type) }));
  const own = [
    { name: 'http_requests_total', type: 'counter' },
    { name: 'http_request_duration_seconds', type: 'histogram' },
    { name: 'outbound_webhook_attempts_total', type: 'counter' },
    { name: 'outbound_webhook_attempt_duration_seconds', type: 'histogram' },
    { name: 'outbound_webhook_queue_depth', type: 'gauge' },
    { name: 'outbound_webhook_oldest_due_age_seconds', type: 'gauge' },
    { name: 'retention_purged_rows_total', type: 'counter' },
  ];
  return new Set([...defaults, ...own].flatMap(({ name, type }) => (type === 'histogram' ? [name, `${name}_bucket`, `${name}_sum`, `${name}_count`] : [name])));
}

/**
 * Metrics of docs/operations.md that the alerts and the dashboard use before the gateway exports them.
 * test/e2e/deploy-metrics.e2e-spec.ts checks every used name against a running gateway's /metrics.
 */
const ANNOUNCED_METRICS = [
  'gateway_ready',
  'database_unavailable_total',
  'db_pool_connections',
  'db_pool_max_connections',
  'db_pool_waiting_requests',
  'rate_limit_shared_store_up',
  'retention_purged_rows_total',
  'bank_webhook_events_total',
  'archive_entries_total',
  'archive_seal_lag_seconds',
  'archive_tree_size',
  'archive_verification_failures_total',
];

describe('deploy/kubernetes: every manifest against the Kubernetes schemas', () => {
  it('parses every document of every YAML file, each with apiVersion, kind and a name', () => {
    expect(objects.length).toBeGreaterThan(15);
    const incomplete = all.filter(({ object }) => !object?.apiVersion || !object.kind || (key(object) !== KUSTOMIZATION && !object.metadata?.name));
    expect(incomplete.map((m) => m.source)).toEqual([]);
  });

  it("validates every object against its kind's schema (Kubernetes, prometheus-operator, CloudNativePG)", () => {
    const problems = objects.flatMap(({ source, object }) => schemaProblems(object).map((p) => `${source} (${key(object)}): ${p}`));
    expect(problems).toEqual([]);
  });

  it('has no field its kind does not have (what strict field validation refuses)', () => {
    expect(unknownFields(objects)).toEqual([]);
  });

  it('leaves the count of a workload an autoscaler scales to the autoscaler: no `replicas` that each `kubectl apply` would reset it to', () => {
    const scaled = objects
      .filter(({ object }) => object.kind === 'HorizontalPodAutoscaler')
      .map(({ object }) => (object as KubernetesObject & { spec: any }).spec.scaleTargetRef);
    expect(scaled.length).toBeGreaterThan(0);
    const targets = objects.filter(({ object }) =>
      scaled.some(
        (ref: { apiVersion: string; kind: string; name: string }) =>
          ref.apiVersion === object.apiVersion && ref.kind === object.kind && ref.name === object.metadata?.name,
      ),
    );
    expect(targets.map(({ source }) => source)).toContainEqual(expect.stringMatching(/^deploy\/kubernetes\/deployment\.yaml#/));
    expect(
      targets.filter(({ object }) => (object as KubernetesObject & { spec: { replicas?: number } }).spec.replicas !== undefined).map(({ source }) => source),
    ).toEqual([]);
  });

  it('lists in its kustomizations every file that exists, and every manifest but the Secret template and the examples', () => {
    const listed = kustomizations.flatMap(({ source, object }) => {
      const dir = join(ROOT, dirname(source.split('#')[0]));
      const files = [...((object.resources as string[]) ?? []), ...((object.configMapGenerator as { files: string[] }[]) ?? []).flatMap((g) => g.files)];
      return files.map((file) => join(dir, file));
    });
    expect(listed.filter((path) => !existsSync(path)).map((path) => relative(ROOT, path))).toEqual([]);
    const unlisted = yamlFiles(KUBERNETES)
      .filter((file) => !/kustomization\.yaml$|secret\.example\.yaml$/.test(file) && !relative(KUBERNETES, file).startsWith('examples'))
      .filter((file) => !listed.includes(file));
    expect(unlisted.map((file) => relative(ROOT, file))).toEqual([]);
  });

  const kubectlRequired = process.env.CI === 'true';
  it('builds every kustomization with `kubectl kustomize`, and what it builds validates too', () => {
    const dirs = kustomizations.map((m) => join(ROOT, dirname(m.source.split('#')[0])));
    const built: Manifest[] = [];
    for (const dir of dirs) {
      const output = kustomizeBuild(dir);
      if (output === null) {
        if (kubectlRequired) throw new Error('CI=true and kubectl is not installed: it builds the kustomizations (kubectl 1.27 or later)');
        process.stderr.write('\n*** SKIPPING the kustomize build check: kubectl is not installed. ***\n\n');
        return;
      }
      built.push(...output.map((object, i) => ({ source: `kubectl kustomize ${relative(ROOT, dir)}#${i}`, object })));
    }
    expect(built.flatMap(({ source, object }) => schemaProblems(object).map((p) => `${source}: ${p}`))).toEqual([]);
    expect(unknownFields(built)).toEqual([]);
    // The base puts everything in one namespace; the example overlay swaps the image and keeps it.
    expect(new Set(built.map((m) => m.object.metadata?.namespace))).toEqual(new Set([NAME]));
    const images = (prefix: string) =>
      built
        .filter((m) => m.source.startsWith(`kubectl kustomize ${prefix}#`) || m.source.startsWith(`kubectl kustomize ${prefix}/migrations#`))
        .flatMap((m) => JSON.stringify(m.object).match(/"image":"[^"]+"/g) ?? []);
    expect(new Set(images('deploy/kubernetes'))).toEqual(new Set([`"image":"${NAME}:0.1.0"`]));
    expect(new Set(images('deploy/overlay-example/app'))).toEqual(new Set([`"image":"registry.example.com/${NAME}:0.1.0"`]));
    // The dashboard becomes a ConfigMap Grafana's sidecar picks up.
    const dashboardMap = built.find((m) => m.object.kind === 'ConfigMap' && m.object.metadata?.name === `${NAME}-dashboard`)!.object as KubernetesObject & {
      data: Record<string, string>;
    };
    expect(dashboardMap.metadata?.labels).toMatchObject({ grafana_dashboard: '1' });
    expect(JSON.parse(dashboardMap.data[`${NAME}.json`]).uid).toBe(NAME);
  });
});

describe('deploy/kubernetes: the instances', () => {
  it('runs at least two non-root instances with a read-only root filesystem and no capabilities', () => {
    expect(find('horizontalpodautoscaler.yaml', 'HorizontalPodAutoscaler').spec.minReplicas).toBeGreaterThanOrEqual(2);
    expect(podSpec.securityContext).toMatchObject({ runAsNonRoot: true, runAsUser: 1000, seccompProfile: { type: 'RuntimeDefault' } });
    expect(container.securityContext).toEqual({ allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, capabilities: { drop: ['ALL'] } });
    expect(container.volumeMounts).toEqual([{ name: 'tmp', mountPath: '/tmp' }]);
    expect(container.resources.requests).toEqual(expect.objectContaining({ cpu: expect.any(String), memory: expect.any(String) }));
    expect(container.resources.limits).toEqual(expect.objectContaining({ memory: expect.any(String) }));
    expect(podSpec.topologySpreadConstraints.map((c: { topologyKey: string }) => c.topologyKey)).toEqual([
      'topology.kubernetes.io/zone',
      'kubernetes.io/hostname',
    ]);
    for (const constraint of podSpec.topologySpreadConstraints) expect(matches(constraint.labelSelector.matchLabels, podLabels)).toBe(true);
  });

  it('probes /health/live for start and liveness, /health/ready for readiness, on the port named http (3000)', () => {
    expect(container.ports).toEqual([{ name: 'http', containerPort: 3000, protocol: 'TCP' }]);
    expect(container.startupProbe.httpGet).toEqual({ path: '/health/live', port: 'http' });
    expect(container.livenessProbe.httpGet).toEqual({ path: '/health/live', port: 'http' });
    expect(container.readinessProbe.httpGet).toEqual({ path: '/health/ready', port: 'http' });
  });

  it('drains in the process (SHUTDOWN_DELAY_SECONDS, no preStop) within the grace period', () => {
    expect(container.lifecycle).toBeUndefined();
    const delay = Number(configMap.data!.SHUTDOWN_DELAY_SECONDS);
    expect(delay).toBeGreaterThanOrEqual(5);
    // The delay, then in-flight requests (each bounded by HTTP_REQUEST_TIMEOUT_MS), then closing.
    const requestTimeout = loadConfig({ ...configMap.data }).HTTP_REQUEST_TIMEOUT_MS / 1000;
    expect(podSpec.terminationGracePeriodSeconds).toBeGreaterThan(delay + requestTimeout);
  });

  it('configures only variables the gateway knows, with values it accepts; migrations are left to the Job', () => {
    const known = new Set(readEnvExample().map((e) => e.name));
    expect(Object.keys(configMap.data!).filter((name) => !known.has(name))).toEqual([]);
    expect(() => loadConfig({ ...configMap.data })).not.toThrow();
    expect(configMap.data!.MIGRATIONS_RUN).toBe('false');
    expect(container.envFrom).toEqual([{ configMapRef: { name: configMap.metadata!.name } }]);
  });

  it('takes the secrets from the Secret whose template lists them, the required ones required', () => {
    const secret = find('secret.example.yaml', 'Secret');
    const fromSecret = (env: { name: string; valueFrom?: { secretKeyRef?: { name: string; key: string; optional?: boolean } } }[]) =>
      env.map(({ name, valueFrom }) => ({
        name,
        secret: valueFrom?.secretKeyRef?.name,
        key: valueFrom?.secretKeyRef?.key,
        optional: valueFrom?.secretKeyRef?.optional ?? false,
      }));
    const env = fromSecret(container.env);
    expect(env.filter((e) => !e.optional).map((e) => e.name)).toEqual([
      'DATABASE_URL',
      'ADMIN_TOKEN',
      'BANK_WEBHOOK_SECRET',
      'METRICS_TOKEN',
      'ARCHIVE_SIGNING_KEY',
    ]);
    expect(env.filter((e) => e.optional).map((e) => e.name)).toEqual(['BANK_WEBHOOK_SECRET_PREVIOUS', 'REDIS_URL', 'OTEL_EXPORTER_OTLP_HEADERS']);
    for (const e of env) expect([e.secret, e.key]).toEqual([secret.metadata!.name, e.name]);
    expect(Object.keys(secret.stringData!).sort()).toEqual(env.map((e) => e.name).sort());
    // A template: placeholders only.
    for (const value of Object.values(secret.stringData!)) expect(value).toMatch(/^$|REPLACE|USER:PASSWORD@HOST|^redis:\/\//);
  });

  it('is selected by its Service, PodDisruptionBudget, NetworkPolicy and ServiceMonitor, and scaled by its autoscaler', () => {
    const service = find('service.yaml', 'Service');
    expect(matches(service.spec.selector, podLabels)).toBe(true);
    expect(service.spec.ports).toEqual([{ name: 'http', port: 80, targetPort: 'http', protocol: 'TCP' }]);
    const pdb = find('poddisruptionbudget.yaml', 'PodDisruptionBudget');
    expect(pdb.spec.minAvailable).toBe(1);
    expect(matches(pdb.spec.selector.matchLabels, podLabels)).toBe(true);
    const hpa = find('horizontalpodautoscaler.yaml', 'HorizontalPodAutoscaler');
    expect(hpa.spec.scaleTargetRef).toEqual({ apiVersion: 'apps/v1', kind: 'Deployment', name: deployment.metadata!.name });
    expect(hpa.spec.minReplicas).toBeGreaterThanOrEqual(2);
    expect(hpa.spec.metrics[0].resource.name).toBe('cpu');
    const policy = find('networkpolicy.yaml', 'NetworkPolicy');
    expect(matches(policy.spec.podSelector.matchLabels, podLabels)).toBe(true);
    expect(matches(policy.spec.podSelector.matchLabels, job.spec.template.metadata.labels)).toBe(true);
    expect(policy.spec.ingress).toEqual([expect.objectContaining({ ports: [{ port: 'http', protocol: 'TCP' }] })]);
    const egressPorts = policy.spec.egress.flatMap((rule: { ports: { port: number }[] }) => rule.ports.map((p) => p.port));
    expect(new Set(egressPorts)).toEqual(new Set([53, 5432, 6379, 443, 4318, 4317]));
    const monitor = find('monitoring/servicemonitor.yaml', 'ServiceMonitor');
    expect(matches(monitor.spec.selector.matchLabels, service.metadata!.labels!)).toBe(true);
    expect(monitor.spec.endpoints).toEqual([
      expect.objectContaining({ port: 'http', path: '/metrics', authorization: { type: 'Bearer', credentials: { name: NAME, key: 'METRICS_TOKEN' } } }),
    ]);
  });

  it('traces only once pointed at a collector (the overlay example does), whose OTLP ports the NetworkPolicy lets out', () => {
    // The base leaves tracing off: applied where no collector runs, it does no work toward nothing.
    expect(Object.keys(configMap.data!).filter((name) => name.startsWith('OTEL_'))).toEqual([]);
    const overlay = all.find((m) => m.source.startsWith('deploy/overlay-example/app/kustomization.yaml#'))!.object;
    const operations = (overlay.patches as { target: { kind: string; name: string }; patch: string }[])
      .filter(({ target }) => target.kind === 'ConfigMap' && target.name === configMap.metadata!.name)
      .flatMap(({ patch }) => parse(patch) as { op: string; path: string; value: string }[]);
    const data = Object.fromEntries(operations.filter((o) => o.op === 'add').map((o) => [o.path.replace(/^\/data\//, ''), o.value]));
    const endpoint = new URL(data.OTEL_EXPORTER_OTLP_ENDPOINT);
    expect([endpoint.protocol, endpoint.port, endpoint.pathname]).toEqual(['http:', '4318', '/']);
    expect(data).toMatchObject({ OTEL_TRACES_SAMPLER: 'parentbased_traceidratio', OTEL_TRACES_SAMPLER_ARG: expect.stringMatching(/^(0(\.\d+)?|1)$/) });
    // Every variable it sets is one .env.example documents.
    const known = new Set(readEnvExample().map((e) => e.name));
    expect(Object.keys(data).filter((name) => !known.has(name))).toEqual([]);
    const policy = find('networkpolicy.yaml', 'NetworkPolicy');
    const egress = policy.spec.egress.flatMap((rule: { to?: unknown; ports: { port: number; protocol: string }[] }) => (rule.to ? [] : rule.ports));
    expect(egress).toContainEqual({ port: Number(endpoint.port), protocol: 'TCP' });
  });

  it('runs migrations in a Job with the built migration CLI the image ships, against the same Secret', () => {
    const migrate = job.spec.template.spec.containers[0];
    expect(migrate.command).toEqual(['node', 'dist/database/migration-cli.js', 'run']);
    // dist/ is compiled from src/ (tsconfig.build.json: rootDir src).
    expect(existsSync(join(ROOT, 'src', 'database', 'migration-cli.ts'))).toBe(true);
    expect(JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')).scripts['migration:run']).toBe(
      'node --import @swc-node/register/esm-register src/database/migration-cli.ts run',
    );
    expect(migrate.image).toBe(container.image);
    expect(migrate.env).toEqual([{ name: 'DATABASE_URL', valueFrom: { secretKeyRef: { name: NAME, key: 'DATABASE_URL' } } }]);
    expect(migrate.securityContext).toEqual(container.securityContext);
    expect(job.spec.template.spec.restartPolicy).toBe('Never');
  });
});

describe('deploy/kubernetes/monitoring: alerts and dashboard', () => {
  const known = new Set([...exportedToday(), ...ANNOUNCED_METRICS]);

  it('alerts on what matters: 5xx ratio, not ready, push backlog, database unavailable, pool saturation, rate-limit store down, archive seal lag and verification failures', () => {
    const alerts = new Map(alertExpressions().map(({ where, expr }) => [where.replace(/^alert /, ''), metricNames(expr)]));
    expect(alerts).toEqual(
      new Map([
        ['TaxDocumentGatewayDown', ['process_start_time_seconds']],
        ['TaxDocumentGatewayHighErrorRate', ['http_requests_total']],
        ['TaxDocumentGatewayInstanceNotReady', ['gateway_ready']],
        ['TaxDocumentGatewayDatabaseUnavailable', ['database_unavailable_total']],
        ['TaxDocumentGatewayDatabasePoolSaturated', ['db_pool_connections', 'db_pool_max_connections']],
        ['TaxDocumentGatewayPushBacklog', ['outbound_webhook_oldest_due_age_seconds']],
        ['TaxDocumentGatewayRateLimitStoreDown', ['rate_limit_shared_store_up']],
        ['TaxDocumentGatewayArchiveSealLag', ['archive_seal_lag_seconds']],
        ['TaxDocumentGatewayArchiveVerificationFailed', ['archive_verification_failures_total']],
      ]),
    );
    const rule = find('monitoring/prometheusrule.yaml', 'PrometheusRule');
    for (const r of rule.spec.groups.flatMap((g: { rules: unknown[] }) => g.rules)) {
      expect(r).toEqual(expect.objectContaining({ for: expect.stringMatching(/^\d+m$/), labels: { severity: expect.stringMatching(/^(warning|critical)$/) } }));
      expect(r.annotations).toEqual({ summary: expect.any(String), description: expect.any(String) });
      // Every selector names the gateway's job: other applications export http_requests_total too.
      expect(r.expr.match(/[a-z_]+\{[^}]*\}/g).every((selector: string) => selector.includes(`job="${NAME}"`))).toBe(true);
    }
  });

  it('has a dashboard whose panels each query, on the data source variable, and fit the grid', () => {
    const { uid, panels, templating } = dashboard();
    expect(uid).toBe(NAME);
    expect(templating.list.map((v) => v.name)).toEqual(['datasource', 'namespace', 'tempo', 'service']);
    expect(new Set(panels.map((p) => p.id)).size).toBe(panels.length);
    for (const panel of panels.filter((p) => p.type !== 'row')) {
      expect(panel.targets?.length).toBeGreaterThan(0);
      expect(panel.datasource).toEqual({ type: 'prometheus', uid: '${datasource}' });
      expect(panel.gridPos.x + panel.gridPos.w).toBeLessThanOrEqual(24);
    }
    expect(dashboardExpressions().length).toBeGreaterThan(20);
  });

  it('links to traces in Explore on the Tempo data source variable, filtered by the service name tracing exports by default', () => {
    const { links, panels, templating } = dashboard() as ReturnType<typeof dashboard> & { links: { url: string }[] };
    expect(templating.list.find((v) => v.name === 'tempo')).toMatchObject({ type: 'datasource', query: 'tempo' });
    // OTEL_SERVICE_NAME's default (.env.example).
    const service = readEnvExample().find((e) => e.name === 'OTEL_SERVICE_NAME')!.value;
    expect(templating.list.find((v) => v.name === 'service')).toMatchObject({ type: 'textbox', query: service });
    const panelLinks = panels.flatMap((p) =>
      ((p as { fieldConfig?: { defaults: { links?: { url: string }[] } } }).fieldConfig?.defaults.links ?? []).map((link) => ({
        panel: p.title,
        url: link.url,
      })),
    );
    expect(panelLinks.map((l) => l.panel)).toEqual(
      expect.arrayContaining(['p99 latency by route', '5xx by route', 'Delivery attempts by outcome', 'Bank webhook events by outcome']),
    );
    for (const { url } of [...links, ...panelLinks]) {
      const [path, query] = url.split('?');
      expect(path).toBe('/explore');
      const panes = JSON.parse(new URLSearchParams(query).get('panes')!) as Record<
        string,
        { datasource: string; queries: { datasource: { type: string; uid: string }; queryType: string; query: string }[] }
      >;
      for (const pane of Object.values(panes)) {
        expect(pane.datasource).toBe('${tempo}');
        for (const q of pane.queries) {
          expect([q.datasource, q.queryType]).toEqual([{ type: 'tempo', uid: '${tempo}' }, 'traceql']);
          expect(q.query).toMatch(/^\{resource\.service\.name="\$\{service\}" && .+\}$/);
        }
      }
    }
  });

  it('uses only metrics the gateway exports or docs/operations.md announces, in expressions that parse', () => {
    // metricNames throws on an expression that does not parse.
    const unknown = [...usedMetrics()].filter(([name]) => !known.has(name)).map(([name, where]) => `${name} (${where.join(', ')})`);
    expect(unknown).toEqual([]);
    // Every panel and alert together cover each metric the issue names.
    for (const name of ANNOUNCED_METRICS) expect(usedMetrics().has(name)).toBe(true);
  });
});

describe('deploy/kubernetes/examples', () => {
  it('offers a CloudNativePG cluster with backups, a Valkey for REDIS_URL, and an Ingress to the Service', () => {
    const cluster = find('examples/cloudnative-pg.yaml', 'Cluster');
    expect(cluster.spec.instances).toBeGreaterThanOrEqual(2);
    expect(cluster.spec.backup.barmanObjectStore.destinationPath).toMatch(/^s3:\/\//);
    expect(find('examples/cloudnative-pg.yaml', 'ScheduledBackup').spec.cluster.name).toBe(cluster.metadata!.name);
    const valkey = find('examples/valkey.yaml', 'Service');
    const secret = find('secret.example.yaml', 'Secret');
    expect(secret.stringData!.REDIS_URL).toBe(`redis://${valkey.metadata!.name}:${valkey.spec.ports[0].port}`);
    const ingress = find('examples/ingress.yaml', 'Ingress');
    const backends = ingress.spec.rules.flatMap((r: { http: { paths: { backend: { service: { name: string } } }[] } }) =>
      r.http.paths.map((p) => p.backend.service.name),
    );
    expect(new Set(backends)).toEqual(new Set([NAME]));
  });

  it('recovers a CloudNativePG cluster from the object store the example cluster archives to', () => {
    const cluster = find('examples/cloudnative-pg.yaml', 'Cluster');
    const restored = find('examples/cloudnative-pg-restore.yaml', 'Cluster');
    const source = restored.spec.externalClusters.find((c: { name: string }) => c.name === restored.spec.bootstrap.recovery.source);
    expect(source.barmanObjectStore.destinationPath).toBe(cluster.spec.backup.barmanObjectStore.destinationPath);
    expect(restored.spec.bootstrap.recovery.recoveryTarget.targetTime).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
  });
});

describe('docs/operations.md', () => {
  it('names every file of deploy/kubernetes and the overlay example', () => {
    const guide = readFileSync(join(ROOT, 'docs', 'operations.md'), 'utf8');
    const files = [...yamlFiles(KUBERNETES), ...yamlFiles(join(DEPLOY, 'overlay-example'))].map((file) => relative(KUBERNETES, file));
    const unnamed = files.filter((file) => !file.endsWith('kustomization.yaml') && !guide.includes(file.replace(/^(migrations|monitoring)\//, '')));
    expect(unnamed).toEqual([]);
    expect(readdirSync(join(KUBERNETES, 'monitoring', 'dashboards')).every((file) => guide.includes(file))).toBe(true);
  });
});
