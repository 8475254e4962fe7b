import { Injectable } from '@nestjs/common';
import { AppError } from '../common/app-error.js';
import { asDatabaseUnavailable, DatabaseUnavailable } from '../common/database-failure.js';
import { DatabaseProbe } from './database-probe.js';

/**
 * Whether this instance should get traffic: not while it drains (from SIGTERM on, README "Operations"), and not
 * while its database does not answer.
 */
@Injectable()
export class Readiness {
  private draining = false;

  constructor(private readonly database: DatabaseProbe) {}

  /** From now on not ready, whatever the database says; requests already coming are still served. */
  drain(): void {
    this.draining = true;
  }

  /** Resolves when ready; otherwise throws the 503 that says why. */
  async check(): Promise<void> {
    if (this.draining) throw new AppError('SERVICE_UNAVAILABLE', 'This instance is shutting down; another one takes the requests');
    await this.database.ping().catch((error: unknown) => {
      const unavailable = asDatabaseUnavailable(error);
      throw unavailable instanceof DatabaseUnavailable ? unavailable : new AppError('SERVICE_UNAVAILABLE', 'The database did not answer the readiness check');
    });
  }

  async ready(): Promise<boolean> {
    return this.check().then(
      () => true,
      () => false,
    );
  }
}
