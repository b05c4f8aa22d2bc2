import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { PATH_METADATA } from '@nestjs/common/constants.js';
import yaml from 'js-yaml';
import ts from 'typescript';
import { Service } from 'kubernetes-models/v1/Service';
import { Deployment } from 'kubernetes-models/apps/v1/Deployment';
import { PodDisruptionBudget } from 'kubernetes-models/policy/v1/PodDisruptionBudget';
import { KNOWN_VARIABLES, loadConfig } from '../../src/config/app-config.js';
import { deployedNodeFlags } from '../utils/deployed-flags.js';
import { HealthController } from '../../src/health/health.controller.js';

// No cluster and no kubectl in the suite: the manifests are checked offline against the Kubernetes
// API schemas (kubernetes-models' validators, and its types for fields the schemas do not close),
// then against what the service itself reads, serves and runs.
const root = path.resolve(import.meta.dirname, '../..');
const dir = path.join(root, 'deploy/kubernetes');
type Manifest = { apiVersion: string; kind: string; metadata: { name: string; labels?: Record<string, string> }; spec: Record<string, any> };
const files = readdirSync(dir).filter((f) => f.endsWith('.yaml') && f !== 'kustomization.yaml');
const manifests = files.flatMap((file) => (yaml.loadAll(readFileSync(path.join(dir, file), 'utf8')) as Manifest[]).map((m) => ({ file, m })));
const models = {
  'apps/v1 Deployment': { model: Deployment, type: ['kubernetes-models/apps/v1/Deployment', 'IDeployment'] },
  'v1 Service': { model: Service, type: ['kubernetes-models/v1/Service', 'IService'] },
  'policy/v1 PodDisruptionBudget': { model: PodDisruptionBudget, type: ['kubernetes-models/policy/v1/PodDisruptionBudget', 'IPodDisruptionBudget'] },
} as const;
const deployments = manifests.map(({ m }) => m).filter((m) => m.kind === 'Deployment');
const deployment = (component: string) => deployments.find((d) => d.spec.template.metadata.labels['app.kubernetes.io/component'] === component)!;
const containerOf = (d: Manifest) => d.spec.template.spec.containers[0];
const matches = (selector: Record<string, string>, labels: Record<string, string>) => Object.entries(selector).every(([k, v]) => labels[k] === v);

/** The container's environment as the process would see it, secrets replaced by values of their kind. */
function environmentOf(d: Manifest): Record<string, string> {
  const samples: Record<string, string> = { 'database-url': 'postgres://records:pw@postgres:5432/records', 'jwt-secret': 'kZ3q9v1Xb8Jr2mW6tY4uP0sN7hL5cF1dA9eG3iK8oQ2=', 'kafka-brokers': 'kafka-0:9092,kafka-1:9092' };
  return Object.fromEntries(containerOf(d).env.map((e: { name: string; value?: string; valueFrom?: { secretKeyRef: { key: string } } }) => [e.name, e.value ?? samples[e.valueFrom!.secretKeyRef.key]]));
}

/** TypeScript's excess-property check: a misspelt field (livenesProbe) is an error here, where the API schemas let it through. */
function typeErrors(): string[] {
  const file = path.join(dir, '__manifests.ts');
  const source = manifests
    .map(({ m }, i) => {
      const [module, name] = models[`${m.apiVersion} ${m.kind}` as keyof typeof models].type;
      return `import type { ${name} as T${i} } from '${module}';\nexport const m${i}: T${i} = ${JSON.stringify(m)};`;
    })
    .join('\n');
  const options = { strict: true, noEmit: true, module: ts.ModuleKind.NodeNext, moduleResolution: ts.ModuleResolutionKind.NodeNext, target: ts.ScriptTarget.ES2022, types: [] };
  const host = ts.createCompilerHost(options);
  const read = host.getSourceFile.bind(host);
  host.getSourceFile = (name, version, ...rest) => (name === file ? ts.createSourceFile(name, source, version) : read(name, version, ...rest));
  const program = ts.createProgram([file], options, host);
  return ts.getPreEmitDiagnostics(program).map((d) => ts.flattenDiagnosticMessageText(d.messageText, '\n'));
}

describe('deploy/kubernetes', () => {
  it('holds an API-only deployment, a consumer deployment, a Service and a PodDisruptionBudget for each, and kustomization lists every file', () => {
    expect(manifests.map(({ m }) => `${m.kind}/${m.metadata.name}`).sort()).toEqual([
      'Deployment/subscription-records-api',
      'Deployment/subscription-records-consumer',
      'PodDisruptionBudget/subscription-records-api',
      'PodDisruptionBudget/subscription-records-consumer',
      'Service/subscription-records-api',
    ]);
    const kustomization = yaml.load(readFileSync(path.join(dir, 'kustomization.yaml'), 'utf8')) as { resources: string[] };
    expect([...kustomization.resources].sort()).toEqual([...files].sort());
  });

  it.each(manifests.map(({ file, m }) => [`${file}: ${m.kind}/${m.metadata.name}`, m]))('%s is valid against the Kubernetes API schema', (_, m) => {
    const entry = models[`${m.apiVersion} ${m.kind}` as keyof typeof models];
    expect(Object.keys(models)).toContain(`${m.apiVersion} ${m.kind}`);
    expect(() => new entry.model(m as never).validate()).not.toThrow();
  });

  it('uses no field the Kubernetes API types do not have', () => {
    expect(typeErrors()).toEqual([]);
  });

  it('selects its own pods: deployment selectors, the Service and each PodDisruptionBudget', () => {
    for (const d of deployments) expect(matches(d.spec.selector.matchLabels, d.spec.template.metadata.labels)).toBe(true);
    for (const { m } of manifests.filter(({ m }) => m.kind !== 'Deployment')) {
      const selector = m.kind === 'Service' ? m.spec.selector : m.spec.selector.matchLabels;
      expect(deployments.filter((d) => matches(selector, d.spec.template.metadata.labels)).map((d) => d.metadata.name)).toEqual([m.metadata.name]);
    }
    // a budget that allows no disruption blocks every node drain
    for (const { m } of manifests.filter(({ m }) => m.kind === 'PodDisruptionBudget')) {
      const target = deployments.find((d) => d.metadata.name === m.metadata.name)!;
      expect(m.spec.maxUnavailable ?? target.spec.replicas - m.spec.minAvailable).toBeGreaterThanOrEqual(1);
    }
  });

  it('configures only variables the service reads, and each deployment passes its start-up validation in production', () => {
    for (const d of deployments) {
      const env = environmentOf(d);
      for (const name of Object.keys(env)) expect([name, KNOWN_VARIABLES.has(name) || ['NODE_ENV', 'PORT', 'HOST', 'LOG_LEVEL'].includes(name)]).toEqual([name, true]);
      const config = loadConfig(env);
      expect(config.env).toBe('production');
      expect(config.warnings).toEqual([]);
      expect(containerOf(d).ports.map((p: { containerPort: number }) => p.containerPort)).toEqual([config.port]);
    }
    expect(loadConfig(environmentOf(deployment('api'))).consumerEnabled).toBe(false);
    const consumer = loadConfig(environmentOf(deployment('consumer')));
    expect(consumer.consumerEnabled).toBe(true);
    expect(consumer.kafka?.brokers).toEqual(['kafka-0:9092', 'kafka-1:9092']);
  });

  it('probes paths the service serves, on its declared port', () => {
    const prefix = Reflect.getMetadata(PATH_METADATA, HealthController) as string;
    const served = Object.getOwnPropertyNames(HealthController.prototype)
      .map((method) => Reflect.getMetadata(PATH_METADATA, (HealthController.prototype as unknown as Record<string, object>)[method]) as string | undefined)
      .filter((p) => p !== undefined)
      .map((p) => `/${prefix}/${p}`);
    for (const d of deployments) {
      const c = containerOf(d);
      const probes = [c.startupProbe, c.livenessProbe, c.readinessProbe];
      expect(probes.every(Boolean)).toBe(true);
      for (const probe of probes) {
        expect(served).toContain(probe.httpGet.path);
        expect(c.ports.map((p: { name: string }) => p.name)).toContain(probe.httpGet.port);
      }
      // ready (database and migrations, the consumer) must not restart the pod: liveness is the process alone
      expect(c.livenessProbe.httpGet.path).toBe('/health/live');
      expect(c.readinessProbe.httpGet.path).toBe('/health/ready');
    }
  });

  it("runs the image's own command, with room above its heap, and its data dir writable", () => {
    const dockerfile = readFileSync(path.join(root, 'Dockerfile'), 'utf8');
    const flagMb = (name: string) => Number(deployedNodeFlags().find((f) => f.startsWith(`--${name}=`))!.slice(name.length + 3));
    // V8's heap budget: the old space, two semi-spaces and a new large-object space of their size
    const heapMb = flagMb('max-old-space-size') + 3 * flagMb('max-semi-space-size');
    const dataDir = /DATA_DIR=(\S+)/.exec(dockerfile)![1];
    for (const d of deployments) {
      const c = containerOf(d);
      expect(c.command).toBeUndefined();
      expect(c.args).toBeUndefined();
      const limit = /^(\d+)Mi$/.exec(c.resources.limits.memory)!;
      // and ~100 MB besides (code, buffers): RSS peaked at 246-268 MB under API load, 339-348 MB ingesting (docs/deployment.md, "Heap limits")
      expect(Number(limit[1])).toBeGreaterThanOrEqual(heapMb + 96);
      if (c.securityContext?.readOnlyRootFilesystem) expect(c.volumeMounts.map((v: { mountPath: string }) => v.mountPath)).toContain(dataDir);
      // main.ts gives a graceful stop 30 s before it exits on its own
      expect(d.spec.template.spec.terminationGracePeriodSeconds).toBeGreaterThan(30);
    }
  });
});
