import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import type { ILabelSelector } from '@kubernetes-models/apimachinery/apis/meta/v1/LabelSelector';
import { ServiceMonitor } from '@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1';
import { Deployment, type IDeployment } from 'kubernetes-models/apps/v1';
import { HorizontalPodAutoscaler } from 'kubernetes-models/autoscaling/v2';
import { Job } from 'kubernetes-models/batch/v1';
import { NetworkPolicy } from 'kubernetes-models/networking.k8s.io/v1';
import { PodDisruptionBudget } from 'kubernetes-models/policy/v1';
import { Namespace, Secret, Service, type IContainer, type IPodTemplateSpec } from 'kubernetes-models/v1';

/**
 * deploy/kubernetes checked offline: every document of every file parses,
 * is a kind we know and passes the kubernetes-models schema, and the
 * objects fit together the way a cluster needs them to (selectors, ports,
 * probes, env, network policy, autoscaling, scraping).
 *
 * kubernetes-models does not reject unknown fields: a misspelled optional
 * field is caught only where an assertion below looks for the real one.
 */

const REPO_ROOT = fileURLToPath(new URL('..', import.meta.url));
const MANIFEST_DIR = join(REPO_ROOT, 'deploy/kubernetes');
const FRONTS = ['admission', 'execution', 'events'] as const;
const SERVICES = [...FRONTS, 'state'] as const;
const COMPONENT = 'app.kubernetes.io/component';

/** The kinds these manifests may use, by `apiVersion/kind`; anything else fails. */
type ManifestModel = new (data: Record<string, unknown>) => { validate(): void };
const MODELS = new Map<string, ManifestModel>(
  [Namespace, Secret, Service, Deployment, Job, PodDisruptionBudget, NetworkPolicy, HorizontalPodAutoscaler, ServiceMonitor].map(
    (model) => [`${model.apiVersion}/${model.kind}`, model as unknown as ManifestModel] as const,
  ),
);

interface Kustomization {
  readonly resources: string[];
  readonly images: { name: string }[];
}

function readKustomization(): Kustomization {
  const [document] = parseAllDocuments(readFileSync(join(MANIFEST_DIR, 'kustomization.yaml'), 'utf8'));
  return document!.toJS() as Kustomization;
}

/** Every YAML document of `file`, refusing parse errors and warnings. */
function readDocuments(file: string): Record<string, unknown>[] {
  return parseAllDocuments(readFileSync(join(MANIFEST_DIR, file), 'utf8'), { prettyErrors: true }).map((document, index) => {
    if (document.errors.length + document.warnings.length > 0) {
      throw new Error(`${file} document ${index}: ${[...document.errors, ...document.warnings].map((e) => e.message).join('; ')}`);
    }
    return document.toJS() as Record<string, unknown>;
  });
}

/** Builds and validates the kubernetes-models object of every document of `files`. */
function loadObjects(files: readonly string[]): unknown[] {
  return files.flatMap((file) =>
    readDocuments(file).map((data, index) => {
      const key = `${String(data['apiVersion'])}/${String(data['kind'])}`;
      const model = MODELS.get(key);
      if (!model) throw new Error(`${file} document ${index}: unknown kind ${key}`);
      const object = new model(data);
      try {
        object.validate();
      } catch (error) {
        throw new Error(`${file} document ${index} (${key}): ${(error as Error).message}`);
      }
      return object;
    }),
  );
}

/** Kubernetes label-selector semantics (matchLabels and matchExpressions, ANDed). */
function selects(selector: ILabelSelector | undefined, labels: Readonly<Record<string, string>> = {}): boolean {
  if (!selector) return false;
  const byLabels = Object.entries(selector.matchLabels ?? {}).every(([key, value]) => labels[key] === value);
  const byExpressions = (selector.matchExpressions ?? []).every(({ key, operator, values = [] }) => {
    const value = labels[key];
    switch (operator) {
      case 'In':
        return value !== undefined && values.includes(value);
      case 'NotIn':
        return value === undefined || !values.includes(value);
      case 'Exists':
        return value !== undefined;
      case 'DoesNotExist':
        return value === undefined;
      default:
        throw new Error(`unknown selector operator ${operator}`);
    }
  });
  return byLabels && byExpressions;
}

const kustomization = readKustomization();
const objects = loadObjects(kustomization.resources);
const deployments = objects.filter(Deployment.is);
const jobs = objects.filter(Job.is);
const services = objects.filter(Service.is);
const budgets = objects.filter(PodDisruptionBudget.is);
const policies = objects.filter(NetworkPolicy.is);
const autoscalers = objects.filter(HorizontalPodAutoscaler.is);
const monitors = objects.filter(ServiceMonitor.is);
const workloads: { name: string; template: IPodTemplateSpec }[] = [
  ...deployments.map((d) => ({ name: `Deployment ${d.metadata!.name!}`, template: d.spec!.template })),
  ...jobs.map((j) => ({ name: `Job ${j.metadata!.name!}`, template: j.spec!.template })),
];

function deploymentOf(component: string): IDeployment {
  const found = deployments.filter((d) => d.spec?.template.metadata?.labels?.[COMPONENT] === component);
  expect(found, `one Deployment of component ${component}`).toHaveLength(1);
  return found[0]!;
}

function containerOf(deployment: IDeployment): IContainer {
  const containers = deployment.spec!.template.spec!.containers;
  expect(containers, `${deployment.metadata!.name!} runs one container`).toHaveLength(1);
  return containers[0]!;
}

/** The port number of `DOCKET_LISTEN` in a container's env. */
function listenPort(container: IContainer): number {
  const listen = container.env?.find((variable) => variable.name === 'DOCKET_LISTEN')?.value;
  expect(listen, `${container.name} sets DOCKET_LISTEN`).toMatch(/^0\.0\.0\.0:\d+$/);
  return Number(listen!.split(':')[1]);
}

describe('deploy/kubernetes', () => {
  it('lists every manifest file in kustomization.yaml (*.example.yaml are applied by hand)', () => {
    const present = readdirSync(MANIFEST_DIR).filter((file) => file.endsWith('.yaml') && file !== 'kustomization.yaml' && !file.endsWith('.example.yaml'));
    expect([...kustomization.resources].sort()).toEqual(present.sort());
    expect(new Set(kustomization.resources).size).toBe(kustomization.resources.length);
  });

  it('holds only known kinds that pass their schema, example files included', () => {
    const examples = readdirSync(MANIFEST_DIR).filter((file) => file.endsWith('.example.yaml'));
    expect(examples.length).toBeGreaterThan(0);
    expect(() => loadObjects(examples)).not.toThrow();
    expect(objects.length).toBeGreaterThan(0);
    for (const service of SERVICES) deploymentOf(service);
  });

  it('runs every container from the image kustomization.yaml rewrites, with the command of a real entry point', () => {
    const imageNames = kustomization.images.map((image) => image.name);
    for (const { name, template } of workloads) {
      for (const container of template.spec!.containers) {
        expect(imageNames, `${name} image`).toContain(container.image!.split(':')[0]);
        const [program, entry, ...rest] = container.command ?? [];
        expect(program, `${name} command`).toBe('node');
        expect(rest).toEqual([]);
        const source = entry!.replace(/^(services\/[a-z]+)\/dist\/([a-z-]+)\.js$/, '$1/src/$2.ts');
        expect(source, `${name} runs a compiled entry`).not.toBe(entry);
        expect(existsSync(join(REPO_ROOT, source)), `${source} exists`).toBe(true);
      }
    }
  });

  it('gives every container resource requests and a memory limit, and runs it non-root on a read-only root filesystem', () => {
    expect(workloads.length).toBeGreaterThan(SERVICES.length);
    for (const { name, template } of workloads) {
      const pod = template.spec!;
      expect(pod.automountServiceAccountToken, `${name} automountServiceAccountToken`).toBe(false);
      for (const container of pod.containers) {
        const where = `${name} container ${container.name}`;
        expect(container.resources?.requests?.['cpu'], `${where} cpu request`).toBeDefined();
        expect(container.resources?.requests?.['memory'], `${where} memory request`).toBeDefined();
        expect(container.resources?.limits?.['memory'], `${where} memory limit`).toBeDefined();
        expect(container.securityContext?.runAsNonRoot ?? pod.securityContext?.runAsNonRoot, `${where} runAsNonRoot`).toBe(true);
        expect(container.securityContext?.runAsUser ?? pod.securityContext?.runAsUser, `${where} numeric non-root user`).toBeGreaterThan(0);
        expect(container.securityContext?.readOnlyRootFilesystem, `${where} readOnlyRootFilesystem`).toBe(true);
        expect(container.securityContext?.allowPrivilegeEscalation, `${where} allowPrivilegeEscalation`).toBe(false);
        expect(container.securityContext?.capabilities?.drop, `${where} drops capabilities`).toEqual(['ALL']);
      }
    }
  });

  it('probes every service container over gRPC health on the port it listens on', () => {
    for (const service of SERVICES) {
      const container = containerOf(deploymentOf(service));
      const port = listenPort(container);
      expect(container.ports?.map((p) => p.containerPort), `${service} container ports`).toEqual([port]);
      for (const probe of ['startupProbe', 'readinessProbe', 'livenessProbe'] as const) {
        expect(container[probe]?.grpc?.port, `${service} ${probe} gRPC port`).toBe(port);
      }
    }
  });

  it('selects each Deployment’s own pods, from its Deployment, Service and PodDisruptionBudget', () => {
    for (const deployment of deployments) {
      const labels = deployment.spec!.template.metadata?.labels;
      const name = deployment.metadata!.name!;
      expect(selects(deployment.spec!.selector, labels), `${name} selector matches its pod labels`).toBe(true);
      const others = deployments.filter((d) => d !== deployment);
      expect(others.some((d) => selects(deployment.spec!.selector, d.spec!.template.metadata?.labels)), `${name} selector is its own`).toBe(false);
    }
    for (const budget of budgets) {
      const matched = deployments.filter((d) => selects(budget.spec!.selector, d.spec!.template.metadata?.labels));
      expect(matched.map((d) => d.metadata!.name), `PodDisruptionBudget ${budget.metadata!.name!}`).toEqual([budget.metadata!.name]);
    }
    expect(budgets).toHaveLength(deployments.length);
  });

  it('points every Service port at the container port its pods listen on', () => {
    expect(services).toHaveLength(SERVICES.length);
    for (const service of services) {
      const name = service.metadata!.name!;
      const matched = deployments.filter((d) => selects({ matchLabels: service.spec!.selector ?? {} }, d.spec!.template.metadata?.labels));
      expect(matched.map((d) => d.metadata!.name), `Service ${name} selects one Deployment`).toEqual([name]);
      const container = containerOf(matched[0]!);
      for (const port of service.spec!.ports ?? []) {
        const target = container.ports?.find((p) => (typeof port.targetPort === 'string' ? p.name === port.targetPort : p.containerPort === (port.targetPort ?? port.port)));
        expect(target, `Service ${name} port ${port.port} has a container port`).toBeDefined();
        expect(target!.containerPort, `Service ${name} port ${port.port}`).toBe(port.port);
        expect(target!.containerPort).toBe(listenPort(container));
      }
    }
  });

  it('names only environment variables docs/configuration.md documents, and only Secret keys the template has', () => {
    const documented = new Set([...readFileSync(join(REPO_ROOT, 'docs/configuration.md'), 'utf8').matchAll(/^\| `(DOCKET_[A-Z_]+)` \|/gm)].map((m) => m[1]));
    expect(documented.size).toBeGreaterThan(10);
    const [secret] = loadObjects(['secret.example.yaml']).filter(Secret.is);
    const keys = Object.keys(secret!.stringData ?? {});
    for (const { name, template } of workloads) {
      for (const variable of template.spec!.containers.flatMap((c) => c.env ?? [])) {
        expect(documented, `${name} sets ${variable.name}`).toContain(variable.name);
        const ref = variable.valueFrom?.secretKeyRef;
        if (ref) {
          expect(ref.name, `${name} ${variable.name} Secret`).toBe(secret!.metadata!.name);
          expect(keys, `${name} ${variable.name} Secret key`).toContain(ref.key);
        }
      }
    }
  });

  it('gives the database URL to state and its migration Job only, and the Job runs the migrate entry', () => {
    for (const { name, template } of workloads) {
      const names = template.spec!.containers.flatMap((c) => c.env ?? []).map((v) => v.name);
      const isState = template.metadata?.labels?.[COMPONENT] === 'state' || template.metadata?.labels?.[COMPONENT] === 'migrate';
      expect(names.includes('DOCKET_DATABASE_URL'), `${name} gets DOCKET_DATABASE_URL`).toBe(isState);
    }
    expect(jobs).toHaveLength(1);
    const job = jobs[0]!;
    expect(job.spec!.template.spec!.restartPolicy).toBe('Never');
    expect(job.spec!.template.spec!.containers[0]!.command).toEqual(['node', 'services/state/dist/migrate.js']);
  });

  describe('network policies', () => {
    const podsOf = (component: string) =>
      workloads.filter(({ template }) => template.metadata?.labels?.[COMPONENT] === component).map(({ template }) => template.metadata!.labels!);
    const stateLabels = podsOf('state')[0]!;
    const governingState = policies.filter((p) => selects(p.spec!.podSelector, stateLabels));
    const stateIngress = governingState.filter((p) => p.spec!.policyTypes?.includes('Ingress'));

    it('denies all ingress in the namespace unless a policy allows it', () => {
      const denyAll = policies.filter((p) => Object.keys(p.spec!.podSelector).length === 0);
      expect(denyAll).toHaveLength(1);
      expect(denyAll[0]!.spec!.policyTypes).toEqual(['Ingress']);
      expect(denyAll[0]!.spec!.ingress ?? []).toEqual([]);
    });

    it('lets exactly admission, execution and events pods reach state, on its port only', () => {
      expect(stateIngress.length).toBeGreaterThan(0);
      const rules = stateIngress.flatMap((p) => p.spec!.ingress ?? []);
      expect(rules.length).toBeGreaterThan(0);
      const port = listenPort(containerOf(deploymentOf('state')));
      for (const rule of rules) {
        // A rule without `from` admits every source; ipBlock and namespaceSelector admit pods outside these manifests.
        expect(rule.from?.length, 'every state ingress rule names its sources').toBeGreaterThan(0);
        for (const peer of rule.from!) {
          expect(peer.ipBlock).toBeUndefined();
          expect(peer.namespaceSelector).toBeUndefined();
          expect(peer.podSelector).toBeDefined();
        }
        expect(rule.ports?.map((p) => [p.protocol, p.port])).toEqual([['TCP', port]]);
      }
      const admitted = [...new Set(workloads.map(({ template }) => template.metadata!.labels!))]
        .filter((labels) => rules.some((rule) => rule.from!.some((peer) => selects(peer.podSelector, labels))))
        .map((labels) => labels[COMPONENT]);
      expect(admitted.sort()).toEqual([...FRONTS].sort());
    });

    it('lets state connect out only to PostgreSQL and DNS', () => {
      const egress = governingState.filter((p) => p.spec!.policyTypes?.includes('Egress'));
      expect(egress.length).toBeGreaterThan(0);
      const ports = egress.flatMap((p) => p.spec!.egress ?? []).flatMap((rule) => (rule.ports ?? [{ port: 'any' }]).map((p) => `${p.protocol ?? 'TCP'}/${p.port}`));
      expect(ports.sort()).toEqual(['TCP/53', 'TCP/5432', 'UDP/53']);
    });

    it('lets anyone reach each front on its public port', () => {
      for (const front of FRONTS) {
        const port = listenPort(containerOf(deploymentOf(front)));
        const open = policies
          .filter((p) => selects(p.spec!.podSelector, podsOf(front)[0]) && p.spec!.policyTypes?.includes('Ingress'))
          .flatMap((p) => p.spec!.ingress ?? [])
          .filter((rule) => (rule.from ?? []).length === 0 && rule.ports?.some((p) => p.port === port));
        expect(open, `${front} accepts ${port} from anywhere`).toHaveLength(1);
      }
    });
  });

  it('autoscales each front on CPU, and only the fronts, leaving their replica count to the autoscaler', () => {
    expect(autoscalers.map((a) => a.spec!.scaleTargetRef.name).sort()).toEqual([...FRONTS].sort());
    for (const autoscaler of autoscalers) {
      const { apiVersion, kind, name } = autoscaler.spec!.scaleTargetRef;
      expect([apiVersion, kind]).toEqual([Deployment.apiVersion, Deployment.kind]);
      const target = deploymentOf(name);
      expect(target.metadata!.name).toBe(name);
      expect(target.spec!.replicas, `${name} leaves replicas to its autoscaler`).toBeUndefined();
      expect(autoscaler.spec!.minReplicas).toBeGreaterThanOrEqual(2);
      expect(autoscaler.spec!.maxReplicas).toBeGreaterThan(autoscaler.spec!.minReplicas!);
      const cpu = autoscaler.spec!.metrics?.find((m) => m.resource?.name === 'cpu');
      expect(cpu?.resource?.target.averageUtilization, `${name} CPU target`).toBeGreaterThan(0);
      expect(containerOf(target).resources?.requests?.['cpu'], `${name} has the CPU request utilisation is measured against`).toBeDefined();
    }
    expect(deploymentOf('state').spec!.replicas).toBeGreaterThanOrEqual(2);
  });

  it('scrapes /metrics of every service on the port that serves it', () => {
    expect(monitors).toHaveLength(1);
    const monitor = monitors[0]!;
    const scraped = services.filter((s) => selects(monitor.spec.selector, s.metadata!.labels));
    expect(scraped.map((s) => s.metadata!.name).sort()).toEqual([...SERVICES].sort());
    expect(monitor.spec.endpoints).toHaveLength(1);
    const endpoint = monitor.spec.endpoints![0]!;
    expect([endpoint.path, endpoint.scheme]).toEqual(['/metrics', 'http']);
    for (const service of scraped) {
      const port = service.spec!.ports?.find((p) => p.name === endpoint.port);
      expect(port?.port, `Service ${service.metadata!.name!} has port ${endpoint.port}`).toBe(listenPort(containerOf(deploymentOf(service.metadata!.name!))));
    }
  });
});
