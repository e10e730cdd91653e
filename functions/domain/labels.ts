/**
 * Capability labels: what an agent offers beyond the queues it serves (`gpu: 'a100'`, `model: ['claude', 'gpt']`),
 * and what a task requires of the agent that runs it (`{ gpu: '*', model: 'claude' }`).
 *
 * - An operator gives an agent its labels when registering it; a session may narrow them (fewer names, fewer values)
 *   but never add to them, so an agent cannot take another tenant's work by claiming a label it was not given.
 * - A task's requirement names a label and a value the agent must have among the label's values, or `'*'`: any value.
 *   An agent meets a requirement set when it meets each of its requirements; the empty set is met by every agent.
 *
 * Tasks with requirements wait in lanes of their requirement set (see `#domain/lanes`), so work no agent of a claim can
 * serve is a turn or two in line for it, however many tasks wait behind the turn.
 */
import { createHash } from 'node:crypto';
import { z } from 'zod';

export const LABEL_BOUNDS = {
  /** Labels one agent may have. */
  labels: 16,
  /** Values one label may have. */
  values: 16,
  /** Requirements one task may make. */
  requirements: 8,
  valueChars: 128,
} as const;

/** A label's name: letters, digits and `.` `_` `-` `:` `/`, starting with a letter or digit (1 to 64). */
export const LABEL_NAME_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._:/-]{0,63}$/;

/** What a requirement says when any value of the label will do. */
export const ANY_VALUE = '*';

/** An agent's labels, normalised: each name with its values, distinct and sorted. */
export type Labels = Readonly<Record<string, readonly string[]>>;

/** What a task requires: for each label name, a value the agent must have, or `'*'`. */
export type Requirements = Readonly<Record<string, string>>;

const labelNameSchema = z
  .string()
  .regex(LABEL_NAME_PATTERN, 'a label name is 1 to 64 letters, digits, ".", "_", "-", ":" or "/"');

/** A label's value: printable, and not `*`, which a requirement reads as "any". */
const labelValueSchema = z
  .string()
  .min(1)
  .max(LABEL_BOUNDS.valueChars)
  .regex(/^[^\p{Cc}\p{Cf}\p{Zl}\p{Zp}]+$/u, 'a label value of printable characters')
  .refine((value) => value !== ANY_VALUE, 'a label value cannot be "*"');

const atMost =
  (max: number) =>
  (record: Readonly<Record<string, unknown>>): boolean =>
    Object.keys(record).length <= max;

/**
 * A record's parse drops an own `__proto__` key (as `JSON.parse` makes it) without a word: an object with one is
 * given to the record's parse as one with a name no label may have, so that it is refused as any such name is.
 */
const noProtoKey = <T extends z.ZodType>(record: T): T =>
  // Typed as the record it checks: it takes and gives what the record does (its input is typed `unknown` otherwise).
  z.preprocess(
    (value) =>
      typeof value === 'object' && value !== null && Object.hasOwn(value, '__proto__')
        ? { '(__proto__)': '' }
        : value,
    record,
  ) as unknown as T;

/** Labels as an operator registers them (or a session narrows them): a value or a list of values for each name. */
export const labelsSchema = noProtoKey(
  z.record(
    labelNameSchema,
    z.union([labelValueSchema, z.array(labelValueSchema).min(1).max(LABEL_BOUNDS.values)]),
  ),
).refine(atMost(LABEL_BOUNDS.labels), `at most ${LABEL_BOUNDS.labels} labels`);

/** A task's requirements: a value, or `'*'`, for each label it needs (at least one: a task that needs none omits it). */
export const requirementsSchema = noProtoKey(
  z.record(labelNameSchema, z.union([z.literal(ANY_VALUE), labelValueSchema])),
)
  .refine((record) => Object.keys(record).length > 0, 'at least one label (omit it to require none)')
  .refine(atMost(LABEL_BOUNDS.requirements), `at most ${LABEL_BOUNDS.requirements} requirements`);

/** An agent's labels as registered: at least one (an agent without labels omits them). */
export const agentLabelsSchema = labelsSchema.refine(
  (record) => Object.keys(record).length > 0,
  'at least one label (omit it for none)',
);

/** Labels in their stored form: every value a list, without repeats, sorted; names sorted. */
export function normaliseLabels(input: Readonly<Record<string, string | readonly string[]>>): Labels {
  return Object.fromEntries(
    Object.keys(input)
      .sort()
      .map((name) => {
        const value = input[name] ?? [];
        return [name, [...new Set(typeof value === 'string' ? [value] : value)].sort()];
      }),
  );
}

/** Requirements in their stored form: names sorted (the set is the same however it was written). */
export const normaliseRequirements = (input: Requirements): Requirements =>
  Object.fromEntries(
    Object.keys(input)
      .sort()
      .map((name) => [name, input[name] as string]),
  );

/** Whether an agent with `labels` meets every requirement of `requirements`. */
export function meets(labels: Labels | undefined, requirements: Requirements | undefined): boolean {
  for (const [name, wanted] of Object.entries(requirements ?? {})) {
    const values = labels?.[name];
    if (!values || values.length === 0) return false;
    if (wanted !== ANY_VALUE && !values.includes(wanted)) return false;
  }
  return true;
}

/**
 * What a session's labels add to its agent's: the first name or value the agent was not given, or undefined when they
 * only narrow them.
 */
export function addedTo(agentLabels: Labels, sessionLabels: Labels): string | undefined {
  for (const [name, values] of Object.entries(sessionLabels)) {
    const given = agentLabels[name];
    if (!given) return name;
    const extra = values.find((value) => !given.includes(value));
    if (extra !== undefined) return `${name}=${extra}`;
  }
  return undefined;
}

/** Whether a task requires anything. */
export const requiresAny = (requirements: Requirements | undefined): requirements is Requirements =>
  requirements !== undefined && Object.keys(requirements).length > 0;

/**
 * A requirement set's name in keys and conditions: a hash of its canonical form (names sorted), so that the same set,
 * however it was written, has one name. The empty set (the queue alone) has one like any other.
 */
export function requirementsKey(requirements: Requirements): string {
  return createHash('sha256').update(canonicalRequirements(requirements)).digest('hex').slice(0, 16);
}

/** A requirement set as one text, the same however it was written: its pairs, names sorted, as JSON. */
export const canonicalRequirements = (requirements: Requirements): string =>
  JSON.stringify(
    Object.keys(requirements)
      .sort()
      .map((k) => [k, requirements[k]]),
  );
