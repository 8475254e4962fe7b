import type { Pool } from 'pg';

export interface PoolCounts {
  /** Connections open, busy or idle. */
  total: number;
  idle: number;
  /** Callers waiting for a connection. */
  waiting: number;
  max: number;
}

/** pg-pool's own counters of TypeORM's pool, for the metrics; zero until the pool exists. */
export class PoolStatistics {
  private pool: Pool | null = null;

  constructor(private readonly max: number) {}

  observe(pool: Pool): void {
    this.pool = pool;
  }

  counts(): PoolCounts {
    return { total: this.pool?.totalCount ?? 0, idle: this.pool?.idleCount ?? 0, waiting: this.pool?.waitingCount ?? 0, max: this.max };
  }
}
