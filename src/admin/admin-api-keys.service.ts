import { Injectable } from '@nestjs/common';
import { ApiKeysService, ApiKeyView } from '../auth/api-keys.service.js';
import { AppError } from '../common/app-error.js';
import { AuditContext } from './admin-actor.js';
import { AuditLogService } from './audit-log.service.js';
import { Transactions } from '../database/transaction.js';

export type IssuedKeyView = ApiKeyView & { key: string };

/** Key administration: each change and its audit entry commit together. */
@Injectable()
export class AdminApiKeysService {
  constructor(
    private readonly transactions: Transactions,
    private readonly apiKeys: ApiKeysService,
    private readonly audit: AuditLogService,
  ) {}

  create(context: AuditContext, input: { source: string; name?: string; expiresAt?: string }): Promise<IssuedKeyView> {
    const expiresAt = input.expiresAt ? new Date(input.expiresAt) : null;
    if (expiresAt && expiresAt <= new Date()) {
      throw AppError.validation([{ field: 'expiresAt', message: 'must be in the future' }]);
    }
    return this.transactions.managed(async (tx) => {
      const { row, key } = await this.apiKeys.issue(tx, { source: input.source, name: input.name, expiresAt });
      await this.audit.record(tx, context, { action: 'api_key.created', target: { type: 'api_key', id: row.id }, source: row.source });
      return { ...ApiKeysService.view(row), key };
    });
  }

  async page(filter: { source?: string; cursor?: string }, limit: number): Promise<{ data: ApiKeyView[]; nextCursor: string | null }> {
    const { rows, nextCursor } = await this.apiKeys.page(filter, limit);
    return { data: rows.map(ApiKeysService.view), nextCursor };
  }

  async get(id: string): Promise<ApiKeyView> {
    return ApiKeysService.view(await this.apiKeys.get(id));
  }

  revoke(context: AuditContext, id: string): Promise<ApiKeyView> {
    return this.transactions.managed(async (tx) => {
      const key = await this.apiKeys.revoke(tx, id);
      await this.audit.record(tx, context, { action: 'api_key.revoked', target: { type: 'api_key', id: key.id }, source: key.source });
      return ApiKeysService.view(key);
    });
  }

  rotate(context: AuditContext, id: string, graceSeconds: number): Promise<IssuedKeyView> {
    return this.transactions.managed(async (tx) => {
      const { old, issued } = await this.apiKeys.rotate(tx, id, graceSeconds);
      await this.audit.record(tx, context, { action: 'api_key.rotated', target: { type: 'api_key', id: old.id }, source: old.source });
      await this.audit.record(tx, context, { action: 'api_key.created', target: { type: 'api_key', id: issued.row.id }, source: old.source });
      return { ...ApiKeysService.view(issued.row), key: issued.key };
    });
  }
}
