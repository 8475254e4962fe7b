/**
 * ISO 8601 durations in the designator form (`P90D`, `PT12H`, `P1Y2M`, `P2W`), whole numbers only. Kept this
 * strict on purpose: every value accepted here means the same to PostgreSQL's interval input, to which the
 * text is handed as it is (`$1::interval`), so the purge computes its cut-off with the database's clock and
 * calendar (a month is a calendar month there).
 */
export interface IsoDuration {
  years: number;
  months: number;
  weeks: number;
  days: number;
  hours: number;
  minutes: number;
  seconds: number;
}

const N = String.raw`(\d{1,7})`;
// P, then at least one date part or a T followed by at least one time part.
const PATTERN = new RegExp(`^P(?=\\d|T\\d)(?:${N}Y)?(?:${N}M)?(?:${N}W)?(?:${N}D)?(?:T(?=\\d)(?:${N}H)?(?:${N}M)?(?:${N}S)?)?$`);

/** The parts of `text`, or null when it is not a duration of this form. */
export function parseIsoDuration(text: string): IsoDuration | null {
  const match = PATTERN.exec(text);
  if (!match) return null;
  const [years, months, weeks, days, hours, minutes, seconds] = match.slice(1).map((part) => (part === undefined ? 0 : Number(part)));
  return { years, months, weeks, days, hours, minutes, seconds };
}

const DAY = 86400;

/** The shortest time the duration can span: a month as 28 days, a year as 365 (minimums are checked with it). */
export function shortestSeconds(d: IsoDuration): number {
  return ((d.years * 365 + d.months * 28 + d.weeks * 7 + d.days) * 24 + d.hours) * 3600 + d.minutes * 60 + d.seconds;
}

/** The longest: a month as 31 days, a year as 366. */
export function longestSeconds(d: IsoDuration): number {
  return shortestSeconds(d) + (d.years * 1 + d.months * 3) * DAY;
}

/** `from` plus the duration, calendar parts first (a month is a calendar month, as PostgreSQL counts it), in UTC. */
export function addIsoDuration(from: Date, d: IsoDuration): Date {
  const at = new Date(from);
  at.setUTCFullYear(at.getUTCFullYear() + d.years, at.getUTCMonth() + d.months, at.getUTCDate() + d.weeks * 7 + d.days);
  return new Date(at.getTime() + ((d.hours * 60 + d.minutes) * 60 + d.seconds) * 1000);
}
