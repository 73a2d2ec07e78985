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
 * is a kind we know and passes the kubernetes-models schema (the
 * CloudNativePG Cluster, which has no such model, a hand-written check),
 * and the objects fit together the way a cluster needs them to (selectors,
 * ports, probes, env, network policy, replica floors and disruption
 * budgets, the database's synchronous replication, autoscaling, scraping).
 *
 * kubernetes-models does not reject unknown fields: a misspelled optional
 * field is caught only where an assertion below looks for the real one.
 */

const REPO_ROOT = fileURLToPath(new URL('..', import.meta.url));
const MANIFEST_DIR = join(REPO_ROOT, 'deploy/kubernetes');
const FRONTS = ['admission', 'execution', 'events'] as const;
const SERVICES = [...FRONTS, 'state'] as const;
const COMPONENT = 'app.kubernetes.io/component';
/** The fewest pods each service runs (docs/deployment.md): the fronts' autoscaler minimums, state's fixed count. */
const REPLICA_FLOOR: Readonly<Record<(typeof SERVICES)[number], number>> = { admission: 3, execution: 3, events: 2, state: 2 };
/** The keys of the `<cluster>-app` Secret CloudNativePG generates; `uri` names the `<cluster>-rw` Service (the primary). */
const CNPG_APP_SECRET_KEYS = ['username', 'password', 'dbname', 'host', 'port', 'uri', 'jdbc-uri', 'fqdn-uri', 'fqdn-jdbc-uri', 'pgpass'];

/** The fields of a CloudNativePG `Cluster` spec these manifests rely on (`postgresql.cnpg.io/v1`, CloudNativePG 1.28). */
interface CnpgClusterSpec {
  readonly instances: number;
  readonly bootstrap?: { readonly initdb?: { readonly database?: string; readonly owner?: string } };
  readonly postgresql?: {
    readonly parameters?: Readonly<Record<string, unknown>>;
    readonly synchronous?: { readonly method: string; readonly number: number; readonly dataDurability?: string; readonly failoverQuorum?: boolean };
  };
  /** The deprecated quorum settings, which drop to asynchronous replication when standbys are missing. */
  readonly minSyncReplicas?: number;
  readonly maxSyncReplicas?: number;
  readonly enablePDB?: boolean;
  readonly affinity?: { readonly enablePodAntiAffinity?: boolean; readonly podAntiAffinityType?: string; readonly topologyKey?: string };
}

/**
 * A CloudNativePG `Cluster`. kubernetes-models has no CloudNativePG types,
 * so `validate` checks by hand what the CRD would refuse in the fields read
 * here: their types, enums and bounds, and the old and new synchronous
 * settings together.
 */
class CnpgCluster {
  static readonly apiVersion = 'postgresql.cnpg.io/v1';
  static readonly kind = 'Cluster';
  readonly metadata: { readonly name: string; readonly labels?: Readonly<Record<string, string>> };
  readonly spec: CnpgClusterSpec;

  constructor(data: Record<string, unknown>) {
    this.metadata = data['metadata'] as CnpgCluster['metadata'];
    this.spec = data['spec'] as CnpgClusterSpec;
  }

  static is(value: unknown): value is CnpgCluster {
    return value instanceof CnpgCluster;
  }

  validate(): void {
    const problems: string[] = [];
    const { metadata, spec } = this;
    if (typeof metadata?.name !== 'string' || !/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/.test(metadata.name)) problems.push('metadata.name is not a DNS label');
    if (typeof spec !== 'object' || spec === null) throw new Error('spec is missing');
    if (!Number.isInteger(spec.instances) || spec.instances < 1) problems.push('spec.instances is not a positive integer');
    const synchronous = spec.postgresql?.synchronous;
    if (synchronous) {
      if (!['any', 'first'].includes(synchronous.method)) problems.push(`synchronous.method ${String(synchronous.method)} is not any or first`);
      if (!Number.isInteger(synchronous.number) || synchronous.number < 1 || synchronous.number >= spec.instances) problems.push('synchronous.number is not between 1 and instances - 1');
      if (synchronous.dataDurability !== undefined && !['required', 'preferred'].includes(synchronous.dataDurability)) problems.push('synchronous.dataDurability is not required or preferred');
      if (synchronous.failoverQuorum !== undefined && typeof synchronous.failoverQuorum !== 'boolean') problems.push('synchronous.failoverQuorum is not a boolean');
      if (spec.minSyncReplicas !== undefined || spec.maxSyncReplicas !== undefined) problems.push('synchronous and minSyncReplicas/maxSyncReplicas are mutually exclusive');
    }
    // postgresql.conf values are strings in the CRD: an unquoted 200 or a YAML 1.1 `on` would be refused.
    for (const [name, value] of Object.entries(spec.postgresql?.parameters ?? {})) {
      if (typeof value !== 'string') problems.push(`postgresql.parameters.${name} is not a string`);
    }
    const antiAffinity = spec.affinity?.podAntiAffinityType;
    if (antiAffinity !== undefined && !['preferred', 'required'].includes(antiAffinity)) problems.push('affinity.podAntiAffinityType is not preferred or required');
    if (problems.length > 0) throw new Error(problems.join('; '));
  }
}

/** The kinds these manifests may use, by `apiVersion/kind`; anything else fails. */
type ManifestModel = new (data: Record<string, unknown>) => { validate(): void };
const MODELS = new Map<string, ManifestModel>(
  [Namespace, Secret, Service, Deployment, Job, PodDisruptionBudget, NetworkPolicy, HorizontalPodAutoscaler, ServiceMonitor, CnpgCluster].map(
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

/**
 * Every YAML document of `file`, refusing parse errors and warnings. Read as
 * YAML 1.1, as kubectl reads it: there an unquoted `on` is a boolean.
 */
function readDocuments(file: string): Record<string, unknown>[] {
  return parseAllDocuments(readFileSync(join(MANIFEST_DIR, file), 'utf8'), { prettyErrors: true, version: '1.1' }).map((document, index) => {
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
const clusters = objects.filter(CnpgCluster.is);
const workloads: { name: string; template: IPodTemplateSpec }[] = [
  ...deployments.map((d) => ({ name: `Deployment ${d.metadata!.name!}`, template: d.spec!.template })),
  ...jobs.map((j) => ({ name: `Job ${j.metadata!.name!}`, template: j.spec!.template })),
];

function deploymentOf(component: string): IDeployment {
  const found = deployments.filter((d) => d.spec?.template.metadata?.labels?.[COMPONENT] === component);
  expect(found, `one Deployment of component ${component}`).toHaveLength(1);
  return found[0]!;
}

/** The one CloudNativePG Cluster of the manifests. */
function databaseCluster(): CnpgCluster {
  expect(clusters, 'one CloudNativePG Cluster').toHaveLength(1);
  return clusters[0]!;
}

/** The labels CloudNativePG gives every PostgreSQL instance pod of `cluster`. */
function instanceLabelsOf(cluster: CnpgCluster): Record<string, string> {
  return { 'cnpg.io/cluster': cluster.metadata.name, 'cnpg.io/podRole': 'instance' };
}

/** The fewest pods `component` runs: its autoscaler's minimum, or its Deployment's fixed count. */
function replicaFloorOf(component: string): number | undefined {
  const deployment = deploymentOf(component);
  const autoscaler = autoscalers.find((a) => a.spec!.scaleTargetRef.name === deployment.metadata!.name);
  return autoscaler ? autoscaler.spec!.minReplicas : deployment.spec!.replicas;
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
        if (ref && clusters.some((cluster) => ref.name === `${cluster.metadata.name}-app`)) {
          expect(CNPG_APP_SECRET_KEYS, `${name} ${variable.name} key of CloudNativePG's app Secret`).toContain(ref.key);
        } else if (ref) {
          expect(ref.name, `${name} ${variable.name} Secret`).toBe(secret!.metadata!.name);
          expect(keys, `${name} ${variable.name} Secret key`).toContain(ref.key);
        }
      }
    }
  });

  it('gives the database URL to state and its migration Job only, from the Cluster’s app Secret, and the Job runs the migrate entry', () => {
    const cluster = databaseCluster();
    for (const { name, template } of workloads) {
      const variables = template.spec!.containers.flatMap((c) => c.env ?? []);
      const isState = template.metadata?.labels?.[COMPONENT] === 'state' || template.metadata?.labels?.[COMPONENT] === 'migrate';
      const url = variables.find((v) => v.name === 'DOCKET_DATABASE_URL');
      expect(url !== undefined, `${name} gets DOCKET_DATABASE_URL`).toBe(isState);
      // `<cluster>-app`'s `uri` names `<cluster>-rw`, the Service that follows the primary through a failover.
      if (url) expect([url.valueFrom?.secretKeyRef?.name, url.valueFrom?.secretKeyRef?.key], `${name} DOCKET_DATABASE_URL`).toEqual([`${cluster.metadata.name}-app`, 'uri']);
    }
    // The app Secret exists for the role and database initdb creates.
    expect(cluster.spec.bootstrap?.initdb?.database).toBeDefined();
    expect(cluster.spec.bootstrap?.initdb?.owner).toBeDefined();
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

    it('lets only state, its migration Job, the other instances and the operator reach the database', () => {
      const cluster = databaseCluster();
      const instance = instanceLabelsOf(cluster);
      const rules = policies.filter((p) => selects(p.spec!.podSelector, instance) && p.spec!.policyTypes?.includes('Ingress')).flatMap((p) => p.spec!.ingress ?? []);
      expect(rules.length).toBeGreaterThan(0);
      for (const rule of rules) expect(rule.from?.length, 'every database ingress rule names its sources').toBeGreaterThan(0);
      const portsOf = (rule: (typeof rules)[number]) => (rule.ports ?? [{ protocol: 'TCP', port: 'any' }]).map((p) => `${p.protocol ?? 'TCP'}/${p.port}`).sort();
      const inNamespace = (labels: Record<string, string>) =>
        rules.filter((rule) => rule.from!.some((peer) => !peer.ipBlock && !peer.namespaceSelector && selects(peer.podSelector, labels)));
      const admitted = [...new Set(workloads.map(({ template }) => template.metadata!.labels!))].filter((labels) => inNamespace(labels).length > 0);
      expect(admitted.map((labels) => labels[COMPONENT]).sort()).toEqual(['migrate', 'state']);
      for (const labels of admitted) expect(inNamespace(labels).flatMap(portsOf), `${labels[COMPONENT]} reaches PostgreSQL only`).toEqual(['TCP/5432']);
      // Streaming replication and the instance managers talk instance to instance.
      expect(inNamespace(instance).flatMap(portsOf)).toContain('TCP/any');
      // The operator, from its own namespace: the instance manager (8000) and PostgreSQL.
      const fromOtherNamespaces = rules.filter((rule) => rule.from!.some((peer) => peer.ipBlock || peer.namespaceSelector));
      expect(fromOtherNamespaces).toHaveLength(1);
      const [operator] = fromOtherNamespaces[0]!.from!;
      expect(fromOtherNamespaces[0]!.from).toHaveLength(1);
      expect(operator!.ipBlock).toBeUndefined();
      expect(selects(operator!.namespaceSelector, { 'kubernetes.io/metadata.name': 'cnpg-system' })).toBe(true);
      expect(selects(operator!.podSelector, { 'app.kubernetes.io/name': 'cloudnative-pg' })).toBe(true);
      expect(portsOf(fromOtherNamespaces[0]!)).toEqual(['TCP/5432', 'TCP/8000']);
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
      expect(autoscaler.spec!.maxReplicas).toBeGreaterThan(autoscaler.spec!.minReplicas!);
      const cpu = autoscaler.spec!.metrics?.find((m) => m.resource?.name === 'cpu');
      expect(cpu?.resource?.target.averageUtilization, `${name} CPU target`).toBeGreaterThan(0);
      expect(containerOf(target).resources?.requests?.['cpu'], `${name} has the CPU request utilisation is measured against`).toBeDefined();
    }
  });

  it('runs each service at its replica floor: admission 3, execution 3, events 2, state 2', () => {
    for (const service of SERVICES) expect(replicaFloorOf(service), `${service} replica floor`).toBe(REPLICA_FLOOR[service]);
  });

  it('lets a drain evict one pod of each service at a time, never the last one', () => {
    for (const service of SERVICES) {
      const labels = deploymentOf(service).spec!.template.metadata?.labels;
      const governing = budgets.filter((b) => selects(b.spec!.selector, labels));
      expect(governing, `${service} has one PodDisruptionBudget`).toHaveLength(1);
      const { maxUnavailable, minAvailable } = governing[0]!.spec!;
      const floor = REPLICA_FLOOR[service];
      // Pods a drain may take at once when the service runs at its floor; a percentage is refused here.
      const evictable = typeof maxUnavailable === 'number' ? maxUnavailable : typeof minAvailable === 'number' ? floor - minAvailable : Number.NaN;
      expect(evictable, `${service} pods evictable at once`).toBe(1);
      expect(floor - evictable, `${service} pods left during a drain`).toBeGreaterThanOrEqual(1);
    }
  });

  describe('the database (CloudNativePG)', () => {
    it('acknowledges a commit only once a standby has flushed it, even with no standby left', () => {
      const { spec } = databaseCluster();
      const synchronous = spec.postgresql?.synchronous;
      expect(synchronous?.method, 'quorum synchronous replication').toBe('any');
      expect(synchronous?.number).toBeGreaterThanOrEqual(1);
      // `preferred`, or the deprecated min/maxSyncReplicas, turn replication asynchronous when standbys are missing.
      expect(synchronous?.dataDurability).toBe('required');
      expect([spec.minSyncReplicas, spec.maxSyncReplicas]).toEqual([undefined, undefined]);
      const parameters = spec.postgresql?.parameters ?? {};
      expect([undefined, 'on', 'remote_apply'], 'synchronous_commit waits for the standby’s flush').toContain(parameters['synchronous_commit']);
      expect([undefined, 'on'], 'fsync').toContain(parameters['fsync']);
    });

    it('keeps a standby to spare, promotes only a standby that holds every acknowledged commit, and spreads instances over nodes', () => {
      const { spec } = databaseCluster();
      // One standby may be drained or lost while enough others still acknowledge: writes go on.
      expect(spec.instances - 1, 'standbys').toBeGreaterThan(spec.postgresql!.synchronous!.number);
      expect(spec.postgresql?.synchronous?.failoverQuorum, 'failoverQuorum').toBe(true);
      expect(spec.enablePDB, 'the operator’s PodDisruptionBudgets').not.toBe(false);
      expect(spec.affinity?.enablePodAntiAffinity).not.toBe(false);
      expect(spec.affinity?.podAntiAffinityType).toBe('required');
    });
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
