import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { EntityManager, Repository } from 'typeorm';
import { AuditAction, AuditLogEntity } from './audit-log.entity';

export interface AuditEntryView {
  id: string;
  action: AuditAction;
  keyId: string | null;
  source: string | null;
  remoteAddress: string;
  createdAt: string;
}

@Injectable()
export class AuditLogService {
  constructor(@InjectRepository(AuditLogEntity) private readonly entries: Repository<AuditLogEntity>) {}

  /** Written through the caller's transaction, so an entry exists exactly when its change does. */
  async record(manager: EntityManager, entry: { action: AuditAction; keyId: string; source: string; remoteAddress: string }): Promise<void> {
    await manager.insert(AuditLogEntity, entry);
  }

  async recent(limit: number): Promise<AuditEntryView[]> {
    const rows = await this.entries.find({ order: { id: 'DESC' }, take: limit });
    return rows.map((row) => ({
      id: row.id,
      action: row.action,
      keyId: row.keyId,
      source: row.source,
      remoteAddress: row.remoteAddress,
      createdAt: row.createdAt.toISOString(),
    }));
  }
}
