/**
 * How a schema of the API is held to the SDK's type of the same record (`sdk/types.ts`, the one declaration of
 * the wire): `answers<Sdk.Task>()(schema)` for what the API answers, `accepts<Sdk.ClaimInput>()(schema)` for a
 * body it takes. The compiler refuses the call when the two differ: a field one has and the other lacks, a field
 * optional on one side only, or of another type. Types only: nothing of the SDK is loaded at run time.
 */
import type { z } from 'zod';

type Stripped<T> = { [K in keyof T as string extends K ? never : number extends K ? never : K]: T[K] };

/** The fields a type names, without the index signature of an open object (`looseObject`); a record keeps its. */
type Named<T> = [keyof Stripped<T>] extends [never] ? T : Stripped<T>;

type Flat<T> = { [K in keyof T]: T[K] };

/**
 * A record as JSON carries it: fields that may be undefined become optional, since JSON drops them; a field that
 * holds any JSON value (one that takes null, a boolean, a number and a string alike: `JsonValue`) is as unknown to
 * a client as one typed `unknown`; an open object's index signature goes.
 */
export type OnTheWire<T> = unknown extends T
  ? T
  : [null | boolean | number | string] extends [T]
    ? unknown
    : T extends readonly (infer E)[]
      ? readonly OnTheWire<E>[]
      : T extends object
        ? Flat<
            { [K in keyof Named<T> as undefined extends Named<T>[K] ? never : K]: OnTheWire<Named<T>[K]> } & {
              [K in keyof Named<T> as undefined extends Named<T>[K] ? K : never]?: OnTheWire<
                Exclude<Named<T>[K], undefined>
              >;
            }
          >
        : T;

/** The keys of fields of any type: JSON cannot say whether such a field is optional, so neither side does. */
type AnyKeys<T> = { [K in keyof T]-?: unknown extends T[K] ? K : never }[keyof T];

/** Readonly or not, the same record. */
type Plain<T> = unknown extends T
  ? T
  : T extends readonly (infer E)[]
    ? Plain<E>[]
    : T extends object
      ? Flat<
          { -readonly [K in keyof T as K extends AnyKeys<T> ? never : K]: Plain<T[K]> } & {
            -readonly [K in keyof T as K extends AnyKeys<T> ? K : never]-?: unknown;
          }
        >
      : T;

type SameKeys<A, B> = [keyof A] extends [keyof B] ? ([keyof B] extends [keyof A] ? true : false) : false;

/** The same field names at every depth: assignability alone lets a field optional on one side only pass. */
type SameNames<A, B> = [A] extends [readonly (infer E)[]]
  ? [B] extends [readonly (infer F)[]]
    ? SameNames<E, F>
    : false
  : [A] extends [object]
    ? [B] extends [object]
      ? SameKeys<A, B> extends true
        ? false extends {
            [K in keyof A & keyof B]-?: SameNames<NonNullable<A[K]>, NonNullable<B[K]>>;
          }[keyof A & keyof B]
          ? false
          : true
        : false
      : false
    : true;

/**
 * True only when each type is assignable to the other and both name the same fields at every depth: the same
 * fields, optional alike, of the same types.
 */
export type Same<A, B> = [Plain<A>] extends [Plain<B>]
  ? [Plain<B>] extends [Plain<A>]
    ? SameNames<Plain<A>, Plain<B>>
    : false
  : false;

/** No argument when the two agree; otherwise one the call cannot give, named for what is wrong. */
type Agreeing<A, B> = Same<A, B> extends true ? [] : [differsFromTheSdkType: B];

/** A response schema whose output is the SDK's `T`. */
export const answers =
  <T>() =>
  <S extends z.ZodType>(schema: S, ..._check: Agreeing<OnTheWire<z.output<S>>, T>): S =>
    schema;

/** A request schema that takes what the SDK sends as `T`, and nothing the SDK does not know of. */
export const accepts =
  <T>() =>
  <S extends z.ZodType>(schema: S, ..._check: Agreeing<OnTheWire<z.input<S>>, T>): S =>
    schema;
