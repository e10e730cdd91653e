/** Labelled form controls: every input and select has a `<label for>`, and its hint is its description. */
import { type Attrs, el, uniqueId } from './dom';

type Control = HTMLInputElement | HTMLSelectElement | HTMLTextAreaElement;

/** Wraps `control` with its label and, if given, a hint read out as its description. */
export function field(label: string, control: Control, hint?: string): HTMLElement {
  control.id ||= uniqueId('field');
  const wrapper = el('div', { class: 'field' }, el('label', { for: control.id }, label), control);
  if (hint) {
    const hintId = uniqueId('hint');
    control.setAttribute('aria-describedby', hintId);
    wrapper.append(el('p', { id: hintId, class: 'hint' }, hint));
  }
  return wrapper;
}

export interface Option {
  readonly value: string;
  readonly label: string;
}

export function select(name: string, options: readonly Option[], selected = '', attrs: Attrs = {}) {
  const element = el('select', { name, ...attrs });
  setOptions(element, options, selected);
  return element;
}

/** Replaces the options of `element`, keeping `selected` chosen. */
export function setOptions(element: HTMLSelectElement, options: readonly Option[], selected: string): void {
  element.replaceChildren(
    ...options.map((option) =>
      el('option', { value: option.value, selected: option.value === selected }, option.label),
    ),
  );
  element.value = selected;
}

export const input = (name: string, attrs: Attrs = {}) => el('input', { name, type: 'text', ...attrs });

/** A form control's text by name, trimmed; '' when there is no such control. */
export function formValue(form: HTMLFormElement, name: string): string {
  const control = form.elements.namedItem(name);
  return control && 'value' in control ? String(control.value).trim() : '';
}
