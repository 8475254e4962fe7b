import { resolve } from 'node:path';
import { AppError } from '../common/app-error.js';
import { clusterIdOf, listRootClusters, mayRemove, removeRootCluster, RootCluster } from '../database/root-clusters.js';
import type { ClusterCommand } from './commands.js';
import { EXIT, ExitCode, UsageError } from './exit-codes.js';
import * as output from './output.js';
import type { Io } from './program.js';

export interface ClusterRun {
  json: boolean;
  io: Io;
  /** Asks a person a question and answers what they typed; null when nobody can be asked (stdin is not a terminal). */
  ask: ((question: string) => Promise<string>) | null;
}

const total = (clusters: RootCluster[]) => output.size(clusters.reduce((sum, c) => sum + c.bytes, 0));

/**
 * The one cluster that `named` names: its id, or a DATA_DIR it records or would have been made for (the id is
 * that path's hash, so a DATA_DIR deleted before the cluster recorded it is still found). Removed if it is
 * orphaned or unrecorded: naming it is the operator's say-so that --unrecorded stands for; never if it is in use.
 */
function namedCluster(clusters: RootCluster[], named: string, dir: string): RootCluster {
  const dataDir = resolve(named);
  const cluster = clusters.find((c) => c.id === named || c.dataDirs?.includes(dataDir) || c.id === clusterIdOf(dataDir));
  if (!cluster)
    throw new AppError(
      'NOT_FOUND',
      `No cluster in ${output.printable(dir)} has the id ${output.printable(named)} or belongs to the DATA_DIR ${output.printable(dataDir)}`,
    );
  if (cluster.state === 'linked') {
    throw new AppError(
      'INVALID_STATE_TRANSITION',
      `Cluster ${cluster.id} is in use: ${cluster.linkedFrom.map(output.printable).join(', ')} links to it. Delete that DATA_DIR first if it is not wanted`,
    );
  }
  if (cluster.state === 'running')
    throw new AppError('INVALID_STATE_TRANSITION', `Cluster ${cluster.id} is in use: its postmaster runs (pid ${cluster.postmasterPid})`);
  return cluster;
}

/**
 * `tdg clusters list` and `tdg clusters prune [cluster]`: the files under the clusters' directory, no database
 * (a leftover cluster is what an operator cleans up when no database runs). Prune removes only what may be
 * removed (see mayRemove), every such cluster or the one named, asks first unless told --yes, and reads each
 * cluster's state again just before removing it, so a cluster in use by then is kept.
 */
export async function runClusterCommand(command: ClusterCommand, { json, io, ask }: ClusterRun): Promise<ExitCode> {
  if (command.name === 'clusters list') {
    const clusters = await listRootClusters(command.dir);
    if (json) {
      io.out(`${JSON.stringify({ data: clusters }, null, 2)}\n`);
    } else {
      io.out(output.clustersTable(clusters, command.dir));
      for (const hint of output.clustersHints(clusters)) io.err(`${hint}\n`);
    }
    return EXIT.OK;
  }

  // Before anything is looked at: a script without --yes fails the same way whether or not there is something to remove.
  if (!command.yes && (json || !ask)) {
    throw new UsageError(
      'clusters prune asks before it removes anything, and there is no terminal to ask in: add --yes',
      [],
      "Run 'tdg clusters prune --help' for usage.",
    );
  }
  const clusters = await listRootClusters(command.dir);
  const candidates =
    command.cluster === undefined ? clusters.filter((c) => mayRemove(c.state, command)) : [namedCluster(clusters, command.cluster, command.dir)];
  const options = { unrecorded: command.unrecorded || command.cluster !== undefined };
  if (candidates.length === 0) {
    io.out(json ? `${JSON.stringify({ removed: [], kept: [] }, null, 2)}\n` : `Nothing to remove in ${output.printable(command.dir)}.\n`);
    return EXIT.OK;
  }
  if (!command.yes) {
    io.out(output.clustersTable(candidates, command.dir));
    const answer = await ask!(`Remove ${candidates.length === 1 ? 'this cluster' : `these ${candidates.length} clusters`} (${total(candidates)})? [y/N] `);
    if (!/^y(es)?$/i.test(answer.trim())) {
      io.err('Nothing removed.\n');
      return EXIT.OK;
    }
  }
  const removed: RootCluster[] = [];
  const kept: RootCluster[] = [];
  for (const cluster of candidates) {
    const { removed: gone, state } = await removeRootCluster(command.dir, cluster.id, options);
    (gone ? removed : kept).push({ ...cluster, state });
  }
  io.out(json ? `${JSON.stringify({ removed, kept }, null, 2)}\n` : output.clustersRemoved(removed, kept));
  return EXIT.OK;
}
