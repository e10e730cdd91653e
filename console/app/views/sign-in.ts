/** The sign-in form: the one-time code printed on the terminal where the console runs. */
import { api } from '../api';
import { el } from '../dom';
import { field, input } from '../fields';
import { messageOf } from '../status';

export function signInView(root: HTMLElement, signedIn: () => Promise<void>): void {
  const code = input('code', {
    autocomplete: 'off',
    autocapitalize: 'none',
    spellcheck: 'false',
    required: true,
    maxlength: 64,
  });
  const error = el('p', { class: 'form-error', role: 'alert' });
  const submit = el('button', { type: 'submit', class: 'primary' }, 'Sign in');
  const form = el('form', { class: 'sign-in' }, field('Login code', code), error, submit);
  let busy = false;

  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    if (busy) return;
    busy = true;
    submit.setAttribute('aria-disabled', 'true');
    error.textContent = '';
    try {
      await api.login(code.value.trim());
      await signedIn();
    } catch (caught) {
      error.textContent = messageOf(caught);
      code.select();
      code.focus();
    } finally {
      busy = false;
      submit.removeAttribute('aria-disabled');
    }
  });

  root.replaceChildren(
    el('h1', {}, 'Sign in'),
    el('p', {}, 'Enter the login code printed in the terminal where the console runs.'),
    form,
  );
}
