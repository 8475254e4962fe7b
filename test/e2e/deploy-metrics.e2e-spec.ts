import { exposedMetrics, usedMetrics } from '../deploy/monitoring.js';
import { startTestApp, TestApp } from '../support/test-app.js';

const METRICS_TOKEN = 'a-metrics-token-as-in-the-secret';

/**
 * The alerts (deploy/kubernetes/monitoring/prometheusrule.yaml) and the Grafana dashboard query only
 * metrics that a running gateway offers at /metrics, scraped the way the ServiceMonitor scrapes it.
 */
describe('deployment monitoring against a running gateway', () => {
  let t: TestApp;

  beforeAll(async () => {
    // As deployed with more than one instance: the shared rate limit's gauge exists only with REDIS_URL.
    t = await startTestApp({ env: { METRICS_TOKEN, REDIS_URL: `redis://127.0.0.1:${process.env.TEST_REDIS_PORT ?? 6379}` } });
  });
  afterAll(() => t.close());

  it('is scraped with the bearer token from the Secret, and refuses a scrape without it', async () => {
    expect((await t.app.inject({ method: 'GET', url: '/metrics' })).statusCode).toBe(401);
    const res = await t.app.inject({ method: 'GET', url: '/metrics', headers: { authorization: `Bearer ${METRICS_TOKEN}` } });
    expect(res.statusCode).toBe(200);
  });

  it('exports every metric the alerts and the dashboard use', async () => {
    // A request of each kind the panels show, so that labelled series exist as well as their TYPE lines.
    await t.app.inject({ method: 'GET', url: '/health/ready' });
    const res = await t.app.inject({ method: 'GET', url: '/metrics', headers: { authorization: `Bearer ${METRICS_TOKEN}` } });
    const exposed = exposedMetrics(res.body);
    const missing = [...usedMetrics()].filter(([name]) => !exposed.has(name)).map(([name, where]) => `${name} (used by ${where.join(', ')})`);
    // Names listed here are used by an alert or a panel and not offered by this gateway's /metrics.
    expect({ missingFromMetrics: missing }).toEqual({ missingFromMetrics: [] });
  });
});
