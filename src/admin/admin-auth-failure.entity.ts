import { Column, Entity, PrimaryColumn } from 'typeorm';

/** Failed admin-token attempts per address and minute, shared by every instance. */
@Entity('admin_auth_failures')
export class AdminAuthFailureEntity {
  @PrimaryColumn({ name: 'remote_address', type: 'varchar', length: 64 })
  remoteAddress: string;

  @PrimaryColumn({ name: 'window_start', type: 'timestamptz' })
  windowStart: Date;

  @Column({ type: 'int' })
  failures: number;
}
