import { Client } from 'pg';
import { SchedulerRegistry } from '@nestjs/schedule';
import { requestFingerprint } from '../../src/idempotency/fingerprint.js';
import { IDEMPOTENCY_PURGE_JOB, IdempotencyService } from '../../src/idempotency/idempotency.service.js';
import {
  cancelDocument,
  documentBody,
  IssuedKey,
  newIdempotencyKey,
  newSourceWithKey,
  postDocument,
  sendWebhook,
  signedWebhook,
} from '../support/factories.js';
import { holdDocumentInsert } from '../support/database.js';
import { waitFor } from '../support/processes.js';
import { startTestApp, TestApp, TEST_WEBHOOK_SECRET } from '../support/test-app.js';

describe('idempotency', () => {
  let t: TestApp;
  let db: Client;
  let acme: IssuedKey;

  const countDocuments = async (source: string) => Number((await db.query('SELECT count(*) FROM documents WHERE source = $1', [source])).rows[0].count);
  const records = async (source: string, key: string) =>
    (await db.query('SELECT * FROM idempotency_records WHERE source = $1 AND idempotency_key = $2', [source, key])).rows;

  beforeAll(async () => {
    t = await startTestApp();
    db = t.db;
    acme = await newSourceWithKey(t.app);
  });
  afterAll(() => t.close());

  describe('the X-Idempotency-Key header', () => {
    it('is required on every POST: 422 VALIDATION_ERROR naming the header, nothing created', async () => {
      const res = await postDocument(t.app, acme.key, documentBody(acme.source), null);
      expect(res.statusCode).toBe(422);
      expect(res.json()).toMatchObject({
        code: 'VALIDATION_ERROR',
        detail: 'X-Idempotency-Key header is required',
        errors: [{ field: 'X-Idempotency-Key', message: 'is required' }],
      });
      expect(await countDocuments(acme.source)).toBe(0);
    });

    it.each(['short77', 'x'.repeat(129), 'has space1', 'sla/sh-key', 'ümlaut-key', 'semi;colon'])(
      'must match [a-zA-Z0-9._:-]{8,128}: %p is 422',
      async (key) => {
        const res = await postDocument(t.app, acme.key, documentBody(acme.source), key);
        expect(res.statusCode).toBe(422);
        expect(res.json().errors[0].field).toBe('X-Idempotency-Key');
        expect(await countDocuments(acme.source)).toBe(0);
      },
    );

    it.each(['abcdefgh', 'A.b_c:d-0', 'k'.repeat(128)])('accepts %p', async (key) => {
      expect((await postDocument(t.app, acme.key, documentBody(acme.source), key)).statusCode).toBe(201);
    });

    it('comes after the API key check: no key, no idempotency key and unparseable JSON is a 401', async () => {
      for (const payload of ['{}', '{bad']) {
        const res = await t.app.inject({ method: 'POST', url: '/api/v1/documents', headers: { 'content-type': 'application/json' }, payload });
        expect(res.statusCode).toBe(401);
      }
    });

    it('comes before the body is looked at, even unparseable JSON; a bad body with a good key is then a 422 naming the body', async () => {
      const withoutKey = await postDocument(t.app, acme.key, '{bad', null);
      expect(withoutKey.json().errors).toEqual([{ field: 'X-Idempotency-Key', message: 'is required' }]);
      const key = newIdempotencyKey();
      const bad = await postDocument(t.app, acme.key, '{bad', key);
      expect(bad.statusCode).toBe(422);
      expect(bad.json()).toMatchObject({ detail: 'The request body is not valid JSON', errors: [{ field: 'body', message: 'is not valid JSON' }] });
      expect(await records(acme.source, key)).toHaveLength(0);
      expect((await postDocument(t.app, acme.key, documentBody(acme.source), key)).statusCode).toBe(201);
      // Garbage under a used key is another request, not a replay.
      expect((await postDocument(t.app, acme.key, '{bad', key)).json().code).toBe('IDEMPOTENCY_KEY_REUSED');
    });

    it('comes before body validation: a bad body without a key is about the key', async () => {
      const res = await postDocument(t.app, acme.key, { nonsense: true }, null);
      expect(res.json().errors).toEqual([{ field: 'X-Idempotency-Key', message: 'is required' }]);
    });
  });

  describe('replay', () => {
    it('returns the original status, body and Location with Idempotent-Replayed, and performs nothing again', async () => {
      const key = newIdempotencyKey();
      const body = documentBody(acme.source);
      const first = await postDocument(t.app, acme.key, body, key);
      expect(first.statusCode).toBe(201);
      expect(first.headers['idempotent-replayed']).toBeUndefined();
      const before = await countDocuments(acme.source);
      for (let i = 0; i < 3; i++) {
        const again = await postDocument(t.app, acme.key, body, key);
        expect(again.statusCode).toBe(201);
        expect(again.body).toBe(first.body);
        expect(again.headers.location).toBe(first.headers.location);
        expect(again.headers['idempotent-replayed']).toBe('true');
        expect(again.headers['content-type']).toBe(first.headers['content-type']);
        expect(again.headers['x-request-id']).not.toBe(first.headers['x-request-id']);
      }
      expect(await countDocuments(acme.source)).toBe(before);
      const events = await db.query('SELECT count(*) FROM document_events WHERE document_id = $1', [first.json().id]);
      expect(Number(events.rows[0].count)).toBe(1);
    });

    it('treats the same JSON value with other key order and whitespace as the same request', async () => {
      const key = newIdempotencyKey();
      const body = documentBody(acme.source);
      const first = await postDocument(t.app, acme.key, JSON.stringify(body), key);
      const reordered = `{\n  ${Object.entries(body)
        .reverse()
        .map(([k, v]) => `"${k}" :  ${JSON.stringify(v)}`)
        .join(',\n  ')}\n}`;
      const again = await postDocument(t.app, acme.key, reordered, key);
      expect(again.statusCode).toBe(201);
      expect(again.headers['idempotent-replayed']).toBe('true');
      expect(again.json().id).toBe(first.json().id);
    });

    it('answers 422 IDEMPOTENCY_KEY_REUSED for another body, path or method with the same key', async () => {
      const key = newIdempotencyKey();
      const body = documentBody(acme.source);
      const first = (await postDocument(t.app, acme.key, body, key)).json();
      const before = await countDocuments(acme.source);
      const otherBody = await postDocument(t.app, acme.key, { ...body, totalAmount: '120.00' }, key);
      expect(otherBody.statusCode).toBe(422);
      expect(otherBody.json().code).toBe('IDEMPOTENCY_KEY_REUSED');
      const otherPath = await cancelDocument(t.app, acme.key, first.id, key);
      expect(otherPath.statusCode).toBe(422);
      expect(otherPath.json().code).toBe('IDEMPOTENCY_KEY_REUSED');
      expect(await countDocuments(acme.source)).toBe(before);
      expect((await t.app.inject({ method: 'GET', url: `/api/v1/documents/${first.id}`, headers: { 'x-api-key': acme.key } })).json().status).toBe(
        'PENDING_PAYMENT',
      );
    });

    it('scopes keys by source: two sources may use the same key value independently', async () => {
      const other = await newSourceWithKey(t.app);
      const key = newIdempotencyKey();
      const a = await postDocument(t.app, acme.key, documentBody(acme.source), key);
      const b = await postDocument(t.app, other.key, documentBody(other.source), key);
      expect([a.statusCode, b.statusCode]).toEqual([201, 201]);
      expect(b.headers['idempotent-replayed']).toBeUndefined();
      expect(b.json().id).not.toBe(a.json().id);
    });
  });

  describe('what is stored', () => {
    it('stores a 409 DUPLICATE_DOCUMENT and replays it byte for byte', async () => {
      const body = documentBody(acme.source);
      await postDocument(t.app, acme.key, body);
      const key = newIdempotencyKey();
      const refused = await postDocument(t.app, acme.key, body, key);
      expect(refused.statusCode).toBe(409);
      const replayed = await postDocument(t.app, acme.key, body, key);
      expect(replayed.statusCode).toBe(409);
      expect(replayed.headers['idempotent-replayed']).toBe('true');
      expect(replayed.headers['content-type']).toMatch(/^application\/problem\+json/);
      expect(replayed.body).toBe(refused.body);
    });

    it('stores a 404 and a 409 INVALID_STATE_TRANSITION of cancel', async () => {
      const missing = '00000000-0000-4000-8000-000000000000';
      const key = newIdempotencyKey();
      expect((await cancelDocument(t.app, acme.key, missing, key)).statusCode).toBe(404);
      const replayed = await cancelDocument(t.app, acme.key, missing, key);
      expect([replayed.statusCode, replayed.headers['idempotent-replayed']]).toEqual([404, 'true']);

      const doc = (await postDocument(t.app, acme.key, documentBody(acme.source))).json();
      await db.query(`UPDATE documents SET status = 'PAID' WHERE id = $1`, [doc.id]);
      const cancelKey = newIdempotencyKey();
      expect((await cancelDocument(t.app, acme.key, doc.id, cancelKey)).statusCode).toBe(409);
      await db.query(`UPDATE documents SET status = 'PENDING_PAYMENT' WHERE id = $1`, [doc.id]);
      // The stored refusal is the answer for this key, even though a cancel would now succeed.
      const again = await cancelDocument(t.app, acme.key, doc.id, cancelKey);
      expect([again.statusCode, again.json().code]).toEqual([409, 'INVALID_STATE_TRANSITION']);
    });

    it('does not store 422 validation failures or 401s: the key stays free for a corrected retry', async () => {
      const key = newIdempotencyKey();
      const body = documentBody(acme.source);
      expect((await postDocument(t.app, acme.key, { ...body, currency: 'euro' }, key)).statusCode).toBe(422);
      expect(await records(acme.source, key)).toHaveLength(0);
      const other = await newSourceWithKey(t.app);
      expect((await postDocument(t.app, acme.key, { ...body, source: other.source }, key)).statusCode).toBe(401);
      expect(await records(acme.source, key)).toHaveLength(0);
      const fixed = await postDocument(t.app, acme.key, body, key);
      expect(fixed.statusCode).toBe(201);
      expect(fixed.headers['idempotent-replayed']).toBeUndefined();
    });

    it('does not store a 500: the whole operation rolls back and the key stays free', async () => {
      // The event insert is the operation's last write: failing there proves the document rolls back too.
      await db.query(`CREATE OR REPLACE FUNCTION fail_on_boom() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN IF (SELECT external_id FROM documents WHERE id = NEW.document_id) = 'BOOM' THEN RAISE EXCEPTION 'boom'; END IF; RETURN NEW; END $$`);
      await db.query(`CREATE TRIGGER fail_on_boom AFTER INSERT ON document_events FOR EACH ROW EXECUTE FUNCTION fail_on_boom()`);
      const key = newIdempotencyKey();
      const body = documentBody(acme.source, { externalId: 'BOOM' });
      try {
        const failed = await postDocument(t.app, acme.key, body, key);
        expect(failed.statusCode).toBe(500);
        expect(failed.json().code).toBe('INTERNAL_ERROR');
        expect(failed.body).not.toContain('boom');
        expect((await db.query(`SELECT count(*) FROM documents WHERE external_id = 'BOOM'`)).rows[0].count).toBe('0');
        expect(await records(acme.source, key)).toHaveLength(0);
      } finally {
        await db.query(`DROP TRIGGER fail_on_boom ON document_events`);
      }
      const retried = await postDocument(t.app, acme.key, body, key);
      expect(retried.statusCode).toBe(201);
      expect(retried.headers['idempotent-replayed']).toBeUndefined();
    });
  });

  describe('lifetime', () => {
    it('stores each record with its own expiry of IDEMPOTENCY_TTL_SECONDS', async () => {
      const key = newIdempotencyKey();
      await postDocument(t.app, acme.key, documentBody(acme.source), key);
      const [record] = await records(acme.source, key);
      const lifetime = (record.expires_at.getTime() - record.created_at.getTime()) / 1000;
      expect(lifetime).toBeCloseTo(86400, 0);
    });

    it('counts an expired key as new, and the purge job removes expired records only', async () => {
      // The purge runs when this test says so, not also on its own schedule in between.
      t.app.get(SchedulerRegistry).deleteInterval(IDEMPOTENCY_PURGE_JOB);
      const key = newIdempotencyKey();
      const first = await postDocument(t.app, acme.key, documentBody(acme.source), key);
      await db.query(`UPDATE idempotency_records SET expires_at = now() - interval '1 second' WHERE idempotency_key = $1`, [key]);
      const fresh = await postDocument(t.app, acme.key, documentBody(acme.source), key);
      expect(fresh.statusCode).toBe(201);
      expect(fresh.headers['idempotent-replayed']).toBeUndefined();
      expect(fresh.json().id).not.toBe(first.json().id);

      const expiredKey = newIdempotencyKey();
      await postDocument(t.app, acme.key, documentBody(acme.source), expiredKey);
      await db.query(`UPDATE idempotency_records SET expires_at = now() - interval '1 second' WHERE idempotency_key = $1`, [expiredKey]);
      const purged = await t.app.get(IdempotencyService).purgeExpired(1);
      expect(purged).toBeGreaterThanOrEqual(1);
      expect(await records(acme.source, expiredKey)).toHaveLength(0);
      expect(await records(acme.source, key)).toHaveLength(1);
    });
  });

  describe('a duplicate while the first is still running', () => {
    it('gets 409 IDEMPOTENCY_KEY_IN_USE with Retry-After: 1, then the replay once the first is done', async () => {
      // An instance that waits for a lock as long as this test holds it, however slow the machine.
      const patient = await startTestApp({ databaseUrl: t.databaseUrl, env: { DB_LOCK_TIMEOUT_MS: '120000' } });
      const source = await newSourceWithKey(patient.app);
      const holder = new Client({ connectionString: t.databaseUrl });
      await holder.connect();
      // Hold the providerReference's lock: the first request blocks inside its transaction, claim held.
      const providerReference = `PAY-held-${newIdempotencyKey()}`;
      await holder.query('SELECT pg_advisory_lock(7340217, hashtext($1))', [providerReference]);
      try {
        const key = newIdempotencyKey();
        const body = documentBody(source.source, { providerReference });
        const first = postDocument(patient.app, source.key, body, key);
        await waitFor(
          async () =>
            (
              await holder.query(
                `SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND NOT granted AND classid = 7340217 AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`,
              )
            ).rowCount === 1,
          'the first request to wait for the lock',
        );
        const duplicate = await postDocument(patient.app, source.key, body, key);
        expect(duplicate.statusCode).toBe(409);
        expect(duplicate.json().code).toBe('IDEMPOTENCY_KEY_IN_USE');
        expect(duplicate.headers['retry-after']).toBe('1');
        await holder.query('SELECT pg_advisory_unlock(7340217, hashtext($1))', [providerReference]);
        expect((await first).statusCode).toBe(201);
        const after = await postDocument(patient.app, source.key, body, key);
        expect([after.statusCode, after.headers['idempotent-replayed']]).toEqual([201, 'true']);
      } finally {
        await holder.end();
        await patient.close();
      }
    });

    it('is replayed, with nothing of its own committed, when the key is answered between its look and its store', async () => {
      // The claim is taken without a second look at the key's record: an answer committed after the look
      // (here by hand, while the request holds the claim and waits for its providerReference's lock) makes
      // the request's store fail, and the request is looked at anew.
      const patient = await startTestApp({ databaseUrl: t.databaseUrl, env: { DB_LOCK_TIMEOUT_MS: '120000' } });
      const source = await newSourceWithKey(patient.app);
      const holder = new Client({ connectionString: t.databaseUrl });
      await holder.connect();
      const providerReference = `PAY-answered-${newIdempotencyKey()}`;
      await holder.query('SELECT pg_advisory_lock(7340217, hashtext($1))', [providerReference]);
      try {
        const key = newIdempotencyKey();
        const body = documentBody(source.source, { providerReference });
        const pending = postDocument(patient.app, source.key, body, key);
        await waitFor(
          async () =>
            (
              await holder.query(
                `SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND NOT granted AND classid = 7340217 AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`,
              )
            ).rowCount === 1,
          'the request to wait for the lock, its claim held',
        );
        const earlier = JSON.stringify({ answeredBy: 'another request' });
        await holder.query(
          `INSERT INTO idempotency_records (source, idempotency_key, fingerprint, response_status, response_body, expires_at) VALUES ($1, $2, $3, 201, $4, now() + interval '1 day')`,
          [source.source, key, requestFingerprint('POST', '/api/v1/documents', body), earlier],
        );
        await holder.query('SELECT pg_advisory_unlock(7340217, hashtext($1))', [providerReference]);
        const answer = await pending;
        expect([answer.statusCode, answer.headers['idempotent-replayed'], answer.body]).toEqual([201, 'true', earlier]);
        expect(
          (await db.query('SELECT count(*)::int AS n FROM documents WHERE source = $1 AND external_id = $2', [source.source, body.externalId])).rows[0].n,
        ).toBe(0);
      } finally {
        await holder.end();
        await patient.close();
      }
    });

    it('gets its 409 at once even when the first has written its document and not committed it', async () => {
      const source = await newSourceWithKey(t.app);
      const body = documentBody(source.source);
      // The first request's (source, externalId) entry is written, not committed: the duplicate's document
      // statement, sent with its claim, would wait for it unless it wrote nothing without the claim.
      const hold = await holdDocumentInsert(db, t.databaseUrl, body.externalId as string);
      try {
        const key = newIdempotencyKey();
        const first = postDocument(t.app, source.key, body, key);
        await hold.held();
        const duplicate = await postDocument(t.app, source.key, body, key);
        expect([duplicate.statusCode, duplicate.json().code]).toEqual([409, 'IDEMPOTENCY_KEY_IN_USE']);
        await hold.release();
        expect((await first).statusCode).toBe(201);
        expect(await countDocuments(source.source)).toBe(1);
      } finally {
        await hold.remove();
      }
    });
  });

  describe('an answer known in advance (a create: one round trip)', () => {
    it("is stored byte for byte as sent, with the transaction's time where the document's times go", async () => {
      const key = newIdempotencyKey();
      const created = await postDocument(t.app, acme.key, documentBody(acme.source, { metadata: { b: '1', aa: '2', '10': '3', '2': '4' } }), key);
      expect(created.statusCode).toBe(201);
      const [record] = await records(acme.source, key);
      expect([record.response_status, record.response_body, record.response_location]).toEqual([201, created.body, created.headers.location]);
      const [row] = (await db.query('SELECT id, created_at, updated_at FROM documents WHERE id = $1', [created.json().id])).rows;
      expect(created.json()).toMatchObject({ createdAt: row.created_at.toISOString(), updatedAt: row.updated_at.toISOString() });
      expect(created.headers.location).toBe(`/api/v1/documents/${row.id}`);
    });

    it('leaves nothing when the work must go the general way, which then stores its own answer, on connections no create has used', async () => {
      // A new pool, whose connections no create has used.
      const fresh = await startTestApp({ databaseUrl: t.databaseUrl, env: { DB_POOL_SIZE: '2' } });
      try {
        const providerReference = `PAY-adv-${newIdempotencyKey()}`;
        const event = { eventId: `evt-${newIdempotencyKey()}`, eventType: 'PAYMENT_STATUS', status: 'PAID', providerReference };
        expect((await sendWebhook(fresh.app, signedWebhook(TEST_WEBHOOK_SECRET, event))).statusCode).toBe(200);
        const key = newIdempotencyKey();
        const created = await postDocument(fresh.app, acme.key, documentBody(acme.source, { providerReference }), key);
        expect([created.statusCode, created.json().status]).toEqual([201, 'PAID']);
        const [record] = await records(acme.source, key);
        expect([record.response_status, record.response_body]).toEqual([201, created.body]);
        // The refusal of a duplicate goes the same way, and is stored.
        const duplicateKey = newIdempotencyKey();
        const duplicate = await postDocument(fresh.app, acme.key, documentBody(acme.source, { providerReference }), duplicateKey);
        expect([duplicate.statusCode, duplicate.json().code]).toEqual([409, 'DUPLICATE_DOCUMENT']);
        expect((await records(acme.source, duplicateKey)).map((r) => [r.response_status, r.response_body])).toEqual([[409, duplicate.body]]);
      } finally {
        await fresh.close();
      }
    });
  });

  describe('concurrency', () => {
    const expectExactlyOnce = async (answers: Array<{ statusCode: number; headers: Record<string, unknown>; json: () => { id?: string } }>, source: string) => {
      const originals = answers.filter((a) => a.statusCode === 201 && a.headers['idempotent-replayed'] === undefined);
      const replays = answers.filter((a) => a.statusCode === 201 && a.headers['idempotent-replayed'] === 'true');
      const inUse = answers.filter((a) => a.statusCode === 409);
      expect(originals).toHaveLength(1);
      expect(replays.length + inUse.length).toBe(answers.length - 1);
      for (const r of replays) expect(r.json().id).toBe(originals[0].json().id);
      for (const c of inUse) expect((c.json() as { code?: string }).code).toBe('IDEMPOTENCY_KEY_IN_USE');
      expect(await countDocuments(source)).toBe(1);
    };

    it('50 parallel identical requests create one document; every answer is the 201, its replay, or a 409', async () => {
      const source = await newSourceWithKey(t.app);
      const key = newIdempotencyKey();
      const body = documentBody(source.source);
      const answers = await Promise.all(Array.from({ length: 50 }, () => postDocument(t.app, source.key, body, key)));
      await expectExactlyOnce(answers, source.source);
    });

    it('gives concurrent retries of a finished request the replay, never a 409', async () => {
      const source = await newSourceWithKey(t.app);
      const key = newIdempotencyKey();
      const body = documentBody(source.source);
      const first = await postDocument(t.app, source.key, body, key);
      const answers = await Promise.all(Array.from({ length: 30 }, () => postDocument(t.app, source.key, body, key)));
      for (const answer of answers) {
        expect([answer.statusCode, answer.headers['idempotent-replayed']]).toEqual([201, 'true']);
        expect(answer.body).toBe(first.body);
      }
    });

    it('the same split over two app instances on one database', async () => {
      const second = await startTestApp({ databaseUrl: t.databaseUrl });
      try {
        const source = await newSourceWithKey(t.app);
        const key = newIdempotencyKey();
        const body = documentBody(source.source);
        const answers = await Promise.all(Array.from({ length: 50 }, (_, i) => postDocument(i % 2 ? second.app : t.app, source.key, body, key)));
        await expectExactlyOnce(answers, source.source);
      } finally {
        await second.close();
      }
    });

    it('never shows a document without its stored response, or a response without its document', async () => {
      const source = await newSourceWithKey(t.app);
      let running = true;
      const mismatches: string[] = [];
      const watcher = (async () => {
        while (running) {
          // One statement, one snapshot: both counts describe the same moment.
          const { rows } = await db.query(
            `SELECT (SELECT count(*) FROM documents WHERE source = $1) AS documents,
                    (SELECT count(*) FROM idempotency_records WHERE source = $1 AND response_status = 201) AS responses`,
            [source.source],
          );
          if (rows[0].documents !== rows[0].responses) mismatches.push(JSON.stringify(rows[0]));
        }
      })();
      await Promise.all(Array.from({ length: 40 }, () => postDocument(t.app, source.key, documentBody(source.source))));
      running = false;
      await watcher;
      expect(mismatches).toEqual([]);
      expect(await countDocuments(source.source)).toBe(40);
    });
  });
});
