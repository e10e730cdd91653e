/**
 * Modal dialogs (`<dialog>` with `showModal()`): a heading stating the action, its consequence, and the buttons
 * "Confirm" and "Keep as is" (Escape keeps as is too). Focus goes back to the button that opened it, found again
 * by its `data-key` if a refresh replaced it meanwhile.
 */
import { type Child, el, focusByKey, uniqueId } from './dom';
import { isAbort } from './http';

export interface DialogSpec {
  /** The action as a question: "Pause queue emails?". */
  readonly title: string;
  /** What it will do. */
  readonly text: string;
  /** The control that opened the dialog. */
  readonly trigger: HTMLElement;
}

/** Asks before an action; resolves true on "Confirm", once the dialog is closed. */
export function confirmAction(spec: DialogSpec): Promise<boolean> {
  return openDialog(spec, [], async () => undefined);
}

/**
 * A form in a dialog: `submit` runs on "Confirm" with the form; while it throws, the dialog stays open with the
 * error's message in it. Resolves true once `submit` succeeded.
 */
export function formDialog(
  spec: DialogSpec & {
    readonly fields: readonly Child[];
    readonly submit: (form: HTMLFormElement) => Promise<void>;
  },
): Promise<boolean> {
  return openDialog(spec, spec.fields, spec.submit);
}

function openDialog(
  spec: DialogSpec,
  fields: readonly Child[],
  submit: (form: HTMLFormElement) => Promise<void>,
): Promise<boolean> {
  const titleId = uniqueId('dialog-title');
  const textId = uniqueId('dialog-text');
  const confirm = el('button', { type: 'submit', class: 'primary' }, 'Confirm');
  const keep = el('button', { type: 'button', class: 'secondary' }, 'Keep as is');
  // Without fields, the safe answer has focus; with fields, the first field has it.
  if (fields.length === 0) keep.autofocus = true;
  const error = el('p', { class: 'form-error', role: 'alert' });
  const form = el(
    'form',
    { method: 'dialog' },
    el('h2', { id: titleId }, spec.title),
    el('p', { id: textId }, spec.text),
    ...fields,
    error,
    el('div', { class: 'actions' }, confirm, keep),
  );
  const dialog = el('dialog', { 'aria-labelledby': titleId, 'aria-describedby': textId }, form);
  const key = spec.trigger.dataset.key;
  document.body.append(dialog);

  return new Promise((resolve) => {
    let confirmed = false;
    /** A submit under way: the dialog stays until it settles, so its outcome is never lost to a close. */
    let busy = false;
    keep.addEventListener('click', () => {
      if (!busy) dialog.close();
    });
    // Escape: kept as is, unless the action is already under way.
    dialog.addEventListener('cancel', (event) => {
      if (busy) event.preventDefault();
    });
    form.addEventListener('submit', async (event) => {
      event.preventDefault();
      if (busy) return;
      busy = true;
      confirm.setAttribute('aria-disabled', 'true');
      keep.setAttribute('aria-disabled', 'true');
      error.textContent = '';
      try {
        await submit(form);
        confirmed = true;
      } catch (caught) {
        if (!isAbort(caught))
          error.textContent = caught instanceof Error ? caught.message : 'That did not work.';
        else confirmed = false;
        busy = false;
        confirm.removeAttribute('aria-disabled');
        keep.removeAttribute('aria-disabled');
        if (isAbort(caught)) dialog.close();
        return;
      }
      busy = false;
      dialog.close();
    });
    dialog.addEventListener('close', () => {
      dialog.remove();
      focusByKey(key, spec.trigger);
      resolve(confirmed);
    });
    dialog.showModal();
  });
}

/** Closes every open dialog (the session ended under it). */
export function closeDialogs(): void {
  for (const dialog of document.querySelectorAll('dialog')) dialog.close();
}
