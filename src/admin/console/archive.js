// The archive (docs/archive.md): how far sealing has come, the latest signed checkpoint, and what the last
// `tdg archive verify` run on the database found, read-only.
import { api, handleFailure } from './api.js';
import { $, el, hide, muted, showAlert, timeEl } from './dom.js';

function setTile(id, value, alert) {
  $(`${id}-value`).textContent = value;
  $(id).classList.toggle('tile-alert', alert);
}

function findingRow(finding) {
  return el(
    'tr',
    { 'data-testid': 'archive-finding' },
    el('td', {}, el('code', {}, finding.kind)),
    el('td', {}, finding.documentId ? el('code', {}, finding.documentId) : muted('—')),
    el('td', { class: 'numeric' }, finding.index === null ? muted('—') : String(finding.index)),
    el('td', {}, finding.detail),
  );
}

export async function loadArchive() {
  try {
    const status = await api('GET', '/admin/archive');
    hide($('archive-alert'));
    setTile('tile-archive-size', String(status.treeSize), false);
    setTile('tile-archive-lag', `${status.sealLagSeconds.toFixed(1)} s`, status.sealLagSeconds > 60);
    const verification = status.lastVerification;
    setTile('tile-archive-findings', verification ? String(verification.findingCount) : 'never run', verification ? verification.findingCount > 0 : false);
    $('archive-checkpoint').replaceChildren(
      status.checkpoint
        ? el(
            'div',
            {},
            el('p', {}, `Tree size ${status.checkpoint.treeSize}, signed `, timeEl(status.checkpoint.signedAt)),
            el('pre', { 'data-testid': 'archive-checkpoint-note' }, status.checkpoint.note),
          )
        : muted('No checkpoint yet: nothing has been sealed.'),
    );
    $('archive-verification').replaceChildren(
      verification
        ? el(
            'p',
            {},
            `${verification.treeSize} entries verified, finished `,
            timeEl(verification.finishedAt),
            `: ${verification.findingCount} finding${verification.findingCount === 1 ? '' : 's'}.`,
          )
        : muted('tdg archive verify has not been run on this database yet.'),
    );
    $('archive-findings').replaceChildren(...(verification?.findings ?? []).map(findingRow));
    $('archive-findings-card').hidden = !verification || verification.findingCount === 0;
  } catch (error) {
    handleFailure(error, (message) => showAlert($('archive-alert'), `The archive's state could not be loaded: ${message}`));
  }
}
