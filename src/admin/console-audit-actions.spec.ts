import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { AUDIT_ACTIONS } from './audit-log.entity.js';

/**
 * The console is plain browser JavaScript without a build step, so it cannot import the entity's list of
 * audit actions and keeps its own copy for the audit log's filter; this keeps the two the same.
 */
describe('the console\u2019s audit actions', () => {
  it('are the audit log\u2019s actions, in the same order', () => {
    const source = readFileSync(join(import.meta.dirname, 'console', 'people.js'), 'utf8');
    const list = /const AUDIT_ACTIONS = \[([^\]]*)\]/.exec(source)?.[1] ?? '';
    expect([...list.matchAll(/'([^']+)'/g)].map((m) => m[1])).toEqual([...AUDIT_ACTIONS]);
  });
});
