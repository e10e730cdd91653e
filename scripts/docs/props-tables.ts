/**
 * The tables of `docs/deploying.md` written from the declarations themselves: every `AgentScheduler` prop with its
 * default (the `@default` of its doc comment in `infra/scheduler-props.ts`) and, for a number, its bounds (the
 * settings contract, `functions/domain/settings.ts`); then the contract's two tables of the props that reach the
 * functions, with the environment variable that carries each and the functions that read it.
 */
import { readFileSync } from 'node:fs';
import ts from 'typescript';
import {
  type Bounds,
  type NumberSetting,
  OLDEST_MESSAGE_ALARM_AGE,
  SETTINGS,
  TEXT_SETTINGS,
  type TextSetting,
  THROTTLE_BOUNDS,
  THROTTLE_PROPS,
} from '../../functions/domain/settings';

const PROPS_FILE = new URL('../../infra/scheduler-props.ts', import.meta.url);

/** A prop of `AgentSchedulerProps` as its declaration writes it. */
interface DeclaredProp {
  readonly name: string;
  readonly optional: boolean;
  readonly type: string;
  readonly doc: string;
  readonly default: string | undefined;
}

/** One line of text, safe in a table cell: whitespace collapsed, pipes escaped. */
function cell(text: string): string {
  return text.replace(/\s+/g, ' ').trim().replaceAll('|', '\\|');
}

function number(n: number): string {
  return n.toLocaleString('en-US');
}

/** The props of `AgentSchedulerProps`, in the order of their declaration, read from its source. */
export function declaredProps(): DeclaredProp[] {
  const source = ts.createSourceFile(
    'scheduler-props.ts',
    readFileSync(PROPS_FILE, 'utf8'),
    ts.ScriptTarget.Latest,
    true,
  );
  const props = source.statements.find(
    (s): s is ts.InterfaceDeclaration =>
      ts.isInterfaceDeclaration(s) && s.name.text === 'AgentSchedulerProps',
  );
  if (!props) throw new Error('AgentSchedulerProps is not declared in infra/scheduler-props.ts');
  return props.members.filter(ts.isPropertySignature).map((member) => {
    const docs = ts.getJSDocCommentsAndTags(member).filter(ts.isJSDoc);
    const doc = docs.map((d) => ts.getTextOfJSDocComment(d.comment) ?? '').join(' ');
    const defaultTag = ts.getJSDocTags(member).find((tag) => tag.tagName.text === 'default');
    return {
      name: member.name.getText(source),
      optional: member.questionToken !== undefined,
      type: member.type?.getText(source) ?? 'unknown',
      doc,
      default: defaultTag ? (ts.getTextOfJSDocComment(defaultTag.comment) ?? '') : undefined,
    };
  });
}

/** Bounds as a person reads them: "1 to 86,400 s". */
function boundsOf(s: Bounds & { readonly unit: NumberSetting['unit'] }): string {
  const unit = s.unit === 'count' ? '' : ` ${s.unit === 'seconds' ? 's' : '/s'}`;
  return `${number(s.min)} to ${number(s.max)}${unit}`;
}

/** The bounds the settings declaration gives a prop, or its nested fields (`starvation.promoteAfter`). */
function propBounds(name: string): string {
  if ((THROTTLE_PROPS as readonly string[]).includes(name)) {
    const rate = boundsOf({ ...THROTTLE_BOUNDS.rateLimit, unit: 'per second' });
    const burst = boundsOf({ ...THROTTLE_BOUNDS.burstLimit, unit: 'count' });
    return `\`rateLimit\` ${rate}; \`burstLimit\` ${burst}`;
  }
  if (name === OLDEST_MESSAGE_ALARM_AGE.prop)
    return boundsOf({ ...OLDEST_MESSAGE_ALARM_AGE, unit: 'seconds' });
  const settings: NumberSetting[] = Object.values(SETTINGS);
  const own = settings.find((s) => s.prop === name);
  if (own) return boundsOf(own);
  const nested = settings.filter((s) => s.prop.startsWith(`${name}.`));
  return nested.length === 0
    ? ''
    : nested.map((s) => `\`${s.prop.slice(name.length + 1)}\` ${boundsOf(s)}`).join('; ');
}

/** Every prop of the construct: its type, default, bounds and what it does. */
export function everyPropTable(): string {
  const rows = declaredProps().map((p) => {
    const fallback = p.optional ? '' : 'required';
    const shown = p.default?.replace(/^- /, '') ?? fallback;
    return `| \`${p.name}\` | \`${cell(p.type)}\` | ${cell(shown)} | ${cell(propBounds(p.name))} | ${cell(p.doc)} |`;
  });
  return [
    '| prop | type | default | bounds | what it does |',
    '|------|------|---------|--------|--------------|',
    ...rows,
  ].join('\n');
}

/** The props that reach the functions as numbers: the environment variable, default, bounds and readers of each. */
export function settingsTable(): string {
  const rows = Object.values(SETTINGS).map((s: NumberSetting) => {
    const unit = s.unit === 'count' ? '' : ` ${s.unit === 'seconds' ? 's' : '/s'}`;
    return `| \`${s.prop}\` | \`${s.env}\` | ${number(s.default)}${unit} | ${boundsOf(s)} | ${s.readBy} | ${s.meaning} |`;
  });
  return [
    '| prop | environment variable | default | bounds | read by | what it does |',
    '|------|----------------------|---------|--------|---------|--------------|',
    ...rows,
  ].join('\n');
}

/** The props that reach the functions as text. */
export function textSettingsTable(): string {
  const rows = Object.values(TEXT_SETTINGS).map(
    (s: TextSetting) => `| \`${s.prop}\` | \`${s.env}\` | ${s.carriedAs} | ${s.readBy} | ${s.meaning} |`,
  );
  return [
    '| prop | environment variable | carried as | read by | what the functions do with it |',
    '|------|----------------------|------------|---------|-------------------------------|',
    ...rows,
  ].join('\n');
}

/** The section between `<!-- generated:props -->` markers of `docs/deploying.md`. */
export function propsSection(): string {
  return [
    'Written by `npm run docs` from `infra/scheduler-props.ts` (each prop, its type, its `@default`) and the settings',
    'declaration `functions/domain/settings.ts` (bounds); a test fails when this page differs from what it writes. The',
    'construct refuses a number out of its bounds at synth, and the functions refuse it too at a cold start.',
    '',
    everyPropTable(),
    '',
    'The props that reach the functions, each declared once with the environment variable that carries it and the',
    'functions that read it: the construct builds each function’s environment from that declaration, and the',
    'functions read it by the same names.',
    '',
    settingsTable(),
    '',
    textSettingsTable(),
  ].join('\n');
}
