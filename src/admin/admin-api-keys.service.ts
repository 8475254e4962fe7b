import { Injectable } from '@nestjs/common';
import { ApiKeysService, ApiKeyView } from '../auth/api-keys.service';
import { AppError } from '../common/app-error';
import { Database } from '../database/database';
import { AuditLogService } from './audit-log.service';

export type IssuedKeyView = ApiKeyView & { key: string };

/** Key administration: each change and its audit entry commit together. */
@Injectable()
export class AdminApiKeysService {
  constructor(
    private readonly db: Database,
    private readonly apiKeys: ApiKeysService,
    private readonly audit: AuditLogService,
  ) {}

  create(input: { source: string; name?: string; expiresAt?: string }, remoteAddress: string): Promise<IssuedKeyView> {
    const expiresAt = input.expiresAt ? new Date(input.expiresAt) : null;
    if (expiresAt && expiresAt <= new Date()) {
      throw AppError.validation([{ field: 'expiresAt', message: 'must be in the future' }]);
    }
    return this.db.transaction(async (tx) => {
      const { row, key } = await this.apiKeys.issue(tx, { source: input.source, name: input.name, expiresAt });
      await this.audit.record(tx, { action: 'api_key.created', keyId: row.id, source: row.source, remoteAddress });
      return { ...ApiKeysService.view(row), key };
    });
  }

  async list(source?: string): Promise<ApiKeyView[]> {
    return (await this.apiKeys.list(source)).map(ApiKeysService.view);
  }

  async get(id: string): Promise<ApiKeyView> {
    return ApiKeysService.view(await this.apiKeys.get(id));
  }

  revoke(id: string, remoteAddress: string): Promise<ApiKeyView> {
    return this.db.transaction(async (tx) => {
      const key = await this.apiKeys.revoke(tx, id);
      await this.audit.record(tx, { action: 'api_key.revoked', keyId: key.id, source: key.source, remoteAddress });
      return ApiKeysService.view(key);
    });
  }

  rotate(id: string, graceSeconds: number, remoteAddress: string): Promise<IssuedKeyView> {
    return this.db.transaction(async (tx) => {
      const { old, issued } = await this.apiKeys.rotate(tx, id, graceSeconds);
      await this.audit.record(tx, { action: 'api_key.rotated', keyId: old.id, source: old.source, remoteAddress });
      await this.audit.record(tx, { action: 'api_key.created', keyId: issued.row.id, source: old.source, remoteAddress });
      return { ...ApiKeysService.view(issued.row), key: issued.key };
    });
  }
}
