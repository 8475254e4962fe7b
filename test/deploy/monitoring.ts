import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parser } from '@prometheus-io/lezer-promql';
import { parseAllDocuments } from 'yaml';

const MONITORING = join(import.meta.dirname, '..', '..', 'deploy', 'kubernetes', 'monitoring');

export interface Expression {
  /** Where it is: the alert's name, or the dashboard panel's title. */
  where: string;
  expr: string;
}

/** Every alert's and recording rule's expression of the PrometheusRule. */
export function alertExpressions(): Expression[] {
  const [rule] = parseAllDocuments(readFileSync(join(MONITORING, 'prometheusrule.yaml'), 'utf8')).map((d) => d.toJS());
  return (rule.spec.groups as { rules: { alert?: string; record?: string; expr: string }[] }[]).flatMap((group) =>
    group.rules.map((r) => ({ where: `alert ${r.alert ?? r.record}`, expr: r.expr })),
  );
}

export interface DashboardPanel {
  id: number;
  type: string;
  title: string;
  gridPos: { h: number; w: number; x: number; y: number };
  datasource?: { type: string; uid: string };
  targets?: { refId: string; expr: string }[];
}

export function dashboard(): { uid: string; title: string; panels: DashboardPanel[]; templating: { list: { name: string }[] } } {
  return JSON.parse(readFileSync(join(MONITORING, 'dashboards', 'tax-document-gateway.json'), 'utf8'));
}

/** Every query of the dashboard, Grafana's variables replaced by what Prometheus would be sent. */
export function dashboardExpressions(): Expression[] {
  return dashboard()
    .panels.filter((p) => p.type !== 'row')
    .flatMap((p) => (p.targets ?? []).map((t) => ({ where: `panel "${p.title}"`, expr: t.expr.replace(/\$__rate_interval|\$__interval/g, '1m') })));
}

/**
 * The metric names a PromQL expression selects, from the expression's syntax tree (Prometheus's own
 * grammar); throws when it does not parse. Histogram series (`_bucket`, `_sum`, `_count`) count as theirs.
 */
export function metricNames(expr: string): string[] {
  const tree = parser.parse(expr);
  const names: string[] = [];
  let error: number | null = null;
  tree.iterate({
    enter(node) {
      if (node.type.isError && error === null) error = node.from;
      if (node.name === 'VectorSelector') {
        const identifier = node.node.getChild('Identifier');
        if (identifier) names.push(expr.slice(identifier.from, identifier.to));
      }
    },
  });
  if (error !== null) throw new Error(`PromQL does not parse at ${error as number}: ${expr.slice(0, error)} <here> ${expr.slice(error)}`);
  return [...new Set(names)];
}

export const usedMetrics = (): Map<string, string[]> => {
  const used = new Map<string, string[]>();
  for (const { where, expr } of [...alertExpressions(), ...dashboardExpressions()]) {
    for (const name of metricNames(expr)) used.set(name, [...(used.get(name) ?? []), where]);
  }
  return used;
};

/** The metrics /metrics offers, read from its text: every TYPE line, and histograms' series. */
export function exposedMetrics(text: string): Set<string> {
  const names = new Set<string>();
  for (const [, name, type] of text.matchAll(/^# TYPE (\S+) (\S+)$/gm)) {
    names.add(name);
    if (type === 'histogram') for (const suffix of ['_bucket', '_sum', '_count']) names.add(name + suffix);
  }
  for (const [, name] of text.matchAll(/^([a-zA-Z_:][a-zA-Z0-9_:]*)[{ ]/gm)) names.add(name);
  return names;
}
