// The overview: what needs a look now, and two stacked bar charts drawn as SVG by the page from the
// gateway's own per-bucket figures (no charting library, nothing to build, nothing the CSP must allow).
import { api, handleFailure, withQuery } from './api.js';
import { $, clock, el, formatTime, hide, showAlert, svg } from './dom.js';
import { countOf } from './operations.js';

const WIDTH = 960;
const HEIGHT = 220;
const MARGIN = { top: 12, right: 8, bottom: 24, left: 40 };
const TICK_MINUTES = [5, 10, 15, 30, 60, 120, 180, 360, 720, 1440];

// A failed attempt that was tried again is "Retried", not "Failed": a delivery that succeeded on a retry
// would otherwise read as a failure. "Failed" is only the last attempt of a delivery that gave up.
const DELIVERY_SERIES = [
  { key: 'succeeded', label: 'Succeeded' },
  { key: 'retried', label: 'Retried' },
  { key: 'failed', label: 'Failed' },
];
const BANK_SERIES = [
  { key: 'applied', label: 'Applied' },
  { key: 'unmatched', label: 'Unmatched' },
  { key: 'ambiguous', label: 'Ambiguous' },
  { key: 'ignored', label: 'Ignored' },
  { key: 'duplicate', label: 'Duplicate' },
];

/** A step of 1, 2 or 5 times a power of ten, so that about four gridlines cover `max` in whole numbers. */
function gridStep(max) {
  const rough = max / 4;
  if (rough <= 1) return 1;
  const magnitude = 10 ** Math.floor(Math.log10(rough));
  return [1, 2, 5, 10].map((m) => m * magnitude).find((step) => step >= rough);
}

function describe(values, series) {
  return series
    .filter((s) => values[s.key])
    .map((s) => `${values[s.key]} ${s.label.toLowerCase()}`)
    .join(', ');
}

/**
 * Draws `buckets` ({ at, <series key>: count }) as stacked bars over the last `hours`, one slot per bucket
 * of `bucketMinutes` whether it had anything or not, so that gaps in the traffic show as gaps.
 */
function barChart({ container, buckets, bucketMinutes, hours, series, what }) {
  const bucketMs = bucketMinutes * 60_000;
  const totals = Object.fromEntries(series.map((s) => [s.key, 0]));
  for (const bucket of buckets) for (const s of series) totals[s.key] += bucket[s.key] ?? 0;
  const legend = el(
    'ul',
    { class: 'legend' },
    series.map((s) =>
      el(
        'li',
        { 'data-series': s.key },
        el('span', { class: `swatch swatch-${s.key}`, 'aria-hidden': 'true' }),
        `${s.label} `,
        el('strong', {}, String(totals[s.key])),
      ),
    ),
  );
  const period = hours === 1 ? 'the last hour' : `the last ${hours} hours`;
  if (buckets.length === 0) {
    container.replaceChildren(el('p', { class: 'empty', 'data-testid': 'chart-empty' }, `No ${what} in ${period}.`));
    return;
  }

  const now = Date.now();
  const indexOf = (time) => Math.floor(time / bucketMs);
  // The browser's clock and the gateway's may differ a little: the range stretches to every bucket it sent.
  const times = buckets.map((b) => Date.parse(b.at));
  const first = Math.min(indexOf(now - hours * 3_600_000), ...times.map(indexOf));
  const last = Math.max(indexOf(now), ...times.map(indexOf));
  const slots = last - first + 1;
  const plotWidth = WIDTH - MARGIN.left - MARGIN.right;
  const plotHeight = HEIGHT - MARGIN.top - MARGIN.bottom;
  const slotWidth = plotWidth / slots;
  const barWidth = slotWidth >= 3 ? slotWidth * 0.8 : slotWidth;
  const highest = Math.max(1, ...buckets.map((b) => series.reduce((sum, s) => sum + (b[s.key] ?? 0), 0)));
  const step = gridStep(highest);
  const top = Math.ceil(highest / step) * step;
  const y = (value) => MARGIN.top + plotHeight - (value / top) * plotHeight;
  const xOf = (time) => MARGIN.left + (time / bucketMs - first) * slotWidth;

  const grid = [];
  for (let value = 0; value <= top; value += step) {
    grid.push(
      svg('line', { class: value === 0 ? 'axis' : 'grid', x1: MARGIN.left, x2: WIDTH - MARGIN.right, y1: y(value), y2: y(value) }),
      svg('text', { class: 'axis-label', x: MARGIN.left - 6, y: y(value) + 4, 'text-anchor': 'end' }, String(value)),
    );
  }

  const tickMinutes = TICK_MINUTES.find((m) => m >= (hours * 60) / 6) ?? 1440;
  const tickMs = tickMinutes * 60_000;
  const ticks = [];
  for (let time = Math.ceil((first * bucketMs) / tickMs) * tickMs; time <= (last + 1) * bucketMs; time += tickMs) {
    const x = xOf(time);
    ticks.push(
      svg('line', { class: 'tick', x1: x, x2: x, y1: MARGIN.top + plotHeight, y2: MARGIN.top + plotHeight + 4 }),
      svg('text', { class: 'axis-label', x, y: HEIGHT - 6, 'text-anchor': 'middle' }, clock(new Date(time))),
    );
  }

  const bars = buckets.map((bucket) => {
    const at = Date.parse(bucket.at);
    const x = xOf(at) + (slotWidth - barWidth) / 2;
    let base = 0;
    const rects = [];
    for (const s of series) {
      const value = bucket[s.key] ?? 0;
      if (!value) continue;
      rects.push(
        svg('rect', {
          class: `bar bar-${s.key}`,
          'data-series': s.key,
          'data-value': value,
          x,
          width: barWidth,
          y: y(base + value),
          height: y(base) - y(base + value),
        }),
      );
      base += value;
    }
    return svg('g', { class: 'bucket', 'data-at': bucket.at }, svg('title', {}, `${formatTime(bucket.at)}: ${describe(bucket, series)}`), rects);
  });

  const summary = `${what[0].toUpperCase()}${what.slice(1)} in ${period}, per ${bucketMinutes === 1 ? 'minute' : `${bucketMinutes} minutes`}: ${describe(totals, series) || 'none'}.`;
  const chart = svg(
    'svg',
    { class: 'chart-svg', viewBox: `0 0 ${WIDTH} ${HEIGHT}`, role: 'img', 'aria-label': summary, 'data-testid': 'chart-svg' },
    svg('title', {}, summary),
    grid,
    ticks,
    bars,
  );
  container.replaceChildren(chart, legend);
}

function bucketCaption(bucketMinutes) {
  return `Per ${bucketMinutes === 1 ? 'minute' : `${bucketMinutes} minutes`}, times in UTC`;
}

function showTile(id, count) {
  $(`${id}-value`).textContent = count;
  $(id).classList.toggle('tile-alert', count !== '0');
}

export async function loadOverview() {
  const hours = Number($('chart-hours').value);
  try {
    const [attention, ambiguous, deliveries, bank] = await Promise.all([
      countOf('/admin/outbound-deliveries?attention=true'),
      countOf('/admin/webhook-events?status=ambiguous'),
      api('GET', withQuery('/admin/stats/outbound-deliveries', { hours })),
      api('GET', withQuery('/admin/stats/webhook-events', { hours })),
    ]);
    hide($('overview-alert'));
    showTile('tile-attention', attention);
    showTile('tile-ambiguous', ambiguous);
    $('chart-deliveries-caption').textContent = bucketCaption(deliveries.bucketMinutes);
    $('chart-bank-caption').textContent = bucketCaption(bank.bucketMinutes);
    barChart({
      container: $('chart-deliveries'),
      buckets: deliveries.data,
      bucketMinutes: deliveries.bucketMinutes,
      hours,
      series: DELIVERY_SERIES,
      what: 'push attempts',
    });
    barChart({ container: $('chart-bank'), buckets: bank.data, bucketMinutes: bank.bucketMinutes, hours, series: BANK_SERIES, what: 'bank webhook events' });
  } catch (error) {
    handleFailure(error, (message) => showAlert($('overview-alert'), `The overview could not be loaded: ${message}`));
  }
}

$('chart-hours').addEventListener('change', loadOverview);

export function resetOverview() {
  for (const id of ['chart-deliveries', 'chart-bank', 'chart-deliveries-caption', 'chart-bank-caption']) $(id).replaceChildren();
  for (const id of ['tile-attention', 'tile-ambiguous']) {
    $(`${id}-value`).textContent = '–';
    $(id).classList.remove('tile-alert');
  }
}
