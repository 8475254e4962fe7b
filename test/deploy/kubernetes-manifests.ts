import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join, relative } from 'node:path';
import * as ts from 'typescript';
import { parseAllDocuments } from 'yaml';

export const ROOT = join(import.meta.dirname, '..', '..');
export const DEPLOY = join(ROOT, 'deploy');

export interface KubernetesObject {
  apiVersion: string;
  kind: string;
  metadata?: { name?: string; namespace?: string; labels?: Record<string, string>; annotations?: Record<string, string> };
  [field: string]: unknown;
}

export interface Manifest {
  /** `deploy/kubernetes/deployment.yaml#0`: the file and the document's index in it. */
  source: string;
  object: KubernetesObject;
}

export const KUSTOMIZATION = 'kustomize.config.k8s.io/v1beta1/Kustomization';
export const key = (o: { apiVersion: string; kind: string }) => `${o.apiVersion}/${o.kind}`;

/** Every YAML file under a directory, recursively. */
export function yamlFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return yamlFiles(path);
    return /\.ya?ml$/.test(name) ? [path] : [];
  });
}

/** Every document of every YAML file under deploy/ but docker compose's own, parsed (a YAML error throws). */
export function manifests(): Manifest[] {
  return yamlFiles(DEPLOY)
    .filter((file) => !relative(DEPLOY, file).startsWith('compose'))
    .flatMap((file) =>
      parseAllDocuments(readFileSync(file, 'utf8')).map((document, index) => {
        if (document.errors.length > 0) throw new Error(`${relative(ROOT, file)}#${index}: ${document.errors[0].message}`);
        return { source: `${relative(ROOT, file)}#${index}`, object: document.toJS() as KubernetesObject };
      }),
    );
}

/** Where the model (schema validator and TypeScript type) of each kind comes from. */
const MODEL_PACKAGES: Record<string, string> = {
  'monitoring.coreos.com': '@kubernetes-models/prometheus-operator',
  'postgresql.cnpg.io': '@kubernetes-models/cloudnative-pg',
};

function modelModule({ apiVersion, kind }: { apiVersion: string; kind: string }): string {
  const group = apiVersion.includes('/') ? apiVersion.split('/')[0] : '';
  return `${MODEL_PACKAGES[group] ?? 'kubernetes-models'}/${apiVersion}/${kind}`;
}

/**
 * Validates an object against its kind's schema (kubernetes-models: the Kubernetes OpenAPI schemas, the
 * prometheus-operator and CloudNativePG CRDs). Returns the problems, none when valid. Fields the schema
 * does not know are not among them: `unknownFields` finds those.
 */
export function schemaProblems(object: KubernetesObject): string[] {
  let Model: new (data: unknown) => { validate(): void };
  try {
    // Each kind's model is a module of its own, loaded by name.
    Model = createRequire(import.meta.url)(modelModule(object))[object.kind];
  } catch {
    return [`no model for ${key(object)}`];
  }
  if (typeof Model !== 'function') return [`no model for ${key(object)}`];
  try {
    new Model(object).validate();
    return [];
  } catch (error) {
    return [(error as Error).message];
  }
}

/**
 * Fields a kind does not have, as the API server's strict field validation (kubectl's default) would
 * refuse them: each object is type-checked as an object literal of its model's TypeScript interface,
 * whose excess-property check reaches every nested field. One compilation for all of them.
 */
export function unknownFields(objects: Manifest[]): string[] {
  const file = join(ROOT, 'test', 'deploy', '__manifests__.ts');
  const lines: string[] = [];
  const sources: string[] = [];
  objects.forEach(({ source, object }, i) => {
    lines.push(`import type { I${object.kind} as T${i} } from ${JSON.stringify(modelModule(object))};`);
    lines.push(`export const o${i}: T${i} = ${JSON.stringify(object, null, 1)};`);
    sources.push(source);
  });
  const text = lines.join('\n');
  const options: ts.CompilerOptions = {
    strict: true,
    noEmit: true,
    skipLibCheck: true,
    module: ts.ModuleKind.Node16,
    moduleResolution: ts.ModuleResolutionKind.Node16,
    target: ts.ScriptTarget.ES2022,
    types: [],
  };
  const host = ts.createCompilerHost(options);
  const getSourceFile = host.getSourceFile.bind(host);
  host.getSourceFile = (name, version, ...rest) => (name === file ? ts.createSourceFile(name, text, version) : getSourceFile(name, version, ...rest));
  const fileExists = host.fileExists.bind(host);
  host.fileExists = (name) => name === file || fileExists(name);
  const program = ts.createProgram([file], options, host);
  const sourceFile = program.getSourceFile(file)!;
  return ts.getPreEmitDiagnostics(program, sourceFile).map((diagnostic) => {
    const message = ts.flattenDiagnosticMessageText(diagnostic.messageText, ' ');
    if (diagnostic.start === undefined) return message;
    // Which object: the `export const oN` the error falls in.
    const before = text.slice(0, diagnostic.start);
    const index = Number(/^export const o(\d+)/.exec(before.slice(before.lastIndexOf('export const o')))?.[1]);
    return `${sources[index] ?? '?'}: ${message}`;
  });
}

/** `kubectl kustomize DIR` (kustomize built into kubectl), or null when kubectl is not installed. */
export function kustomizeBuild(dir: string): KubernetesObject[] | null {
  let output: string;
  try {
    output = execFileSync('kubectl', ['kustomize', dir], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw new Error(`kubectl kustomize ${relative(ROOT, dir)} failed: ${(error as { stderr?: string }).stderr ?? String(error)}`, { cause: error });
  }
  return parseAllDocuments(output).map((d) => d.toJS() as KubernetesObject);
}
