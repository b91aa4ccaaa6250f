// Stop, resume and delete, as the job and experiment lists and pages offer them: a confirmation
// before a delete, a toast after every action, and buttons that the resource's state enables.
//
// A kind describes one resource: {call(id, action) -> Promise, can: {stop, resume, delete}
// (state -> bool), deleteText(item), doneText: {stop, resume} (item -> string)}.
import { h, toast, confirmDialog } from './dom.js';
import { mayChange, whyNot } from './api.js';

// Runs `action` on `item` ({id, name, state}) with feedback; resolves to the item after the
// action (null if deleted, undefined if cancelled or refused).
export async function runResourceAction(kind, item, action) {
  if (action === 'delete') {
    const ok = await confirmDialog(`Delete ${item.name}?`, kind.deleteText(item));
    if (!ok) return undefined;
  }
  try {
    const r = await kind.call(item.id, action);
    toast(action === 'delete' ? `Deleted ${item.name}` : kind.doneText[action](item));
    return action === 'delete' ? null : r;
  } catch (err) {
    toast(`Could not ${action} ${item.name}: ${err.message}`, 'error');
    return undefined;
  }
}

// The list row's buttons: stop and resume when the state allows them, delete always (disabled
// while it is not allowed, and all of them when this tab's user may not change the item: a
// viewer, or another user's). onDone(action, result) gets runResourceAction's result.
export function resourceButtons(kind, item, onDone) {
  const may = mayChange(item);
  const btn = (action, label, enabled, style) => h('button', {
    type: 'button', class: `btn btn-small ${style || ''}`, disabled: !enabled || !may,
    title: may ? undefined : whyNot(item),
    dataset: { action }, 'aria-label': `${label} ${item.name}`,
    onclick: async (ev) => {
      ev.currentTarget.disabled = true;
      onDone(action, await runResourceAction(kind, item, action));
    },
  }, label);
  return [
    kind.can.stop(item.state) && btn('stop', 'Stop', true),
    kind.can.resume(item.state) && btn('resume', 'Resume', true),
    btn('delete', 'Delete', kind.can.delete(item.state), 'btn-ghost-danger'),
  ];
}
