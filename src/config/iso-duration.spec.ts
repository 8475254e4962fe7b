import { addIsoDuration, longestSeconds, parseIsoDuration, shortestSeconds } from './iso-duration.js';

describe('parseIsoDuration', () => {
  it.each([
    ['P90D', { days: 90 }],
    ['PT12H', { hours: 12 }],
    ['PT1S', { seconds: 1 }],
    ['P2W', { weeks: 2 }],
    ['P1Y2M3DT4H5M6S', { years: 1, months: 2, days: 3, hours: 4, minutes: 5, seconds: 6 }],
    ['P1M', { months: 1 }],
    ['PT1M', { minutes: 1 }],
    ['P1DT12H', { days: 1, hours: 12 }],
    ['P0D', {}],
    ['P0400D', { days: 400 }],
  ])('reads %s', (text, parts) => {
    expect(parseIsoDuration(text)).toEqual({ years: 0, months: 0, weeks: 0, days: 0, hours: 0, minutes: 0, seconds: 0, ...parts });
  });

  it.each([
    ['', 'empty'],
    ['P', 'no part'],
    ['PT', 'no time part after T'],
    ['P1DT', 'T with nothing after it'],
    ['90D', 'no P'],
    ['p90d', 'lower case'],
    ['P90', 'a number without a unit'],
    ['P1.5D', 'a fraction (PostgreSQL would take it, spread over smaller units)'],
    ['P1,5D', 'a decimal comma'],
    ['P-1D', 'a negative part'],
    ['PT1H2D', 'a date part after T'],
    ['P1H', 'a time part before T'],
    ['P1D1Y', 'parts out of order'],
    ['P1D1D', 'a part twice'],
    [' P1D', 'surrounding space'],
    ['P1D ', 'trailing space'],
    ['P0001-02-03', 'the alternative format'],
    ['P12345678D', 'more than seven digits'],
    ['90 days', "PostgreSQL's own interval syntax"],
  ])('refuses %j (%s)', (text) => {
    expect(parseIsoDuration(text)).toBeNull();
  });
});

describe('shortestSeconds and longestSeconds', () => {
  const span = (text: string) => {
    const d = parseIsoDuration(text)!;
    return [shortestSeconds(d), longestSeconds(d)];
  };

  it('are exact for weeks, days and times', () => {
    expect(span('P90D')).toEqual([90 * 86400, 90 * 86400]);
    expect(span('P1W')).toEqual([7 * 86400, 7 * 86400]);
    expect(span('P1DT1H1M1S')).toEqual([90061, 90061]);
  });

  it('give months 28 to 31 days and years 365 to 366', () => {
    expect(span('P1M')).toEqual([28 * 86400, 31 * 86400]);
    expect(span('P1Y')).toEqual([365 * 86400, 366 * 86400]);
    expect(span('P1Y1M')).toEqual([393 * 86400, 397 * 86400]);
  });
});

describe('addIsoDuration', () => {
  it.each([
    ['P90D', '2026-12-02T13:00:00.000Z', '2027-03-02T13:00:00.000Z'],
    ['P1M', '2027-01-31T00:00:00.000Z', '2027-03-03T00:00:00.000Z'],
    ['P1Y', '2028-02-29T12:00:00.000Z', '2029-03-01T12:00:00.000Z'],
    ['P2W', '2026-12-25T00:00:00.000Z', '2027-01-08T00:00:00.000Z'],
    ['PT1H30M15S', '2026-12-31T23:00:00.000Z', '2027-01-01T00:30:15.000Z'],
  ])('adds %s to %s', (duration, from, to) => {
    expect(addIsoDuration(new Date(from), parseIsoDuration(duration)!).toISOString()).toBe(to);
  });
});
